"""``score``: evaluate one or more edited images of a source image."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..choices import (
    CLASSIFIERS,
    EDIT_TYPES,
    FEATURE_METRICS,
    FEATURE_NETWORKS,
    PROJECTIONS,
    WEIGHT_SCALINGS,
    FeatureNetworks,
)
from ..errors import InputError, InstructionParseError, LLMError, WeightsUnavailableError
from .attributes import add_provider_args, provider_from_args
from .bpm import (
    add_bpm_args,
    bpm_options,
    bpm_settings,
    llm_client,
    object_masks_from_args,
    parsed_from_args,
    report_parse,
    wants_bpm,
)
from .common import add_evaluation_inputs, add_model_args, terminal_progress, warn
from .judge_options import add_judge_args, judge_options_from_args
from .report_table import format_report

if TYPE_CHECKING:
    from ..attributes.base import AttributeProvider, Attributes
    from ..pipeline import AugCLIPOptions, Evaluator
    from ..report import Report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("score", help="score edited images (AugCLIP, CLIPdir, CLIP-I, CLIP-T, L2)",
                                   description="Score one or more edited images of a source image.")
    add_evaluation_inputs(parser)
    add_provider_args(parser)
    add_augclip_args(parser)
    add_bpm_args(parser, required_note="BPM runs when one of --instruction or --o1/--o2 is given and the "
                                        "GroundingDINO + SAM weights are available")
    parser.add_argument("--no-bpm", action="store_true", help="do not compute BPM even when an instruction is given")
    _add_reference_args(parser)
    add_judge_args(parser, how="With --judge the report gains the judge's rows, judged against --instruction when "
                               "given, else --target.")
    parser.add_argument("--hatie", action="store_true",
                        help="also compute HATIE's per-edit criteria (hatie, hatie_of/bf/oc/bc; Image Quality needs a "
                             "set: see `augclip-demo hatie table`); uses --instruction and --hatie-type")
    parser.add_argument("--hatie-type", choices=EDIT_TYPES, help="HATIE's edit type (default: from the instruction)")
    add_model_args(parser)
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the full report as JSON instead of a table")
    out.add_argument("--all-metrics", action="store_true", help="also show the augmented CLIPdir variants")
    out.add_argument("--out", metavar="PATH", help="also write the JSON report to PATH")
    out.add_argument("--csv", metavar="PATH", help="also write one CSV row per edit to PATH")
    out.add_argument("--html", metavar="PATH",
                     help="also write the comparison grid (every edit side by side: image, metrics, verdict, BPM "
                          "regions when BPM ran) as one self-contained HTML file; `explain` adds relevancy maps")
    parser.set_defaults(func=run)


class _MetricDefault:
    """A flag whose default is AugCLIP's own (:data:`~augclip_demo.metrics.augclip.AUGCLIP_DEFAULTS`), read when
    a help page prints it or a run builds its options: the metric module loads numpy, which building the
    parser (and the top-level help page) does not."""

    def __init__(self, name: str) -> None:
        self.name = name

    def value(self) -> object:
        from ..metrics.augclip import AUGCLIP_DEFAULTS

        return AUGCLIP_DEFAULTS[self.name]

    def __str__(self) -> str:
        return str(self.value())


def resolve_metric_defaults(args: argparse.Namespace) -> None:
    """Replace every flag left at AugCLIP's own default by its value (once the command runs)."""
    for name, value in vars(args).items():
        if isinstance(value, _MetricDefault):
            setattr(args, name, value.value())


