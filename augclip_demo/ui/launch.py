"""``python app.py``: command-line options for the web app, each one named after its environment variable.

Every option falls back to its environment variable, then to the default, so a Space (which runs
``python app.py`` with no arguments and sets variables) and a shell (flags) configure the same
things. ``python app.py --help`` lists them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..config import CPU_MATMULS, ENVIRONMENT_VARIABLES, PRECISIONS, Settings
from ..errors import AugclipError

#: flag -> (environment variable, help). The Gradio variables are Gradio's own names.
APP_OPTIONS: dict[str, tuple[str, str]] = {
    "--clip-model": ("AUGCLIP_CLIP_MODEL", ENVIRONMENT_VARIABLES["AUGCLIP_CLIP_MODEL"]),
    "--clip-checkpoint": ("AUGCLIP_CLIP_CHECKPOINT", ENVIRONMENT_VARIABLES["AUGCLIP_CLIP_CHECKPOINT"]),
    "--device": ("AUGCLIP_DEVICE", ENVIRONMENT_VARIABLES["AUGCLIP_DEVICE"]),
    "--precision": ("AUGCLIP_PRECISION", ENVIRONMENT_VARIABLES["AUGCLIP_PRECISION"]),
    "--cpu-matmul": ("AUGCLIP_CPU_MATMUL", ENVIRONMENT_VARIABLES["AUGCLIP_CPU_MATMUL"]),
    "--allowed-models": ("AUGCLIP_ALLOWED_MODELS", ENVIRONMENT_VARIABLES["AUGCLIP_ALLOWED_MODELS"]),
    "--explore-files": ("AUGCLIP_EXPLORE_FILES", ENVIRONMENT_VARIABLES["AUGCLIP_EXPLORE_FILES"]),
    "--concurrency": ("AUGCLIP_CONCURRENCY", ENVIRONMENT_VARIABLES["AUGCLIP_CONCURRENCY"]),
    "--max-edits": ("AUGCLIP_MAX_EDITS", ENVIRONMENT_VARIABLES["AUGCLIP_MAX_EDITS"]),
    "--host": ("GRADIO_SERVER_NAME", "address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)"),
    "--port": ("GRADIO_SERVER_PORT", "port to listen on (default 7860, or the next free one)"),
    "--share": ("GRADIO_SHARE", "also open a public gradio.live link (true / false; default false)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python app.py",
        description="AugCLIP Studio web app. Every option overrides its environment variable (shown in "
                    "brackets); other settings (upload limits, caches, providers) are environment variables only.",
    )
    for flag, (variable, text) in APP_OPTIONS.items():
        kwargs: dict[str, Any] = {"help": f"{text} [{variable}]"}
        if flag == "--precision":
            kwargs["choices"] = PRECISIONS
        elif flag == "--cpu-matmul":
            kwargs["choices"] = CPU_MATMULS
        elif flag in ("--concurrency", "--max-edits", "--port"):
            kwargs["type"] = int
            kwargs["metavar"] = "N"
        elif flag == "--share":
            kwargs.update(action=argparse.BooleanOptionalAction, default=None)
        else:
            kwargs["metavar"] = {"--clip-model": "SPEC", "--clip-checkpoint": "PATH", "--device": "DEVICE",
                                 "--allowed-models": "SPEC,SPEC,...", "--host": "ADDRESS",
                                 "--explore-files": "RESULTS[=MANIFEST],..."}[flag]
        parser.add_argument(flag, **kwargs)
    return parser


def settings_from(args: argparse.Namespace, env: dict[str, str] | None = None) -> Settings:
    """The app's settings: environment first, then the flags that were given."""
    return Settings.from_env(env, clip_model=args.clip_model, clip_checkpoint=args.clip_checkpoint,
                             device=args.device, precision=args.precision, cpu_matmul=args.cpu_matmul,
                             allowed_models=args.allowed_models, explore_files=args.explore_files,
                             concurrency=args.concurrency, max_edits=args.max_edits)


def server_options(args: argparse.Namespace, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``demo.launch`` arguments for the address, port and share link (flags, else Gradio's variables)."""
    env = dict(os.environ) if env is None else env
    share = args.share
    if share is None and env.get("GRADIO_SHARE", "").strip():
        share = env["GRADIO_SHARE"].strip().lower() in ("1", "true", "yes", "on")
    return {"server_name": args.host or env.get("GRADIO_SERVER_NAME") or None,
            "server_port": args.port or None, "share": share}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options, build the app and serve it (blocks until the server stops)."""
    from .app import build_app, launch_kwargs

    args = build_parser().parse_args(argv)
    try:
        settings = settings_from(args)
        demo = build_app(settings)
    except AugclipError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if os.environ.get("SPACE_ID"):  # a Hugging Face Space: the page's models (CLIP, its BPM preset), ahead
        from ..inference.needs import page_models, web_app_settings
        from ..inference.prefetch import prefetch_in_background
        from .app import _cuda_available

        page = web_app_settings(settings, cuda=_cuda_available(), environ=os.environ)
        prefetch_in_background(page, page_models(page))
        if settings.attribute_provider == "clip-vocab":  # no store built ahead: build it before the first user
            from ..attributes.clip_vocab import build_store_in_background

            build_store_in_background(settings)
    demo.launch(**{**launch_kwargs(settings, demo), **server_options(args)})
    return 0
