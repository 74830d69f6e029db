"""``explore``: start the web app with a batch results file open in its Explore tab."""

from __future__ import annotations

import argparse
import importlib

from ..errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explore", help="open batch results in the app's Explore tab (leaderboard, agreement, disagreements, items)",
        description="Start the web app with these results files listed in its Explore tab (the same as "
                    "`python app.py --explore-files RESULTS=MANIFEST`): a leaderboard per editing model, metric-metric "
                    "and metric-human agreement, disagreements, an item grid, slices and an HTML report. "
                    "See docs/explore.md.")
    parser.add_argument("results", nargs="+", metavar="RESULTS",
                        help="results of `batch`: a JSONL file, a .parquet file or a folder of Parquet parts")
    parser.add_argument("--manifest", action="append", metavar="MANIFEST.jsonl",
                        help="the run's manifest, for thumbnails, edit types and human judgments (once for all "
                             "results files, or once per file in order)")
    parser.add_argument("--host", metavar="ADDRESS", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, metavar="N", help="port to listen on (default 7860, or the next free one)")
    parser.set_defaults(func=run)


def explore_entries(results: list[str], manifests: list[str] | None) -> list[str]:
    """``RESULTS=MANIFEST`` entries for ``--explore-files`` (checked: the files exist, the counts fit)."""
    from ..explore.shelf import parse_entries

    manifests = manifests or []
    if len(manifests) not in (0, 1, len(results)):
        raise InputError(f"give one --manifest for all results files or one per results file, in order (got "
                         f"{len(manifests)} for {len(results)})")
    entries = []
    for position, path in enumerate(results):
        manifest = manifests[0] if len(manifests) == 1 else manifests[position] if manifests else None
        if "," in path or "=" in path or (manifest and "," in manifest):
            raise InputError(f"{path}: a results or manifest path with ',' or '=' cannot be listed; rename it")
        entries.append(path + (f"={manifest}" if manifest else ""))
    parse_entries(entries)
    return entries


def run(args: argparse.Namespace) -> int:
    argv = ["--explore-files", ",".join(explore_entries(args.results, args.manifest))]
    if args.host:
        argv += ["--host", args.host]
    if args.port:
        argv += ["--port", str(args.port)]
    # The app is started as `python app.py` starts it; imported on use (the command line does not import the
    # page's layer otherwise, and `augclip-demo score` never loads Gradio).
    return int(importlib.import_module("augclip_demo.ui.launch").main(argv))
