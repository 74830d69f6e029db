"""``study``: the operator's commands for rating studies (create, from a manifest or a slice of its results; raters,
status, list, close, export, import)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..choices import DEFAULT_AGREEMENT_SEED as DEFAULT_SEED
from ..choices import DEFAULT_BOOTSTRAP
from ..config import Settings, setting_help
from ..errors import InputError
from ..study.questions import KINDS, QUESTION_IDS

if TYPE_CHECKING:
    from ..study import store


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "study", help="rating studies: people judge edits, the tool compares the metrics with them",
        description="Run a rating study (docs/study.md): create it from a manifest, add raters (one private link "
                    "each), watch the agreement, close it and export the judgments as a manifest and CSV.")
    parser.add_argument("--db", metavar="PATH", help=setting_help("study_db"))
    sub = parser.add_subparsers(dest="study_command", metavar="ACTION", required=True)

    create = sub.add_parser("create", help="a new study over a manifest's items")
    create.add_argument("name", help="the study's name (letters, digits, - _ .)")
    create.add_argument("manifest", metavar="MANIFEST.jsonl")
    create.add_argument("--kind", choices=KINDS, default="2afc",
                        help="2afc: pairs of edits of one source, which is better (default); rating: 1-5 per edit")
    create.add_argument("--questions", default="overall", metavar="LIST",
                        help=f"comma-separated questions from {', '.join(QUESTION_IDS)} ('overall' is always asked; "
                             "'text' and 'source' ask about following the text and keeping the source apart)")
    create.add_argument("--per-unit", type=int, default=3, metavar="N", help="judgments wanted per unit (default %(default)s)")
    create.add_argument("--per-rater", type=int, metavar="N", help="units per rater (default: all of them)")
    create.add_argument("--repeats", type=int, default=2, metavar="N",
                        help="attention checks per rater: pairs shown again later, sides swapped (default %(default)s)")
    create.add_argument("--seed", type=int, default=0, help="seed of the order and sides (default %(default)s)")
    create.add_argument("--title", help="the title raters see (default: the name)")
    sliced = create.add_argument_group(
        "from an Explore slice", "with --results, judge only the edits of a slice of MANIFEST's batch results (the "
        "Explore tab's filters; no filter: every scored edit); --model, --dataset, --role, --edit-type and --run "
        "may be repeated")
    sliced.add_argument("--results", action="append", default=[], metavar="RESULTS",
                        help="`batch` results of MANIFEST (.jsonl, .parquet or a folder of parts); may be repeated")
    sliced.add_argument("--slice", metavar="SLICE.json", help="a slice saved as JSON (its filters; the flags below add to it)")
    for flag, what in (("model", "editing model"), ("dataset", "dataset"), ("role", "edit role"),
                       ("edit-type", "edit type"), ("run", "run number")):
        sliced.add_argument(f"--{flag}", action="append", default=[], metavar=flag.upper().replace("-", "_"),
                            help=f"keep edits of this {what}")
    sliced.add_argument("--range", action="append", default=[], metavar="METRIC=LOW:HIGH",
                        help="keep edits whose METRIC lies in [LOW, HIGH] (either end may be empty)")

    raters = sub.add_parser("raters", help="add raters; prints each one's private link once")
    raters.add_argument("name")
    raters.add_argument("--count", type=int, default=0, metavar="N", help="add N numbered raters")
    raters.add_argument("--label", action="append", default=[], metavar="LABEL", help="add a rater named LABEL")
    raters.add_argument("--base-url", default="http://127.0.0.1:7860/", metavar="URL",
                        help="the app's address, for the links (default %(default)s)")

    status = sub.add_parser("status", help="progress, agreement between raters and, with results, the metrics'")
    status.add_argument("name")
    status.add_argument("--results", action="append", default=[], metavar="RESULTS.jsonl",
                        help="`batch` results of the study's manifest (metric values; checked by content hash)")
    status.add_argument("--question", default="overall", help="question to compare with (default %(default)s)")
    status.add_argument("--metrics", metavar="LIST", help="comma-separated metrics (default: all in the results)")
    status.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, metavar="N",
                        help=f"bootstrap resamples (default {DEFAULT_BOOTSTRAP})")
    status.add_argument("--seed", type=int, default=DEFAULT_SEED)

    sub.add_parser("list", help="the studies in the database")
    close = sub.add_parser("close", help="stop taking answers")
    close.add_argument("name")

    export = sub.add_parser("export", help="the judgments as a manifest (for batch / protocol) and as CSV")
    export.add_argument("name")
    export.add_argument("--out", metavar="PATH.jsonl",
                        help="manifest to write, in the study's manifest folder (default MANIFEST-study-NAME-QUESTION.jsonl)")
    export.add_argument("--csv", metavar="PATH.csv", help="also write every judgment as CSV")
    export.add_argument("--question", default="overall", help="question whose verdicts fill `human` (default %(default)s)")

    imported = sub.add_parser("import", help="add judgments from a CSV (the export's columns)")
    imported.add_argument("name")
    imported.add_argument("csv", metavar="FILE.csv")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..study import store
    from ..study.agreement import study_agreement
    from ..study.exchange import export_csv, export_manifest, import_csv
    from ..study.report import format_report

    db = Path(args.db).expanduser() if args.db else Settings.from_env().study_db_path
    action = args.study_command
    if action == "create":
        design = {"kind": args.kind, "questions": [q.strip() for q in args.questions.split(",") if q.strip()],
                  "per_unit": args.per_unit, "per_rater": args.per_rater, "repeats": args.repeats, "seed": args.seed,
                  "title": args.title}
        if args.results:
            study = _create_from_slice(db, args, design)
        elif args.slice or args.model or args.dataset or args.role or args.edit_type or args.run or args.range:
            raise InputError("the slice options (--slice, --model, --dataset, --role, --edit-type, --run, --range) "
                             "filter batch results: give them with --results")
        else:
            study = store.create_study(db, args.name, args.manifest, **design)
        data = store.load_study(db, study.name)
        needed = -(-len(data.units) * study.per_unit // study.per_rater)
        print(f"study {study.name}: {len(data.units)} units ({study.kind}, questions {', '.join(study.questions)}, "
              f"wording {study.question_version}); {study.per_rater} per rater, so {needed} raters give each unit "
              f"{study.per_unit} judgments. Add them with `study raters {study.name} --count {needed}`.")
    elif action == "raters":
        base = args.base_url if args.base_url.endswith("/") else args.base_url + "/"
        for rater in store.add_raters(db, args.name, labels=args.label, count=args.count):
            print(f"{rater.label}\t{base}study/rate#t={rater.token}")
        print("(each link is printed only now: only a hash of its token is stored)")
    elif action == "status":
        data = store.load_study(db, args.name)
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
        report = study_agreement(data, args.results, question=args.question, metrics=metrics,
                                 n_boot=args.bootstrap, seed=args.seed)
        print(format_report(report))
    elif action == "list":
        for study in store.list_studies(db):
            print(f"{study.name}\t{study.kind}\t{study.status}\t{study.created_at}\t{study.manifest}")
    elif action == "close":
        study = store.close_study(db, args.name)
        print(f"study {study.name} closed at {study.closed_at}")
    elif action == "export":
        data = store.load_study(db, args.name)
        path = export_manifest(data, args.out, args.question)
        print(f"manifest: {path}")
        if args.csv:
            Path(args.csv).write_text(export_csv(data), encoding="utf-8")
            print(f"csv: {args.csv}")
    elif action == "import":
        added = import_csv(db, args.name, args.csv)
        print(f"{added} judgment(s) added to study {args.name}")
    return 0


def _create_from_slice(db: Path, args: argparse.Namespace, design: dict[str, Any]) -> store.Study:
    """``create --results``: open the results with MANIFEST as Explore does, make the slice, design over it."""
    from ..explore import make_slice, open_results, slice_from_json
    from ..explore.store import OpenedFile
    from ..study.slices import create_study_from_slice

    base = slice_from_json(Path(args.slice).read_text(encoding="utf-8")) if args.slice else make_slice("cli")
    ranges: dict[str, list[str]] = {key: [low, high] for key, (low, high) in base.ranges.items()}
    for text in args.range:
        metric, _, bounds = text.partition("=")
        low, colon, high = bounds.partition(":")
        if not metric.strip() or not colon:
            raise InputError(f"--range {text!r}: write METRIC=LOW:HIGH (e.g. augclip=0.2:0.8; either end may be empty)")
        ranges[metric.strip()] = [low.strip(), high.strip()]
    active = make_slice(base.name, datasets=[*base.datasets, *args.dataset], models=[*base.models, *args.model],
                        roles=[*base.roles, *args.role], edit_types=[*base.edit_types, *args.edit_type],
                        runs=[*base.runs, *args.run], ranges=ranges)
    results = open_results([OpenedFile(Path(path).expanduser(), Path(args.manifest).expanduser())
                            for path in args.results])
    try:
        study, selection = create_study_from_slice(db, args.name, results, active, **design)
    finally:
        results.close()
    print(f"from {selection.description}: {selection.n_edits} edit(s) of {len(selection.only)} item(s)")
    return study