def add_augclip_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("AugCLIP options")
    group.add_argument("--classifier", choices=CLASSIFIERS, default=_MetricDefault("classifier"),
                       help="hyperplane fit (default %(default)s)")
    group.add_argument("--C", dest="C", type=float, default=_MetricDefault("C"),
                       help="regularisation of svm / logistic (default %(default)s)")
    group.add_argument("--no-weighting", action="store_true", help="give every sample weight 1 instead of alpha")
    group.add_argument("--attributes-only", action="store_true",
                       help="fit on attributes only (Eq. 7 as printed) instead of adding the images (App. B)")
    group.add_argument("--weight-scaling", choices=WEIGHT_SCALINGS, default=_MetricDefault("weight_scaling"),
                       help="raw: alpha as the sample weight, as App. B does (default); mean: alpha rescaled to mean 1")
    group.add_argument("--projection", choices=PROJECTIONS, default=_MetricDefault("projection"),
                       help="clamped: v = max(c, 0) w as Eq. 8 (default); plain: v = c w as App. B's code")


def _add_reference_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("reference and preservation metrics (docs/metrics.md)")
    group.add_argument("--ground-truth", metavar="IMAGE",
                       help="a ground-truth edited image (MagicBrush): adds L1 / L2 / CLIP-I to it (and DINO with "
                            "--feature-metrics dino_gt)")
    group.add_argument("--output-caption", metavar="TEXT", help="a caption of the wanted result: adds CLIP-T to it")
    group.add_argument("--edit-mask", metavar="IMAGE",
                       help="white = the region the edit should change (source-sized): adds PSNR / MSE / SSIM outside "
                            "it (PIE-Bench), and LPIPS with --feature-metrics lpips_unedited")
    add_network_args(group)


def add_network_args(group: argparse._ArgumentGroup) -> None:
    """``--feature-metrics`` and the networks they load (``score`` and ``batch``)."""
    group.add_argument("--feature-metrics", metavar="KEYS", default="",
                       help="metrics that load a network of their own, comma-separated: "
                            + ", ".join(FEATURE_METRICS) + " (or 'all')")
    for net in FEATURE_NETWORKS:
        group.add_argument(net.flag, dest=net.field, metavar="SPEC", default=net.default,
                           help=f"{net.what} (default %(default)s, {net.benchmark}'s; random:... for an untrained "
                                "smoke test)")


def feature_metrics_from_args(args: argparse.Namespace) -> list[str]:
    names = [n.strip() for n in (args.feature_metrics or "").split(",") if n.strip()]
    if "all" in names:
        return list(FEATURE_METRICS)
    unknown = [n for n in names if n not in FEATURE_METRICS]
    if unknown:
        raise InputError(f"--feature-metrics: unknown {', '.join(unknown)}; choose from {', '.join(FEATURE_METRICS)} "
                         "or all")
    return names


def networks_from_args(args: argparse.Namespace) -> FeatureNetworks:
    return FeatureNetworks(**{net.field: getattr(args, net.field) for net in FEATURE_NETWORKS})


def options_from_args(args: argparse.Namespace) -> AugCLIPOptions:
    from ..pipeline import AugCLIPOptions

    resolve_metric_defaults(args)
    return AugCLIPOptions(classifier=args.classifier, C=args.C, weighting=not args.no_weighting,
                          include_images=not args.attributes_only, weight_scaling=args.weight_scaling,
                          projection=args.projection)


