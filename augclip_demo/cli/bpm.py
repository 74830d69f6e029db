"""``bpm``: the region-aware BPM metric for instruction-based edits (GroundingDINO + SAM + CLIP)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..choices import (
    DEFAULT_BPM_ALPHA,
    DEFAULT_BPM_BOX_THRESHOLD,
    PARSERS,
    POSITION_STATES,
    REGION_SOURCES,
    SIZE_STATES,
    RegionThresholds,
)
from ..config import ENVIRONMENT_VARIABLES, Settings
from ..errors import InputError
from .common import add_model_args, settings_from_args, warn
from .report_table import edit_table

if TYPE_CHECKING:
    from ..bpm import BPMOptions, BPMResult, ParsedInstruction


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bpm", help="score edits with BPM (region-aware: GroundingDINO boxes, SAM masks, CLIP)",
        description="BPM of one or more edited images for an editing instruction (or o1/o2 given directly).")
    parser.add_argument("--source", required=True, metavar="IMAGE", help="source image")
    parser.add_argument("--edited", required=True, nargs="+", metavar="IMAGE", help="edited image(s)")
    add_bpm_args(parser, required_note="one of --instruction or --o1/--o2 is required")
    parser.add_argument("--edit-mask", metavar="IMAGE",
                        help="with --regions masks: white = the region the edit should change (PIE-Bench, MagicBrush), "
                             "used as origin and edit region where no --object-mask covers an image")
    add_model_args(parser)
    out = parser.add_argument_group("output")
    out.add_argument("--parse-only", action="store_true",
                     help="print the parse of the instruction (fields, confidence, notes) with any corrections "
                          "applied, and stop before BPM runs (no models are loaded)")
    out.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    out.add_argument("--out", metavar="PATH", help="also write the JSON results to PATH")
    parser.set_defaults(func=run)


def add_bpm_args(parser: argparse.ArgumentParser, required_note: str = "") -> None:
    """The instruction / parse fields, region models and BPM options (shared with ``score``)."""
    group = parser.add_argument_group("BPM instruction" + (f" ({required_note})" if required_note else ""))
    group.add_argument("--instruction", metavar="TEXT", help="the editing instruction, e.g. 'make the cup red'")
    group.add_argument("--parser", choices=PARSERS, default="rules",
                       help="instruction parser: rules (offline, default) or llm (OpenAI-compatible chat model)")
    group.add_argument("--o1", metavar="TEXT", help="correct o1, the object in the source image that the edit changes "
                                                    "('None' for add); without a parseable --instruction, --o1/--o2 "
                                                    "give the parse (description-style targets)")
    group.add_argument("--o2", metavar="TEXT", help="correct o2, the object in the edited image ('None' for remove)")
    group.add_argument("--size-state", choices=SIZE_STATES, help="correct the parsed size state")
    group.add_argument("--position-state", choices=POSITION_STATES, help="correct the parsed position state")
    group.add_argument("--reference", metavar="TEXT", help="correct the reference object of the position state "
                                                           "('None' for none)")
    models = parser.add_argument_group("BPM models (each flag overrides its environment variable)")
    models.add_argument("--gdino-model", metavar="ID|PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_GDINO_MODEL"])
    models.add_argument("--sam-model", metavar="NAME", help=ENVIRONMENT_VARIABLES["AUGCLIP_SAM_MODEL"])
    models.add_argument("--sam-checkpoint", metavar="PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_SAM_CHECKPOINT"])
    options = parser.add_argument_group("BPM options")
    options.add_argument("--regions", choices=REGION_SOURCES, default="detected",
                         help="where the regions come from: detected (GroundingDINO + SAM, default) or masks (the "
                              "--object-mask / --edit-mask files; no detector or segmenter is loaded)")
    options.add_argument("--object-mask", action="append", default=[], metavar="[N:]NAME=MASK",
                         help="with --regions masks: the mask of object NAME in the source, or in edit N (1 = the "
                              "first --edited image); repeat for each object and image")
    options.add_argument("--alpha", type=float, default=DEFAULT_BPM_ALPHA,
                         help=f"weight of S_semantic (default {DEFAULT_BPM_ALPHA}, the paper's Table 9)")
    options.add_argument("--box-threshold", type=float, default=DEFAULT_BPM_BOX_THRESHOLD,
                         help=f"GroundingDINO box score threshold (default {DEFAULT_BPM_BOX_THRESHOLD})")
    for name, value in dataclasses.asdict(RegionThresholds()).items():
        options.add_argument(f"--{name.replace('_', '-')}", dest=name, type=float, default=value,
                             help=f"region judge threshold (default {value:g}; docs/bpm.md#region-thresholds)")


def bpm_settings(args: argparse.Namespace, **extra: Any) -> Settings:
    return settings_from_args(args, gdino_model=getattr(args, "gdino_model", None),
                              sam_model=getattr(args, "sam_model", None),
                              sam_checkpoint=getattr(args, "sam_checkpoint", None), **extra)


def bpm_options(args: argparse.Namespace) -> BPMOptions:
    from ..bpm import BPMOptions

    thresholds = RegionThresholds(**{name: getattr(args, name) for name in dataclasses.asdict(RegionThresholds())})
    return BPMOptions(alpha=args.alpha, box_threshold=args.box_threshold, thresholds=thresholds,
                      regions=getattr(args, "regions", "detected"))


def object_masks_from_args(args: argparse.Namespace, n_edits: int) -> dict[str, Any] | None:
    """``--object-mask [N:]NAME=MASK`` flags as ``{"source": {name: path}, "edits": [{name: path} or None]}``."""
    given = getattr(args, "object_mask", None) or []
    if not given:
        return None
    if getattr(args, "regions", "detected") != "masks":
        raise InputError("--object-mask needs --regions masks (BPM's regions then come from the masks)")
    source: dict[str, str] = {}
    edits: list[dict[str, str] | None] = [None] * n_edits
    for flag in given:
        where, sep, rest = flag.partition(":") if re.match(r"^\d+:", flag) else ("", "", flag)
        name, equals, path = rest.partition("=")
        if not equals or not name.strip() or not path.strip():
            raise InputError(f"--object-mask {flag!r}: expected NAME=MASK or N:NAME=MASK (N = the edit's number)")
        if not sep:
            source[name.strip()] = path.strip()
            continue
        index = int(where)
        if not 1 <= index <= n_edits:
            raise InputError(f"--object-mask {flag!r}: edit {index} does not exist (edits are numbered 1 to {n_edits})")
        edits[index - 1] = {**(edits[index - 1] or {}), name.strip(): path.strip()}
    return {"source": source, "edits": edits}


def wants_bpm(args: argparse.Namespace) -> bool:
    return bool(args.instruction or args.o1 or args.o2)


def _corrections_from_args(args: argparse.Namespace) -> dict[str, str | None]:
    """The parse fields given on the command line (None where a flag was not given)."""
    return {"o1": args.o1, "o2": args.o2, "size_state": args.size_state, "position_state": args.position_state,
            "reference": args.reference}


def parsed_from_args(args: argparse.Namespace, client: Any = None) -> ParsedInstruction:
    """The parse of --instruction with the --o1/--o2/--size-state/--position-state/--reference corrections
    applied; the corrections alone when there is no instruction or the parser refuses it."""
    from ..instructions import resolve_parse

    if not args.instruction and not (args.o1 or args.o2):
        raise InputError("BPM needs --instruction TEXT, or --o1/--o2 for a description-style target")
    return resolve_parse(args.instruction, _corrections_from_args(args), args.parser, client=client)


def report_parse(parsed: ParsedInstruction) -> None:
    """Say on stderr what a user should check: notes, unscored changes, a confidence below high."""
    if parsed.confidence in ("medium", "low") or parsed.notes or parsed.other_changes:
        warn(parsed.explain())


def llm_client(args: argparse.Namespace, settings: Settings) -> Any:
    if args.parser != "llm" or not args.instruction:
        return None
    from ..llm import OpenAICompatibleClient

    return OpenAICompatibleClient(settings)


def run(args: argparse.Namespace) -> int:
    from ..bpm import bpm_score_many
    from ..bpm.models import get_bpm_models, require_bpm_weights
    from ..io import open_image
    from ..pipeline import load_edit_mask, load_object_masks
    from ..report import UNTRAINED_WARNING

    settings = bpm_settings(args)
    parsed = parsed_from_args(args, llm_client(args, settings))
    if args.parse_only:
        print(json.dumps(parsed.to_dict(), indent=2) if args.json else parsed.explain())
        return 0
    report_parse(parsed)
    options = bpm_options(args)
    masks: dict[str, Any] = {}
    source: Any = args.source
    if options.regions == "masks":
        source = open_image(args.source)
        masks = {"object_masks": load_object_masks(object_masks_from_args(args, len(args.edited)),
                                                   source.image.size, len(args.edited)),
                 "edit_mask": load_edit_mask(args.edit_mask, source.image.size) if args.edit_mask else None}
    else:
        object_masks_from_args(args, len(args.edited))  # refuses masks given without --regions masks
        if args.edit_mask:
            raise InputError("--edit-mask needs --regions masks (BPM's regions then come from the mask)")
        require_bpm_weights(settings)  # every missing region model at once, before anything loads
    models = get_bpm_models(settings, regions=options.regions)
    results = bpm_score_many(source, args.edited, parsed=parsed, models=models, options=options, **masks)
    payload = {"source": results[0].source_name, "parse": parsed.to_dict(), "untrained": results[0].untrained,
               "edits": [{"name": r.edit_name, **r.to_dict()} for r in results]}
    if results[0].untrained:
        payload["warning"] = UNTRAINED_WARNING
    text = json.dumps(payload, indent=2, allow_nan=False, default=_json_default)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text if args.json else _format_bpm(results))
    return 0


def _json_default(value: Any) -> Any:
    return float(value) if hasattr(value, "__float__") else str(value)


def _format_bpm(results: list[BPMResult]) -> str:
    """A fixed-width table: one row per edit with BPM and every component, then the parse and notes."""
    from ..report import UNTRAINED_WARNING, edit_names

    first = results[0]
    header = ["#", "edit", "BPM", "S_sem", "S_mod", "S_mod01", "S_pres", "S_reg", "S_size", "S_pos", "overall"]
    names = edit_names([r.edit_name for r in results])
    rows = []
    for i, r in enumerate(results):
        c = r.components
        rows.append([names[i].tag, names[i].short, f"{c.bpm:.4f}", f"{c.s_semantic:.4f}", f"{c.s_modify:.4f}",
                     f"{c.s_modify_norm:.4f}", f"{c.s_preserve:.4f}", str(c.s_region), str(c.s_size),
                     str(c.s_position), f"{c.overall_raw:.4f}"])
    lines = []
    if first.untrained:
        lines.append(f"!! BPM {UNTRAINED_WARNING.upper()} !!")
    det, seg = first.models.get("detector", {}), first.models.get("segmenter", {})
    lines.append(f"models: {det.get('label', '?')} | {seg.get('label', '?')} | CLIP {first.models.get('clip', {}).get('label', '?')}")
    lines.append(f"parse ({first.parsed.parser}, {first.parsed.confidence} confidence): {first.parsed.describe()}")
    lines.extend(f"parse note: {note}" for note in first.parsed.notes)
    lines.extend(f"also asked, not scored by BPM: {change}" for change in first.parsed.other_changes)
    lines.append(f"alpha {first.options.alpha:g}, box threshold {first.options.box_threshold:g}")
    lines.append("")
    lines.extend(edit_table(header, rows, names))
    lines.append("")
    lines.append("BPM = alpha S_sem + (1-alpha) S_reg; S_sem = (S_mod+1)/2 + S_pres; overall = S_mod + S_pres + S_reg "
                 "(the paper's Fig. 4 sum)")
    lines.append("S_mod01 = (S_mod+1)/2, a fixed map for one pair: the paper min-max normalises S_mod over a whole "
                 "dataset, so BPM values here are not on the paper's dataset scale")
    for i, r in enumerate(results):
        found = ", ".join(f"{k} {'found' if v else 'NOT found'}" for k, v in r.found.items() if v is not None)
        lines.append(f"{names[i].tag}: {found}; size: {r.size.reason}; position: {r.position.reason}")
        lines.extend(f"{names[i].tag}: note: {note}" for note in r.notes)
    timings = first.timings
    lines.append("time: " + ", ".join(f"{stage} {timings.get(stage, 0.0):.2f}s" for stage in ("parse", "detect", "segment", "judge")))
    return "\n".join(lines)
