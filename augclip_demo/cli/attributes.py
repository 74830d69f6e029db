"""``attributes``: extract source and target attributes for one (source image, target text) pair."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..choices import PROVIDER_NAMES
from ..config import ENVIRONMENT_VARIABLES, Settings
from ..errors import InputError
from .common import add_model_args, settings_from_args, terminal_progress

if TYPE_CHECKING:
    from ..attributes import Attributes
    from ..attributes.base import AttributeProvider


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "attributes", help="extract source and target attributes (manual, openai, clip-vocab)",
        description="Extract the source attributes (from the source image) and target attributes (from the target "
                    "text) that AugCLIP uses, and save them in the JSON format every command accepts.")
    parser.add_argument("--source", metavar="IMAGE", help="source image")
    parser.add_argument("--target", metavar="TEXT", help="target text (instruction or description)")
    parser.add_argument("--source-text", metavar="TEXT", help="text describing the source image (optional context)")
    parser.add_argument("--attributes", metavar="JSON", help="with --provider manual: the attributes file to load")
    parser.add_argument("--list-providers", action="store_true",
                        help="list the providers, whether each is available here, and why; then exit")
    add_provider_args(parser)
    add_model_args(parser)
    out = parser.add_argument_group("output")
    out.add_argument("--out", metavar="PATH", help="write the attributes JSON to PATH")
    out.add_argument("--json", action="store_true", help="print the attributes JSON instead of a list")
    parser.set_defaults(func=run)


def add_provider_args(parser: argparse.ArgumentParser) -> None:
    """--provider / --mllm-model / --samples / --seed / --no-cache (shared with ``score``)."""

    group = parser.add_argument_group("attribute provider")
    group.add_argument("--provider", metavar="NAME",
                       help=f"{' | '.join(PROVIDER_NAMES)} (default AUGCLIP_ATTRIBUTE_PROVIDER or clip-vocab)")
    group.add_argument("--mllm-model", metavar="NAME", help=ENVIRONMENT_VARIABLES["AUGCLIP_MLLM_MODEL"])
    group.add_argument("--samples", type=int, default=1, metavar="K",
                       help="openai: query K times with seeds SEED..SEED+K-1 and merge by frequency (default %(default)s)")
    group.add_argument("--seed", type=int, default=0, help="openai: seed of the first sample (default %(default)s)")
    group.add_argument("--no-cache", action="store_true", help="neither read nor write the attribute cache")


def provider_from_args(args: argparse.Namespace, settings: Settings, encoder: Any = None) -> AttributeProvider:
    """The provider the flags ask for (``--attributes`` with ``manual`` loads the file)."""
    from ..attributes import build_provider

    name = settings.attribute_provider
    options: dict[str, Any] = {}
    if name == "openai":
        options.update(samples=args.samples, seed=args.seed)
    elif args.samples != 1 or args.seed != 0:
        raise InputError(f"--samples and --seed apply to the openai provider only, not to {name!r}")
    if name == "manual":
        if not getattr(args, "attributes", None):
            raise InputError("--provider manual needs --attributes FILE "
                             '({"source_attributes": [...], "target_attributes": [...]})')
        options["path"] = args.attributes
    return build_provider(name, settings, encoder=encoder, use_cache=not args.no_cache, **options)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args, attribute_provider=args.provider, mllm_model=args.mllm_model)
    if args.list_providers:
        print(_format_provider_status(settings))
        return 0
    missing = [flag for flag, value in (("--source", args.source), ("--target", args.target)) if not value]
    if missing:
        raise InputError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required "
                         "(or use --list-providers)")
    provider = provider_from_args(args, settings)
    progress = terminal_progress()
    if progress is not None and "progress" in inspect.signature(provider.extract).parameters:
        attributes = provider.extract(args.source, args.target, args.source_text, progress=progress)
    else:  # manual lists: nothing to report
        attributes = provider.extract(args.source, args.target, args.source_text)
    if args.out:
        attributes.save(args.out)
    print(attributes.to_json() if args.json else _format_attributes(attributes))
    if args.out and not args.json:
        print(f"saved to {Path(args.out)}")
    return 0


def _format_attributes(attributes: Attributes) -> str:
    from ..report import UNTRAINED_WARNING

    prov = attributes.provenance
    parts = [f"provider {prov.provider}"]
    if prov.model:
        parts.append(f"model {prov.model}")
    if prov.samples and prov.samples > 1:
        parts.append(f"{prov.samples} samples from seed {prov.seed}")
    if prov.seconds is not None:
        parts.append(f"{prov.seconds:.2f} s")
    if prov.extra.get("cache"):
        parts.append(f"cache {prov.extra['cache']}")
    lines = []
    if prov.extra.get("untrained"):
        lines.append(f"!! {UNTRAINED_WARNING.upper()} !!")
    lines.append(f"{', '.join(parts)} ({prov.fidelity})")
    for label, items in (("source", attributes.source), ("target", attributes.target)):
        lines.append(f"{label} attributes ({len(items)}):")
        lines.extend(f"  - {item}" for item in items)
    return "\n".join(lines)


def _format_provider_status(settings: Settings) -> str:
    from ..attributes import provider_status

    rows = [(s.name, "yes" if s.available else "no", s.fidelity_label, s.reason) for s in provider_status(settings)]
    widths = [max(len(r[i]) for r in rows + [("provider", "available", "fidelity", "")]) for i in range(3)]
    header = ("provider", "available", "fidelity")
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  why"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + f"  {row[3]}" for row in rows]
    return "\n".join(lines)
