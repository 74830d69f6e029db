"""``agreement``: which metric agrees with people, per human set in batch results (docs/batch.md#agreement)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..choices import DEFAULT_AGREEMENT_SEED as DEFAULT_SEED
from ..choices import DEFAULT_BOOTSTRAP, DEFAULT_LEVEL
from ..errors import InputError


def _tolerance(text: str) -> float | None:
    if text == "calibrated":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number >= 0 or 'calibrated', got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"a number >= 0 or 'calibrated', got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "agreement", help="which metric agrees with the human votes or ratings of each set in batch results",
        description="For each human set in the results (items grouped by dataset), every metric's pairwise accuracy "
                    "against people (human ties left out, and with ties as the set's own evaluation counts them), "
                    "s2AFC where items have a choice, Spearman / Kendall for ratings, each with a bootstrap interval "
                    "over items, and a paired bootstrap test between the two best metrics. Markdown on stdout "
                    "(docs/batch.md#agreement).")
    parser.add_argument("results", nargs="+", metavar="RESULTS.jsonl", help="results of `batch` over human sets")
    parser.add_argument("--metrics", metavar="LIST", help="comma-separated metrics (default: all in the results)")
    parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, metavar="N",
                        help=f"bootstrap resamples (default {DEFAULT_BOOTSTRAP}; 0: no intervals)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})")
    parser.add_argument("--level", type=float, default=DEFAULT_LEVEL, help="confidence level (default %(default)s)")
    parser.add_argument("--tie-tolerance", type=_tolerance, default=None, metavar="X|calibrated",
                        help="a metric difference at most X counts as a metric tie in the accuracy with ties "
                             "(default calibrated: the tolerance that maximises it, as the sets' evaluations do)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with a bar plot")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..batch.agreement_tables import compute_agreement

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    report = compute_agreement(args.results, metrics=metrics, n_boot=args.bootstrap, seed=args.seed,
                               level=args.level, tolerance=args.tie_tolerance)
    if args.html:
        path = Path(args.html)
        if path.is_dir():
            raise InputError(f"--html {path}: a folder; give a file name")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report.html(), encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    print(report.to_json() if args.json else report.markdown(), end="" if not args.json else "\n")
    return 0