def run(args: argparse.Namespace) -> int:
    from ..attributes.base import Attributes
    from ..pipeline import Evaluator
    from ..report import UNTRAINED_WARNING

    settings = bpm_settings(args, attribute_provider=args.provider, mllm_model=args.mllm_model)
    feature_metrics = feature_metrics_from_args(args)
    evaluator = Evaluator(settings=settings, options=options_from_args(args), networks=networks_from_args(args))
    if args.attributes:  # a file wins over any provider
        attributes: Attributes | AttributeProvider = Attributes.load(args.attributes)
    else:
        attributes = provider_from_args(args, settings, encoder=evaluator.encoder)
    progress = terminal_progress()
    report = evaluator.evaluate(args.source, args.edited, args.target, args.source_text, attributes,
                                ground_truth=args.ground_truth, output_caption=args.output_caption,
                                edit_mask=args.edit_mask, feature_metrics=feature_metrics, progress=progress)
    if progress is not None:
        progress(1.0, "done")
    if report.truncated_texts:
        warn(f"warning: {len(report.truncated_texts)} text(s) longer than CLIP's "
             f"{evaluator.encoder.context_length} tokens were cut to their start before scoring; "
             "shorten them (see the report's truncated_texts)")
    bpm_untrained = _add_bpm_if_possible(evaluator, report, args)
    judge_options = judge_options_from_args(args, settings)
    if judge_options is not None:
        evaluator.add_judge(report, options=judge_options, instruction=getattr(args, "instruction", None))
    if args.hatie:
        evaluator.add_hatie(report, args.instruction, edit_type=args.hatie_type,
                            object_masks=object_masks_from_args(args, len(report.edits)))
    if args.out:
        Path(args.out).write_text(report.to_json() + "\n", encoding="utf-8")
    if args.csv:
        Path(args.csv).write_text(report.to_csv(), encoding="utf-8")
    if args.html:
        from ..explain.grid_pictures import comparison_grid

        comparison_grid(report).save(args.html)
    if args.json:
        print(report.to_json())
    else:
        text = format_report(report, include_variants=args.all_metrics)
        if bpm_untrained and not report.untrained:
            text = f"!! BPM {UNTRAINED_WARNING.upper()} (GroundingDINO / SAM) !!\n" + text
        print(text)
        for edit in report.edits:
            if edit.judge is not None:
                print(f"judge, edit {edit.index + 1}: " + _judge_lines(edit.judge))
    skipped = report.edits[0].unavailable.get("bpm") if report.edits else None
    if skipped and args.json:  # the table already shows it; with --json say it on stderr too
        warn(f"note: {skipped}")
    return 0


def _add_bpm_if_possible(evaluator: Evaluator, report: Report, args: argparse.Namespace) -> bool:
    """Add BPM to ``report`` when asked for and possible; otherwise mark it skipped with the reason.

    Returns whether the BPM models were untrained.
    """
    from ..bpm.models import bpm_models_status, get_bpm_models

    if args.no_bpm:
        evaluator.skip_bpm(report, "BPM skipped: --no-bpm")
        return False
    if not wants_bpm(args):
        evaluator.skip_bpm(report, "BPM skipped: it needs an editing instruction (--instruction TEXT) or the objects "
                                   "(--o1/--o2) for a description-style target")
        return False
    options = bpm_options(args)
    object_masks = object_masks_from_args(args, len(report.edits))
    if options.regions == "detected":
        available, reason = bpm_models_status(evaluator.settings)
        if not available:
            evaluator.skip_bpm(report, f"BPM skipped: the region models are not available: {reason}")
            return False
    try:
        parsed = parsed_from_args(args, llm_client(args, evaluator.settings))
        report_parse(parsed)
        models = get_bpm_models(evaluator.settings, encoder=evaluator.encoder, regions=options.regions)
        evaluator.add_bpm(report, parsed=parsed, models=models, options=options, object_masks=object_masks)
    except (InstructionParseError, LLMError, WeightsUnavailableError) as exc:
        evaluator.skip_bpm(report, f"BPM skipped: {exc}")
        return False
    return models.untrained


def _judge_lines(judge: dict) -> str:
    """The judge's scores of one edit with their spread over samples and the first rationale of each."""
    parts = []
    for name in ("sc", "pq", "overall"):
        score = judge.get(name) or {}
        if score.get("mean") is None:
            parts.append(f"{name.upper()} n/a")
            continue
        spread = f" +/- {score['std']:.2f} sd" if score.get("std") is not None else ""
        why = f" ({score['rationales'][0]})" if score.get("rationales") else ""
        parts.append(f"{name.upper()} {score['mean']:.2f}{spread}{why}")
    settings = judge.get("settings") or {}
    return "; ".join(parts) + (f" [model {settings.get('model')}, {settings.get('prompt_version')}, temperature "
                               f"{settings.get('temperature')}, {settings.get('samples')} sample(s)]" if settings else "")
