"""``manifest``: check a manifest, or write one from a benchmark layout (TEdBench, MagicBrush, CSV, and the
benchmarks of :mod:`.manifest_benchmarks`)."""

from __future__ import annotations

import argparse

from .manifest_benchmarks import register_benchmarks


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("manifest", help="check a manifest, or build one from TEdBench / MagicBrush / CSV",
                                   description="Manifest tools (docs/batch.md#manifests and docs/batch.md#loaders).")
    sub = parser.add_subparsers(dest="manifest_command", metavar="ACTION", required=True)

    check = sub.add_parser("check", help="validate a manifest and list every problem")
    check.add_argument("manifest", metavar="MANIFEST")
    check.set_defaults(func=_run_check)

    ted = sub.add_parser("tedbench", help="TEdBench layout: input_list.json, originals/, one folder per method")
    ted.add_argument("root", metavar="ROOT")
    ted.add_argument("--out", metavar="PATH", help="manifest path (default ROOT/manifest.jsonl)")
    ted.add_argument("--methods", nargs="+", metavar="NAME", help="method folders to include (default: all)")
    ted.add_argument("--gt-method", metavar="NAME", help="method whose outputs are the ground truth (role gt)")
    ted.add_argument("--attributes-dir", metavar="DIR", help="folder of <id>.json attribute files")
    ted.add_argument("--dataset", default="tedbench", help="dataset name in the results (default %(default)s)")
    ted.set_defaults(func=_run_tedbench)

    mb = sub.add_parser("magicbrush", help="MagicBrush test split: edit_sessions.json, images/<img_id>/...")
    mb.add_argument("root", metavar="ROOT", help="the folder holding edit_sessions.json (e.g. .../test)")
    mb.add_argument("--out", metavar="PATH", help="manifest path (default ROOT/manifest.jsonl)")
    mb.add_argument("--method-dir", metavar="DIR", help="an editing method's outputs (<img_id>/<img_id>_1.png ...)")
    mb.add_argument("--method-name", metavar="NAME", help="the method's name (default: the folder's name)")
    mb.add_argument("--first-turn-only", action="store_true", help="only the first turn of each session")
    mb.add_argument("--attributes-dir", metavar="DIR", help="folder of <id>.json attribute files")
    mb.add_argument("--dataset", default="magicbrush", help="dataset name in the results (default %(default)s)")
    mb.set_defaults(func=_run_magicbrush)

    pairs = sub.add_parser("csv", help="a folder of images plus a CSV with one row per edited image")
    pairs.add_argument("csv", metavar="FILE.csv")
    pairs.add_argument("--out", metavar="PATH", help="manifest path (default FILE.jsonl)")
    pairs.add_argument("--root", metavar="DIR", help="folder the CSV's paths are relative to (default: the CSV's)")
    pairs.add_argument("--dataset", metavar="NAME", help="dataset name for rows without a dataset column")
    pairs.set_defaults(func=_run_csv)

    from .hatie import register_benchmark_manifest  # HATIE's own benchmark files (cli/hatie.py)

    register_benchmark_manifest(sub)

    synth = sub.add_parser("synthetic", help="draw a manifest of random pictures (demos and speed checks)")
    synth.add_argument("folder", metavar="FOLDER")
    synth.add_argument("--items", type=int, default=200)
    synth.add_argument("--edits", type=int, default=2)
    synth.add_argument("--attributes", type=int, default=8, help="attributes per side and item")
    synth.add_argument("--image-size", type=int, default=96)
    synth.add_argument("--seed", type=int, default=0)
    synth.set_defaults(func=_run_synthetic)
    register_benchmarks(sub)


def _run_check(args: argparse.Namespace) -> int:
    from ..batch.manifest import validate_manifest

    scan = validate_manifest(args.manifest)
    print(f"{args.manifest}: {scan.items} valid item(s), no problems")
    return 0


def _run_tedbench(args: argparse.Namespace) -> int:
    from ..batch.loaders import load_tedbench

    print(load_tedbench(args.root, args.out, methods=args.methods, gt_method=args.gt_method, dataset=args.dataset,
                        attributes_dir=args.attributes_dir).format())
    return 0


def _run_magicbrush(args: argparse.Namespace) -> int:
    from ..batch.loaders import load_magicbrush

    print(load_magicbrush(args.root, args.out, method_dir=args.method_dir, method_name=args.method_name,
                          first_turn_only=args.first_turn_only, dataset=args.dataset,
                          attributes_dir=args.attributes_dir).format())
    return 0


def _run_csv(args: argparse.Namespace) -> int:
    from ..batch.loaders import load_csv_pairs

    print(load_csv_pairs(args.csv, args.out, root=args.root, dataset=args.dataset).format())
    return 0


def _run_synthetic(args: argparse.Namespace) -> int:
    from ..batch.synthetic import write_synthetic_manifest

    path = write_synthetic_manifest(args.folder, args.items, n_edits=args.edits, n_attributes=args.attributes,
                                    image_size=args.image_size, seed=args.seed)
    print(f"wrote {path}: {args.items} drawn item(s) with {args.edits} edit(s) each (made-up human labels)")
    return 0
