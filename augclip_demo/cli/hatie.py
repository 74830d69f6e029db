"""``hatie``: HATIE's per-model table of a batch results file, and fitting its criterion weights.

The per-edit criteria come from ``batch --metrics ...,hatie,hatie_of,hatie_bf,hatie_oc,hatie_bc``
(options below are shared with ``batch``); ``hatie table`` ranks the models like the paper's table,
with Image Quality (FID) when the manifest is given; ``hatie calibrate`` fits the four criterion
weights to the manifest's human judgments and saves them under a name for ``--hatie-weights``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..config import Settings, setting_help
from ..errors import InputError
from .common import add_model_args


def add_hatie_args(parser: argparse.ArgumentParser) -> None:
    """The HATIE options of ``batch`` (the named choices of docs/method-notes.md)."""
    group = parser.add_argument_group("HATIE (with --metrics ...,hatie,hatie_of,hatie_bf,hatie_oc,hatie_bc)")
    group.add_argument("--hatie-vqa", action="store_true",
                       help="ask the OpenAI-compatible vision model (OPENAI_BASE_URL, AUGCLIP_MLLM_MODEL) HATIE's "
                            "yes / no questions; default off: the VQA weights are shared by the other measures")
    group.add_argument("--hatie-bc", choices=("code", "paper"), default="code",
                       help="Background Consistency measures: code (CLIP, LPIPS, DINO, L2; default) or paper "
                            "(LPIPS, DINO, L2)")
    group.add_argument("--hatie-no-squash", action="store_true",
                       help="Background Fidelity without the published code's squashing function")
    group.add_argument("--hatie-relation", choices=("repeat", "anchor"), default="repeat",
                       help="add edits: the relation prompt repeats the new object where the anchor belongs (the "
                            "published code; default) or names the anchor (the paper's meaning)")
    group.add_argument("--hatie-geometry", choices=("code", "paper"), default="code",
                       help="position / size consistency: the published code's (edit mask's area, scale "
                            "sqrt(2)/sqrt(0.003), growth limit 1/0.003, unclamped; default) or the paper's")
    group.add_argument("--hatie-clip-from", choices=("hatie", "run"), default="hatie",
                       help="CLIP of HATIE's measures: its own ViT-B/32 (default) or the run's --clip-model")
    group.add_argument("--hatie-clip", default=None, metavar="SPEC", help=setting_help("hatie_clip"))
    group.add_argument("--hatie-weights", default="published", metavar="NAME",
                       help="criterion weights of the total: published (default), per-type-code, or a name saved "
                            "by `hatie calibrate`")
    group.add_argument("--hatie-dino", default=None, metavar="SPEC", help=setting_help("hatie_dino"))
    group.add_argument("--hatie-lpips", default=None, metavar="NET", help=setting_help("hatie_lpips"))
    group.add_argument("--hatie-fid", default="inception-v3-compat", metavar="SPEC",
                       help="FID network (default %(default)s)")


def hatie_from_args(args: argparse.Namespace, settings: Settings, *, want: bool) -> dict[str, Any]:
    """``BatchOptions`` fields for HATIE: options, feature networks and VQA scorer (only when ``want``)."""
    from ..hatie.criteria import HatieOptions
    from ..hatie.tables import calibrated_sets, resolve_weights

    resolve_weights(args.hatie_weights, settings)  # a clear error for an unknown name, before any model loads
    options = HatieOptions(vqa=args.hatie_vqa, bc_clip=args.hatie_bc == "code", bf_squash=not args.hatie_no_squash,
                           relation_prompt=args.hatie_relation, geometry=args.hatie_geometry, clip=args.hatie_clip_from,
                           total=args.hatie_weights)
    out: dict[str, Any] = {"hatie": options}
    if not want:
        return out
    out["hatie_features"] = features_from_args(args, settings)
    if args.hatie_vqa:
        from ..hatie.vqa import VqaScorer
        from ..llm.client import OpenAICompatibleClient

        out["hatie_vqa"] = VqaScorer(OpenAICompatibleClient(settings))
    out["hatie_calibrated"] = calibrated_sets(settings)
    return out


def features_from_args(args: argparse.Namespace, settings: Settings) -> Any:
    from ..hatie.networks import HatieFeatures

    # --hatie-clip-from is HatieOptions.clip, decided by HatieModels.clip_for; HATIE's CLIP loads only if used
    return HatieFeatures(settings, dino=args.hatie_dino, lpips=args.hatie_lpips, fid=args.hatie_fid,
                         clip=getattr(args, "hatie_clip", None))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("hatie", help="HATIE: per-model table and weight calibration from batch results",
                                   description=__doc__)
    sub = parser.add_subparsers(dest="hatie_command", metavar="ACTION", required=True)
    table = sub.add_parser("table", help="per-model HATIE table (criteria, IQ, total), per edit type, correlations "
                                         "with the human judgments")
    table.add_argument("results", metavar="RESULTS.jsonl")
    table.add_argument("--manifest", metavar="MANIFEST.jsonl", help="the run's manifest: computes Image Quality (FID)")
    table.add_argument("--weights", default="published", metavar="NAME", help="criterion weights (default %(default)s)")
    table.add_argument("--per-type-weights", choices=("code", "overall"), default="code",
                       help="weights of the per-edit-type table: the published code's (OF 0.4, BF 0.2; default) or "
                            "the overall total's (OF 0.2, BF 0.4)")
    table.add_argument("--hatie-fid", default="inception-v3-compat", metavar="SPEC", help="FID network")
    table.add_argument("--json", metavar="PATH", help="also write the table as JSON")
    add_model_args(table)
    table.set_defaults(func=_run_table)
    cal = sub.add_parser("calibrate", help="fit the criterion weights to the human judgments of a results file")
    cal.add_argument("results", metavar="RESULTS.jsonl")
    cal.add_argument("--name", required=True, help="save the weights under this name (use with --hatie-weights)")
    cal.add_argument("--step", type=float, default=0.01, help="grid step (default %(default)s, as HATIE)")
    cal.add_argument("--folds", type=int, default=5, help="cross-validation folds over items (default %(default)s)")
    cal.add_argument("--seed", type=int, default=0, help="fold shuffle seed (default %(default)s)")
    cal.set_defaults(func=_run_calibrate)


def _run_table(args: argparse.Namespace) -> int:
    from ..batch.manifest import load_manifest
    from ..batch.results import iter_results
    from ..hatie.tables import UNTRAINED_IQ, hatie_edits, hatie_table, image_quality_from_manifest

    settings = Settings.from_env()
    edits = hatie_edits(iter_results(args.results), args.results)
    iq, untrained, errors = None, False, {}
    if args.manifest:
        iq, untrained = image_quality_from_manifest(edits, load_manifest(args.manifest), args.hatie_fid, settings,
                                                    errors)
    table = hatie_table(edits, weights=args.weights, image_quality=iq, settings=settings,
                        per_type=args.per_type_weights, iq_errors=errors)
    if untrained:
        table.notes.append(UNTRAINED_IQ)
    print(table.format())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(table.to_dict(), handle, indent=2, allow_nan=False)
    return 0


def _run_calibrate(args: argparse.Namespace) -> int:
    from ..batch.results import iter_results
    from ..hatie.tables import check_weight_name, fit_from_results, hatie_edits, save_weights

    check_weight_name(args.name)
    if args.folds < 1 or not 0 < args.step <= 0.5:
        raise InputError("--folds must be >= 1 and --step in (0, 0.5]")
    fit = fit_from_results(hatie_edits(iter_results(args.results), args.results), args.results, step=args.step,
                           folds=args.folds, seed=args.seed)
    path = save_weights(args.name, fit, str(args.results), Settings.from_env())
    weights = ", ".join(f"{k} {v:.2f}" for k, v in fit.weights.items())
    cv = f"{fit.cv_r:.4f}" if fit.cv_r is not None else "n/a"
    print(f"fitted on {fit.n} rated edits: {weights}\nPearson r {fit.r:.4f} (cross-validated {cv})\n"
          f"saved as {args.name!r} ({path}); use it with --hatie-weights {args.name}")
    return 0


def register_benchmark_manifest(sub: argparse._SubParsersAction) -> None:
    """``manifest hatie``: HATIE's own benchmark files into a manifest (registered by cli/manifest.py)."""
    parser = sub.add_parser("hatie", help="HATIE's benchmark: query pickle, original images, mask pickle, model outputs",
                            description="A manifest of HATIE's own benchmark: one item per query with an output, the "
                                        "benchmark's source masks written next to the manifest (masks/). The pickles "
                                        "are read with a restricted unpickler: plain values and numpy arrays only.")
    parser.add_argument("queries", metavar="QUERIES.pkl", help="the query file (queries_wo_remove.pkl or w_remove)")
    parser.add_argument("--originals", required=True, metavar="DIR", help="the original images (ID.jpg)")
    parser.add_argument("--masks", required=True, metavar="MASKS.pkl", help="the source objects' masks (pickle)")
    parser.add_argument("--outputs", required=True, nargs="+", metavar="[NAME=]DIR[:PREFIX]",
                        help="a model's outputs, named PREFIX_{query id}.EXT (default prefix and name: the folder's "
                             "name); several models: several values")
    parser.add_argument("--out", required=True, metavar="PATH",
                        help="the manifest to write, in a folder holding the originals and the outputs")
    parser.set_defaults(func=_run_benchmark_manifest)


def _output_spec(text: str) -> tuple[str, str, str]:
    name, _, rest = text.rpartition("=") if "=" in text else ("", "", text)
    folder, _, prefix = rest.rpartition(":") if ":" in rest else (rest, "", "")
    from pathlib import Path

    prefix = prefix or Path(folder).name
    return name or prefix, folder, prefix


def _run_benchmark_manifest(args: argparse.Namespace) -> int:
    from ..batch.benchmarks.hatie_bench import write_hatie_manifest

    written = write_hatie_manifest(args.queries, args.originals, args.masks,
                                   [_output_spec(o) for o in args.outputs], args.out)
    missing = ", ".join(f"{m}: {n}" for m, n in written.missing.items() if n)
    print(f"{written.manifest}: {written.items} queries, {written.edits} edits, {written.masks} source masks"
          + (f"; queries without an output ({missing})" if missing else ""))
    print(f"score it: augclip-demo batch {written.manifest} --out results.jsonl --metrics "
          "hatie,hatie_of,hatie_bf,hatie_oc,hatie_bc; then: augclip-demo hatie table results.jsonl --manifest "
          f"{written.manifest}")
    return 0
