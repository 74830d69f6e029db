"""``world``: write a set of the synthetic shapes world, whose right answers are known by construction."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..choices import EDIT_KINDS, TARGET_ATTRIBUTE_STYLES
from ..errors import InputError

#: Largest set the command writes (about 25 KB an item on disk).
_MAX_WORLD_ITEMS = 100_000


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "world", help="write a known-answer set of the synthetic shapes world (for shapes:tiny)",
        description="Draws items of the synthetic shapes world into OUT: per item a source scene, an instruction, "
                    "and five edits whose order is fixed by construction (correct, partial, over-edit, unchanged, "
                    "wrong), with the judgments `protocol` reads, the edit mask, each object's mask, attribute lists "
                    "and the HATIE / BPM fields. Score it with --clip-model shapes:tiny (docs/world.md).")
    parser.add_argument("out", metavar="OUT", help="folder to write (manifest.jsonl and images/)")
    parser.add_argument("--items", type=int, default=70, help="items to draw, the edit kinds in turn (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the set's seed (default %(default)s; item k is the same for any "
                        "--items)")
    parser.add_argument("--kinds", nargs="+", choices=EDIT_KINDS, metavar="KIND",
                        help=f"edit kinds to draw (default all: {', '.join(EDIT_KINDS)})")
    parser.add_argument("--ground-truth", action="store_true",
                        help="give each item its correct edit as the ground-truth image (reference metrics)")
    parser.add_argument("--target-attributes", choices=TARGET_ATTRIBUTE_STYLES, default=TARGET_ATTRIBUTE_STYLES[0],
                        help="what each target attribute list holds: 'scene', every phrase of the target scene "
                             "(default); 'changed', only what the edit brings (docs/world.md: how AugCLIP "
                             "depends on it)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from ..world.world_sets import write_world

    if not 1 <= args.items <= _MAX_WORLD_ITEMS:
        raise InputError(f"--items must be between 1 and {_MAX_WORLD_ITEMS:,}, got {args.items}")
    if args.seed < 0:
        raise InputError(f"--seed must be 0 or more, got {args.seed}")
    out = Path(args.out)  # a file there was refused by the preflight
    kinds = tuple(dict.fromkeys(args.kinds)) if args.kinds else EDIT_KINDS
    manifest = write_world(out, args.items, seed=args.seed, kinds=kinds, ground_truth=args.ground_truth,
                           target_attributes=args.target_attributes)
    print(f"wrote {manifest}: {args.items} item(s) of the shapes world ({', '.join(kinds)}), five edits each with "
          "judgments fixed by construction; score it with --clip-model shapes:tiny")
    return 0
