"""``explain``: score edited images, then write every explanation as PNGs plus the numbers as JSON."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..choices import CLIP_DIR_DIFFERENCES, PROVIDER_NAMES
from .common import add_evaluation_inputs, add_model_args, settings_from_args, terminal_progress
from .score import add_augclip_args, options_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="write relevancy maps, hyperplane views and attribute rankings (PNG + JSON)",
        description="Score edited images like `score`, then write the explanations into --out: relevancy maps "
                    "(AugCLIP, CLIPdir, CLIP-T) per edit, the exact and the UMAP hyperplane views, the attribute "
                    "ranking and alpha charts per edit, explanations.json (the numbers behind every figure), "
                    "report.json (the scores) and comparison.html (every edit side by side, self-contained).",
    )
    add_evaluation_inputs(parser)
    parser.add_argument("--provider", metavar="NAME",
                        help=f"attribute provider when no --attributes file is given ({', '.join(PROVIDER_NAMES)}; "
                             "default AUGCLIP_ATTRIBUTE_PROVIDER)")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the PNGs and JSON files (created)")
    add_augclip_args(parser)
    add_model_args(parser)
    group = parser.add_argument_group("explanations")
    group.add_argument("--no-relevancy", action="store_true", help="skip the relevancy maps (no backward passes)")
    group.add_argument("--no-umap", action="store_true", help="skip the UMAP view (its first call compiles numba code)")
    group.add_argument("--start-layer", type=int, default=0, metavar="L",
                       help="first attention layer in the relevancy propagation (default 0: all; -1: last only)")
    group.add_argument("--clip-dir-difference", choices=CLIP_DIR_DIFFERENCES, default="raw",
                       help="CLIPdir map: subtract the relevance as computed (default, App. D.5) or min-max "
                            "normalise each map first")
    group.add_argument("--top-k", type=int, default=8, metavar="K",
                       help="ranking charts show the K first and K last entries of long lists (default %(default)s)")
    group.add_argument("--umap-neighbors", type=int, metavar="N",
                       help="UMAP n_neighbors (default: the UMAP view's own, explain.umap_view)")
    group.add_argument("--seed", type=int, default=0, help="UMAP random_state (default %(default)s)")
    group.add_argument("--dpi", type=int, default=110, help="PNG resolution (default %(default)s)")
    group.add_argument("--svg", action="store_true", help="also write every figure as SVG (vector, for papers)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..attributes.base import Attributes
    from ..explain.explanations import ExplainOptions, explain_report
    from ..explain.grid_pictures import comparison_grid
    from ..pipeline import Evaluator
    from ..report import UNTRAINED_WARNING

    settings = settings_from_args(args, attribute_provider=args.provider)
    options = ExplainOptions(relevancy=not args.no_relevancy, umap=not args.no_umap, start_layer=args.start_layer,
                             clip_dir_difference=args.clip_dir_difference, top_k=args.top_k,
                             umap_seed=args.seed,
                             **({} if args.umap_neighbors is None else {"umap_neighbors": args.umap_neighbors}))
    evaluator = Evaluator(settings=settings, options=options_from_args(args))
    attributes = Attributes.load(args.attributes) if args.attributes else settings.attribute_provider
    report = evaluator.evaluate(args.source, args.edited, args.target, args.source_text, attributes)
    progress = terminal_progress()
    explanations = explain_report(report, evaluator.encoder, options, progress=progress)
    if progress is not None:
        progress(1.0, "done")
    out = Path(args.out)
    written = explanations.save(out, dpi=args.dpi, formats=("png", "svg") if args.svg else ("png",))
    report_path = out / "report.json"
    report_path.write_text(report.to_json() + "\n", encoding="utf-8")
    written.append(comparison_grid(report, explanations).save(out / "comparison.html"))
    if report.untrained:
        print(f"WARNING: {UNTRAINED_WARNING}")
    print(report.verdict())
    for key, reason in explanations.unavailable.items():
        print(f"not computed: {key}: {reason}")
    for edit in explanations.edits:
        for key, reason in edit.unavailable.items():
            print(f"not computed for edit {edit.index + 1}: {key}: {reason}")
    print(f"wrote {len(written) + 1} files to {out}:")
    for path in [*written, report_path]:
        print(f"  {path.name}")
    return 0
