"""``download``: fetch every weight file the configuration needs, verify it, say where it went."""

from __future__ import annotations

import argparse
import sys
from urllib.parse import urlparse

from ..config import ENVIRONMENT_VARIABLES, Settings
from ..errors import AugclipError, WeightsUnavailableError
from .common import settings_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "download", help="fetch the model weights the configuration needs (then run offline)",
        description="Download (or find in the caches) every weight file the configured models need, check each "
                    "file (complete, and its SHA-256 where one is known or AUGCLIP_SAM_SHA256 is set) and print where "
                    "it is. Without options: the configured CLIP model. Runs after this one work with "
                    "HF_HUB_OFFLINE=1.")
    parser.add_argument("--clip", action="append", metavar="SPEC", help="a CLIP spec to fetch (repeatable; "
                        "default: AUGCLIP_CLIP_MODEL)")
    parser.add_argument("--bpm", action="store_true", help="also GroundingDINO and SAM (the BPM region models)")
    parser.add_argument("--bpm-fast", action="store_true", help="also OWL-ViT and SAM 2.1 Hiera-Tiny (the "
                        "models of the fast BPM preset, AUGCLIP_BPM_PRESET=fast)")
    parser.add_argument("--hatie", action="store_true", help="also HATIE's models: GroundingDINO and SAM "
                        "(whatever the BPM preset), its own CLIP, DINOv2 and the LPIPS backbone (AUGCLIP_HATIE_CLIP, "
                        "AUGCLIP_HATIE_DINO, AUGCLIP_HATIE_LPIPS)")
    parser.add_argument("--vocab", action="store_true", help="also encode the clip-vocab attribute vocabulary "
                        "with each CLIP model into AUGCLIP_CACHE_DIR/clip_vocab (the offline provider then "
                        "starts without encoding; minutes on a small CPU, done once per model)")
    parser.add_argument("--all", action="store_true", help="every model in the table of supported models "
                        "(docs: models and weights); several GB")
    group = parser.add_argument_group("models and places (each flag overrides its environment variable)")
    group.add_argument("--clip-checkpoint", metavar="PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_CLIP_CHECKPOINT"])
    group.add_argument("--gdino-model", metavar="ID|PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_GDINO_MODEL"])
    group.add_argument("--sam-model", metavar="NAME", help=ENVIRONMENT_VARIABLES["AUGCLIP_SAM_MODEL"])
    group.add_argument("--cache-dir", metavar="DIR", help=ENVIRONMENT_VARIABLES["AUGCLIP_CACHE_DIR"])
    parser.set_defaults(func=run)


def _wanted_models(settings: Settings, clip: list[str] | None, bpm: bool, everything: bool,
                  bpm_fast: bool = False, hatie: bool = False) -> list[tuple[str, str]]:
    """``(family, spec)`` pairs to fetch, in order, without duplicates (``bpm``: the configured preset's;
    the models of each feature come from :mod:`augclip_demo.inference.needs`)."""
    from ..inference.needs import bpm_region_models, models_needed
    from ..inference.weights.table import PRETRAINED

    wanted: list[tuple[str, str]] = [("clip", spec) for spec in (clip or [settings.clip_model])]
    needs = (bpm_region_models(settings) if bpm or everything else []) +\
        (bpm_region_models(settings, "fast") if bpm_fast else []) +\
        (models_needed(settings, "hatie", with_clip=False) if hatie else [])
    wanted += [(need.family, need.spec) for need in needs]
    if everything:
        wanted += [(entry.family, entry.spec) for entry in PRETRAINED]
    return list(dict.fromkeys(wanted))


def human_size(n_bytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n_bytes < 1024 or unit == "GiB":
            return f"{n_bytes:,.0f} {unit}" if unit == "B" else f"{n_bytes:,.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:,.1f} GiB"


def run(args: argparse.Namespace) -> int:
    from ..inference.needs import ModelNeed, model_source, unreachable_cause
    from ..inference.prefetch import fetch_model

    settings = settings_from_args(args, gdino_model=args.gdino_model, sam_model=args.sam_model)
    failures: list[str] = []
    causes: dict[str, None] = {}  # each network cause once, in the order met
    hosts: dict[str, str | None] = {}
    fetched_ok: set[tuple[str, str]] = set()
    total = 0
    for family, spec in _wanted_models(settings, args.clip, args.bpm, args.all, args.bpm_fast, args.hatie):
        try:
            fetched = fetch_model(family, spec, settings)
        except WeightsUnavailableError as exc:
            failures.append(f"{family} {spec}")
            source = model_source(ModelNeed(family, spec))
            cause = unreachable_cause(source, hosts) if source else None
            if cause is not None:  # the same for every model from that host: said once, at the end
                host = urlparse(source).netloc
                offline = "HF_HUB_OFFLINE" in cause
                causes[cause if offline else f"{host}: {cause}"] = None
                why = "offline mode" if offline else f"{host} cannot be reached"
                print(f"{family:5s} {spec}: FAILED, not in the caches ({why})", file=sys.stderr)
            else:
                print(f"{family:5s} {spec}: FAILED: {_short(exc.tried, 240)}", file=sys.stderr)
            continue
        print(f"{family:5s} {spec}", file=sys.stderr)
        fetched_ok.add((family, spec))
        for path in fetched.files:
            size = path.stat().st_size
            total += size
            print(f"  {human_size(size):>10s}  {path}")
        print(f"  ok: {fetched.model}" + (f" ({fetched.note})" if fetched.note else ""))
    if args.vocab:
        for _, spec in _wanted_models(settings, args.clip, False, False):
            if ("clip", spec) not in fetched_ok:
                continue
            failure = _build_vocabulary(settings, spec)
            if failure:
                failures.append(f"vocab {spec}")
    print(f"{human_size(total)} in the caches for these models; AUGCLIP_CACHE_DIR is {settings.cache_dir}")
    if failures:
        print(f"{len(failures)} model(s) could not be fetched.", file=sys.stderr)
        for cause in causes:
            print(f"cause: {cause}", file=sys.stderr)
        if causes:
            print("Run this command where there is internet, then copy AUGCLIP_CACHE_DIR and the Hugging Face cache "
                  "here (docs/models.md).", file=sys.stderr)
        return 2
    return 0


def _short(text: str, limit: int) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 1] + "\u2026"


def _build_vocabulary(settings: Settings, spec: str) -> str | None:
    """Build (or find) the clip-vocab embedding store of CLIP ``spec``; None, or the failure message."""
    from ..attributes.clip_vocab import build_vocabulary_store, vocabulary_cache_file

    print(f"vocab {spec}", file=sys.stderr)
    last = [0.0]

    def progress(fraction: float, message: str) -> None:
        if fraction >= 1.0 or fraction - last[0] >= 0.05:  # a line per 5 %
            last[0] = fraction
            print(f"  {message}", file=sys.stderr)

    try:
        vocab = build_vocabulary_store(settings, spec, progress=progress)
    except AugclipError as exc:
        print(f"  FAILED: {exc}", file=sys.stderr)
        return str(exc)
    assert vocab is not None
    from ..attributes.clip_vocab import model_identity
    from ..inference.clip_encoder import get_encoder

    path = vocabulary_cache_file(settings.cache_dir, model_identity(get_encoder(settings, clip_model=spec)),
                                 vocab.vocabulary)
    print(f"  {len(vocab.vocabulary)} phrases ({vocab.origin}, {vocab.seconds:.1f} s)  {path}")
    return None
