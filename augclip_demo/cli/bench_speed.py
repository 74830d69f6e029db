"""``bench speed``: batch AugCLIP scoring throughput vs bare CLIP encoding of the same inputs."""

from __future__ import annotations

import argparse
import json

from ..choices import TARGET_RATIO
from .common import add_model_args, settings_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "speed", help=f"AugCLIP batch scoring vs bare CLIP encoding (target ratio <= {TARGET_RATIO})",
        description="Draws a synthetic manifest, then times (1) bare CLIP encoding of its distinct images and the "
                    "texts the metrics need and (2) batch scoring of it with inline (cached) attributes, on the same "
                    "encoder with empty caches. Prints both throughputs and their ratio. Default model: "
                    "random:ViT-B-16 (the real architecture, random weights: speed only).")
    parser.add_argument("--items", type=int, metavar="N", help="items (default 64 on CPU, 2048 on GPU)")
    parser.add_argument("--edits", type=int, default=2, help="edited images per item (default %(default)s)")
    parser.add_argument("--attributes", type=int, default=8, help="attributes per side and item (default %(default)s)")
    parser.add_argument("--image-size", type=int, default=256, help="drawn image side in pixels (default %(default)s)")
    parser.add_argument("--metrics", default="augclip", help="metrics to score (default %(default)s)")
    parser.add_argument("--batch-size", type=int, metavar="N", help="images per forward pass")
    parser.add_argument("--workers", type=int, metavar="N", help="decode threads or processes")
    parser.add_argument("--decode-executor", choices=("auto", "thread", "process"), default="auto",
                        help="decode in threads or worker processes, both sides (auto: threads; run once with each "
                             "on a GPU to measure them)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per side; the fastest counts (default %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_model_args(parser)
    parser.set_defaults(func=run, clip_model=None)


def run(args: argparse.Namespace) -> int:
    from ..batch.bench import speed_benchmark

    settings = settings_from_args(args)
    if not args.clip_model:
        settings = settings.replace(clip_model="random:ViT-B-16", clip_checkpoint=None)
    result = speed_benchmark(settings, n_items=args.items, n_edits=args.edits, n_attributes=args.attributes,
                             image_size=args.image_size, metrics=args.metrics, batch_size=args.batch_size,
                             workers=args.workers, repeats=args.repeats, decode_executor=args.decode_executor)
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.format())
    return 0
