"""``triplets``: ground-truth-test triplets (gt, ep = noisy source, em = supplied image) from a manifest."""

from __future__ import annotations

import argparse

from ..choices import DEFAULT_TRIPLET_SEED, DEFAULT_TRIPLET_SIGMA


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "triplets", help="build ground-truth-test triplets (gt / ep / em) from a manifest with gt edits",
        description="For each item with a gt edit: ep = the source plus Gaussian noise (sigma on the [0, 1] scale, "
                    "fixed seed), em = an image you supply (an em edit in the item, or --em-dir/<id>.png). The papers "
                    "make em with a text-to-image model from the target text (docs/batch.md#triplets).")
    parser.add_argument("manifest", metavar="MANIFEST", help="manifest whose items have a gt edit")
    parser.add_argument("--out", metavar="PATH", help="triplet manifest (default MANIFEST-triplets.jsonl); ep images go "
                                                      "to <out stem>_ep/ next to it")
    parser.add_argument("--em-dir", metavar="DIR", help="folder with one excessively modified image per item, named <id>.png")
    parser.add_argument("--sigma", type=float, default=DEFAULT_TRIPLET_SIGMA,
                        help=f"noise standard deviation on [0, 1] intensities (default {DEFAULT_TRIPLET_SIGMA})")
    parser.add_argument("--seed", type=int, default=DEFAULT_TRIPLET_SEED, help=f"noise seed (default {DEFAULT_TRIPLET_SEED})")
    parser.add_argument("--skip-missing", action="store_true", help="skip items without gt or em instead of stopping")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..batch.triplets import build_triplets

    result = build_triplets(args.manifest, args.out, em_dir=args.em_dir, sigma=args.sigma, seed=args.seed,
                            skip_missing=args.skip_missing)
    print(result.format())
    return 0
