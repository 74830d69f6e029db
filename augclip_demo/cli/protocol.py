"""``protocol``: the papers' evaluation protocols (s2AFC, AccBoth, rank and score correlations)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..choices import DEFAULT_AGREEMENT_SEED as DEFAULT_SEED
from ..choices import DEFAULT_BOOTSTRAP, DEFAULT_LEVEL


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "protocol", help="s2AFC, AccBoth, win shares, rank/score correlations from batch results",
        description="Compute, for every metric in the results, the protocols the human data and edit roles allow "
                    "(docs/batch.md#protocols), with bootstrap confidence intervals. Prints tables (metric x dataset) "
                    "and saves JSON and CSV (default: next to the first results file).")
    parser.add_argument("results", nargs="+", metavar="RESULTS.jsonl",
                        help="results of `batch`; items are grouped by their dataset (the manifest's dataset field, "
                             "else the manifest's file name)")
    parser.add_argument("--metrics", metavar="LIST", help="comma-separated metrics (default: all in the results)")
    parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, metavar="N",
                        help=f"bootstrap resamples for the CIs (default {DEFAULT_BOOTSTRAP}; 0: no CIs)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})")
    parser.add_argument("--level", type=float, default=DEFAULT_LEVEL, help="confidence level (default %(default)s)")
    parser.add_argument("--json", metavar="PATH", help="JSON output (default RESULTS-protocol.json)")
    parser.add_argument("--csv", metavar="PATH", help="CSV output, one row per figure (default RESULTS-protocol.csv)")
    parser.add_argument("--manifest", action="append", metavar="MANIFEST.jsonl",
                        help="the run's manifest (once for all results files, or once per file in order): adds HATIE's "
                             "Image Quality (FID of each model's sources vs its edits) and the totals using it")
    parser.add_argument("--hatie-fid", default="inception-v3-compat", metavar="SPEC",
                        help="FID network for HATIE Image Quality (default %(default)s; random:... is untrained)")
    parser.add_argument("--hatie-weights", default="published", metavar="NAME",
                        help="HATIE criterion weights: published (default), per-type-code, or a `hatie calibrate` name")
    parser.add_argument("--no-ci", action="store_true", help="print the tables without intervals")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..batch.protocol_tables import compute_protocols

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    report = compute_protocols(args.results, metrics=metrics, n_boot=args.bootstrap, seed=args.seed, level=args.level,
                               manifests=args.manifest, hatie_fid=args.hatie_fid, hatie_weights=args.hatie_weights)
    first = Path(args.results[0])
    json_path = args.json or first.with_name(first.stem + "-protocol.json")
    csv_path = args.csv or first.with_name(first.stem + "-protocol.csv")
    written = report.save(json_path, csv_path)
    print(report.format(with_ci=not args.no_ci))
    print("\nsaved: " + ", ".join(str(p) for p in written))
    return 0
