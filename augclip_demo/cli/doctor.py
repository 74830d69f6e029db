"""``doctor``: which models are here, their sizes and licences, the device, and what is missing."""

from __future__ import annotations

import argparse
import os
import platform

from ..config import ENVIRONMENT_VARIABLES, Settings
from ..errors import AugclipError
from .common import settings_from_args
from .download import human_size


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor", help="check the set-up: device, caches, which model weights are present and which are missing",
        description="Report the device, the caches and the hub endpoint, then for the configured models and every "
                    "model in the table of supported models whether its weights are on disk (size, licence, path). "
                    "Touches no network. Exit status 0 when the configured models are all present, 1 otherwise.")
    parser.add_argument("--clip-model", metavar="SPEC", help=ENVIRONMENT_VARIABLES["AUGCLIP_CLIP_MODEL"])
    parser.add_argument("--clip-checkpoint", metavar="PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_CLIP_CHECKPOINT"])
    parser.add_argument("--gdino-model", metavar="ID|PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_GDINO_MODEL"])
    parser.add_argument("--sam-model", metavar="NAME", help=ENVIRONMENT_VARIABLES["AUGCLIP_SAM_MODEL"])
    parser.add_argument("--device", metavar="DEVICE", help=ENVIRONMENT_VARIABLES["AUGCLIP_DEVICE"])
    parser.add_argument("--cache-dir", metavar="DIR", help=ENVIRONMENT_VARIABLES["AUGCLIP_CACHE_DIR"])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from ..bpm.models import preset_weights
    from ..inference.device import device_description, resolve_device
    from ..inference.prefetch import fetch_model
    from ..inference.weights import fetch, table

    settings = settings_from_args(args, gdino_model=args.gdino_model, sam_model=args.sam_model)
    try:
        device = device_description(resolve_device(settings.device))
    except AugclipError as exc:
        device = f"unusable: {exc}"
    print("system")
    print(f"  python {platform.python_version()}, torch {torch.__version__}, "
          f"CUDA {'available (' + str(torch.cuda.device_count()) + ' GPU)' if torch.cuda.is_available() else 'not available'}")
    print(f"  device: {device} (AUGCLIP_DEVICE={settings.device})")
    print(f"  cache: {settings.cache_dir}; Hugging Face cache: {fetch.standard_hub_cache()}")
    print(f"  hub endpoint: {fetch.hub_endpoint()}; offline mode: {'on' if fetch.hub_offline() else 'off'}; "
          f"HF_TOKEN {'set' if os.environ.get('HF_TOKEN') else 'not set'}")

    configured = [("clip", settings.clip_model), *preset_weights(settings)]
    rows = list(configured) + [(e.family, e.spec) for e in table.PRETRAINED if (e.family, e.spec) not in configured]
    missing_configured: list[str] = []
    print("models (* = configured)")
    for family, spec in rows:
        entry = table.pretrained_entry(family, spec)
        mark = "*" if (family, spec) in configured else " "
        licence = entry.licence if entry else "see the model's page"
        try:
            with fetch.local_only():
                fetched = fetch_model(family, spec, settings, progress=False)
        except AugclipError as exc:
            expected = f"about {entry.size_mb:,.0f} MiB" if entry else "size unknown"
            print(f" {mark} {family:5s} {spec}: MISSING ({expected}; {licence})")
            if mark == "*":
                missing_configured.append(f"{family} {spec}")
                print(f"      {getattr(exc, 'tried', str(exc))[:300]}")
            continue
        size = sum(p.stat().st_size for p in fetched.files)
        where = fetched.files[0].parent if fetched.files else "-"
        note = f"; {fetched.note}" if fetched.note else ""
        print(f" {mark} {family:5s} {spec}: present, {human_size(size)} ({licence}{note}) in {where}")
    _print_offline()
    _print_features(settings, cuda=torch.cuda.is_available())
    if missing_configured:
        print(f"missing: {', '.join(missing_configured)}; the commands above fetch them on a machine with internet "
              "(or copy a filled AUGCLIP_CACHE_DIR), or run offline with one of the models listed under "
              "'offline CLIP models'.")
        return 1
    print("all configured models are present")
    return 0


def _print_offline() -> None:
    """The CLIP models that need no download (--clip-model SPEC), what their scores are worth, and whether a
    shipped model's files are in this installation."""
    from ..inference.families import offline_clip_models

    print("offline CLIP models (no download: --clip-model SPEC)")
    for model in offline_clip_models():
        if model.folder is None:
            state = "built in"
        elif model.present:
            state = f"present in {model.folder}"
        else:
            state = f"files not present (expected in {model.folder}; training/train_shapes_clip.py writes them)"
        print(f"  {model.spec} ({state}): {model.what}")


def _print_features(settings: Settings, *, cuda: bool) -> None:
    """Per feature: ready, or what it lacks and the one command that fetches it (the table in inference.needs)."""
    from ..inference.needs import FEATURES, MissingModel, missing_line, missing_on_disk, web_app_settings

    page = web_app_settings(settings, cuda=cuda, environ=os.environ)
    print("features (the models each needs)")
    rows = [(FEATURES[key], settings, key) for key in FEATURES]
    if page.bpm_preset != settings.bpm_preset:  # the page on a machine without CUDA runs BPM's fast preset
        rows.insert(2, (f"BPM in the web app ({page.bpm_preset} preset without a GPU)", page, "bpm"))
    for title, feature_settings, key in rows:
        lacking = missing_on_disk(feature_settings, key)
        if not lacking:
            print(f"  {title}: ready")
            continue
        line = missing_line(feature_settings, key, [MissingModel(need, "") for need in lacking])
        print(f"  {title}: {line.split(' needs ', 1)[1]}")
