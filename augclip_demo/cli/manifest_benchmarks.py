"""``manifest pie-bench | editval | dreambooth | parquet | celeba``: benchmark layouts -> manifests."""

from __future__ import annotations

import argparse

from ..choices import PARQUET_PRESETS, PARQUET_ROLES, RATING_PARTS, VOTE_FORMATS

_METHOD_HELP = "a method's output folder, DIR or NAME=DIR (repeat for several methods)"


_DEFAULT_OUT = ("ROOT/manifest.jsonl when ROOT holds every --method-dir, else {name}.jsonl in the deepest folder "
                "holding ROOT and them")


def _common(parser: argparse.ArgumentParser, dataset: str, default_out: str | None = None) -> None:
    default_out = default_out or _DEFAULT_OUT.format(name=dataset)
    parser.add_argument("--out", metavar="PATH", help=f"manifest path (default {default_out}); every image must be "
                        "inside its folder")
    parser.add_argument("--method-dir", dest="methods", action="append", default=[], metavar="[NAME=]DIR",
                        help=_METHOD_HELP)
    parser.add_argument("--dataset", default=dataset, help=f"dataset name in the results (default {dataset})")


def register_benchmarks(sub: argparse._SubParsersAction) -> None:
    """Add the benchmark loaders to ``manifest``'s sub-commands."""

    pie = sub.add_parser("pie-bench", help="PIE-Bench: mapping_file.json, annotation_images/, method outputs")
    pie.add_argument("root", metavar="ROOT", help="PIE-Bench's data folder (mapping_file.json, annotation_images/)")
    _common(pie, "pie-bench")
    pie.add_argument("--mapping", default="mapping_file.json", help="mapping file inside ROOT")
    pie.add_argument("--types", nargs="+", metavar="ID", help="editing type ids to keep (0-9; default all)")
    pie.add_argument("--no-mask-border", action="store_true",
                     help="write the annotated masks alone (PIE-Bench's evaluation marks the one-pixel border as edited)")
    pie.set_defaults(func=_run_pie_bench)

    ev = sub.add_parser("editval", help="EditVal: object.json, COCO images, <method>/<type>/<image id>/<to>.png")
    ev.add_argument("root", metavar="ROOT", help="the folder holding object.json")
    _common(ev, "editval")
    ev.add_argument("--coco-dir", metavar="DIR", help="the COCO images (default ROOT/images)")
    ev.add_argument("--split-types", action="store_true", help="dataset name per edit type (editval:color, ...), so "
                    "the protocol tables have one column per type")
    ev.set_defaults(func=_run_editval)

    db = sub.add_parser("dreambooth", help="DreamBooth: subject folders, prompts_and_classes.txt, model folders")
    db.add_argument("root", metavar="ROOT", help="DreamBooth's dataset folder")
    _common(db, "dreambooth")
    db.add_argument("--unique-token", default="", help="the subject's token in the prompts (default: left out)")
    db.set_defaults(func=_run_dreambooth)

    pq = sub.add_parser("parquet", help="Hugging Face Parquet shards (presets: " + ", ".join(PARQUET_PRESETS) + ")")
    pq.add_argument("paths", nargs="+", metavar="SHARD", help="Parquet files or folders of them")
    _common(pq, "the preset's name", "the first shard's folder/manifest.jsonl")
    pq.add_argument("--preset", choices=sorted(PARQUET_PRESETS), help="the dataset's column mapping")
    for role in PARQUET_ROLES:
        flag = role.replace("_", "-")
        several = " (a,b joins several)" if role == "id" else " (a,b,...: one per candidate)" if role in (
            "candidates", "models") else ""
        pq.add_argument(f"--{flag}-column", dest=f"col_{role}", metavar="COLUMN",
                        help=f"the column holding the {role.replace('_', ' ')}{several}")
    pq.add_argument("--vote-format", choices=VOTE_FORMATS, help="how the vote column reads: arena (GenAI-Bench's "
                    "leftvote / rightvote / tievote / bothbad_vote) or ranking (A>B, A=B, C>A>B; EditReward-Bench)")
    pq.add_argument("--ratings", action="append", default=[], metavar="RATER.tsv",
                    help="a rater's file of ImagenHub's human ratings (repeat per rater): each --method-dir "
                         "model's edits get the raters' mean score")
    pq.add_argument("--rating", choices=RATING_PARTS, default="overall",
                    help="which rating becomes the human score: overall (sqrt(SC x PQ), default), sc or pq")
    pq.add_argument("--root", metavar="DIR", help="folder that image paths in cells are relative to")
    pq.add_argument("--limit", type=int, metavar="N", help="read only the first N rows")
    pq.set_defaults(func=_run_parquet, dataset=None)

    cel = sub.add_parser("celeba", help="CelebA-style attribute edits: faces/, attributes.txt, model folders")
    cel.add_argument("root", metavar="ROOT")
    _common(cel, "celeba")
    cel.add_argument("--faces", default="faces", help="the faces folder inside ROOT (default %(default)s)")
    cel.add_argument("--attributes", default="attributes.txt", help="target texts, one per line, or a name,"
                     "target_text CSV (default attributes.txt)")
    cel.add_argument("--source-text", default="a photo of a face", help="the faces' description (for CLIPdir)")
    cel.set_defaults(func=_run_celeba)


def _run_pie_bench(args: argparse.Namespace) -> int:
    from ..batch.benchmarks import load_pie_bench

    print(load_pie_bench(args.root, args.out, methods=args.methods, mapping=args.mapping, edit_types=args.types,
                         mask_border=not args.no_mask_border, dataset=args.dataset).format())
    return 0


def _run_editval(args: argparse.Namespace) -> int:
    from ..batch.benchmarks import load_editval

    print(load_editval(args.root, args.out, coco_dir=args.coco_dir, methods=args.methods,
                       split_types=args.split_types, dataset=args.dataset).format())
    return 0


def _run_dreambooth(args: argparse.Namespace) -> int:
    from ..batch.benchmarks import load_dreambooth

    print(load_dreambooth(args.root, args.out, methods=args.methods, unique_token=args.unique_token,
                          dataset=args.dataset).format())
    return 0


def _run_parquet(args: argparse.Namespace) -> int:
    from ..batch.benchmarks import load_parquet

    columns = {role: getattr(args, f"col_{role}") for role in PARQUET_ROLES}
    print(load_parquet(args.paths, args.out, preset=args.preset, columns=columns, methods=args.methods,
                       root=args.root, dataset=args.dataset, limit=args.limit, vote_format=args.vote_format,
                       ratings=args.ratings, rating=args.rating).format())
    return 0


def _run_celeba(args: argparse.Namespace) -> int:
    from ..batch.benchmarks import load_celeba

    print(load_celeba(args.root, args.out, methods=args.methods, faces=args.faces, attributes=args.attributes,
                      source_text=args.source_text, dataset=args.dataset).format())
    return 0
