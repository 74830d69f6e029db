"""Command line: ``augclip-demo <command> ...`` (or ``python -m augclip_demo <command> ...``).

Each subcommand lives in its own module exposing ``register(subparsers)``; :data:`_COMMANDS` lists
them in help order. Building the parser imports every module, so a module's top imports only what
its arguments list (argparse, config.py, choices.py) and the model stack loads inside the function
that runs the command: ``--help`` answers at once (tests/cli/test_help.py). Errors meant for the
user (:class:`AugclipError`) exit with status 2 and one line on stderr; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import AugclipError
from .common import preflight
from .score import resolve_metric_defaults

_COMMANDS: list[str] = ["score", "attributes", "explain", "bpm", "batch", "hatie", "protocol", "study", "manifest", "triplets",
                       "world", "bench", "download", "doctor"]
_COMMANDS.insert(_COMMANDS.index("protocol") + 1, "explore")  # results in the app's Explore tab (after protocol in help)
_COMMANDS.insert(_COMMANDS.index("protocol") + 1, "agreement")  # metrics against human sets (after protocol in help)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="augclip-demo",  # the console script `pip install -e .` puts on the PATH (python -m augclip_demo too)
        description="AugCLIP Studio: score text-guided image edits with AugCLIP, CLIPdir, CLIP-I, CLIP-T and L2.",
    )
    parser.add_argument("--version", action="version", version=f"augclip-demo {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMANDS:
        importlib.import_module(f"{__name__}.{name.replace('-', '_')}").register(subparsers)
    return parser


#: commands that start the web server: its process settings are applied before the command modules import torch
_SERVER_COMMANDS = ("explore",)


def main(argv: Sequence[str] | None = None) -> int:
    words = [word for word in (sys.argv[1:] if argv is None else argv) if not word.startswith("-")]
    if words and words[0] in _SERVER_COMMANDS:
        from ..config import prepare_server_process

        prepare_server_process()
    parser = build_parser()
    args = parser.parse_args(argv)
    resolve_metric_defaults(args)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        # open_clip announces random initialisation through the root logger; the report says it.
        logging.getLogger().setLevel(logging.ERROR)
        # ...but our own warnings (an unreadable cache file that is being rewritten) stay visible.
        logging.getLogger("augclip_demo").setLevel(logging.WARNING)
    try:
        preflight(args)
        return int(args.func(args) or 0)
    except AugclipError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        # the checks before the work cannot see everything (root on a folder without write bits, a
        # mount that turns read-only, a full disk): the file and the reason, not a traceback (-v shows it)
        if args.verbose:
            raise
        where = f" {exc.filename}" if exc.filename else ""
        print(f"error: cannot read or write{where}: {exc.strerror or exc}. Check the paths given (--out, "
              "--csv, ...) and the free space; -v shows the details", file=sys.stderr)
        return 2
