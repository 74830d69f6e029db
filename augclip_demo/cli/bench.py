"""``bench``: benchmarks, one subcommand each.

Each subcommand lives in a sibling module ``bench_<name>.py`` exposing ``register(subparsers)``
(like the top-level commands); adding one is adding its name to :data:`_SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib

_SUBCOMMANDS: list[str] = ["speed"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="benchmarks (" + ", ".join(_SUBCOMMANDS) + ")",
                                   description="Benchmarks of this tool.")
    sub = parser.add_subparsers(dest="bench_command", metavar="BENCHMARK", required=True)
    for name in _SUBCOMMANDS:
        importlib.import_module(f"{__package__}.bench_{name.replace('-', '_')}").register(sub)
