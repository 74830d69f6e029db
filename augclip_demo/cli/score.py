"""``score``: evaluate one or more edited images of a source image."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..attributes.base import AttributeProvider, Attributes
from ..metrics.augclip import CLASSIFIERS
from ..pipeline import AugCLIPOptions, Evaluator
from .attributes import add_provider_args, provider_from_args
from .common import add_model_args, settings_from_args
from .table import format_report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("score", help="score edited images (AugCLIP, CLIPdir, CLIP-I, CLIP-T, L2)",
                                   description="Score one or more edited images of a source image.")
    parser.add_argument("--source", required=True, metavar="IMAGE", help="source image")
    parser.add_argument("--edited", required=True, nargs="+", metavar="IMAGE", help="edited image(s)")
    parser.add_argument("--target", required=True, metavar="TEXT", help="target text (instruction or description)")
    parser.add_argument("--source-text", metavar="TEXT", help="text describing the source image (enables CLIPdir)")
    parser.add_argument("--attributes", metavar="JSON",
                        help='attributes file {"source_attributes": [...], "target_attributes": [...]}')
    add_provider_args(parser)
    add_augclip_args(parser)
    add_model_args(parser)
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the full report as JSON instead of a table")
    out.add_argument("--all-metrics", action="store_true", help="also show the augmented CLIPdir variants")
    out.add_argument("--out", metavar="PATH", help="also write the JSON report to PATH")
    out.add_argument("--csv", metavar="PATH", help="also write one CSV row per edit to PATH")
    parser.set_defaults(func=run)


def add_augclip_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("AugCLIP options")
    group.add_argument("--classifier", choices=CLASSIFIERS, default="svm", help="hyperplane fit (default: svm)")
    group.add_argument("--C", dest="C", type=float, default=1.0, help="regularisation of svm / logistic (default 1)")
    group.add_argument("--no-weighting", action="store_true", help="give every sample weight 1 instead of alpha")
    group.add_argument("--attributes-only", action="store_true",
                       help="fit on attributes only (Eq. 7 as printed) instead of adding the images (App. B)")


def options_from_args(args: argparse.Namespace) -> AugCLIPOptions:
    return AugCLIPOptions(classifier=args.classifier, C=args.C, weighting=not args.no_weighting,
                          include_images=not args.attributes_only)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args, attribute_provider=args.provider, mllm_model=args.mllm_model)
    evaluator = Evaluator(settings=settings, options=options_from_args(args))
    if args.attributes:  # a file wins over any provider
        attributes: Attributes | AttributeProvider = Attributes.load(args.attributes)
    else:
        attributes = provider_from_args(args, settings, encoder=evaluator.encoder)
    report = evaluator.evaluate(args.source, args.edited, args.target, args.source_text, attributes)
    if args.out:
        Path(args.out).write_text(report.to_json() + "\n", encoding="utf-8")
    if args.csv:
        Path(args.csv).write_text(report.to_csv(), encoding="utf-8")
    print(report.to_json() if args.json else format_report(report, include_variants=args.all_metrics))
    return 0
