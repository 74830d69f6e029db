"""Arguments and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..config import ENVIRONMENT_VARIABLES, PRECISIONS, Settings


def add_evaluation_inputs(parser: argparse.ArgumentParser) -> None:
    """The inputs of one evaluation (``score``, ``explain``): source, edits, texts, attributes file."""
    parser.add_argument("--source", required=True, metavar="IMAGE", help="source image")
    parser.add_argument("--edited", required=True, nargs="+", metavar="IMAGE", help="edited image(s)")
    parser.add_argument("--target", required=True, metavar="TEXT", help="target text (instruction or description)")
    parser.add_argument("--source-text", metavar="TEXT", help="text describing the source image (enables CLIPdir)")
    parser.add_argument("--attributes", metavar="JSON",
                        help='attributes file {"source_attributes": [...], "target_attributes": [...]}')


def add_model_args(parser: argparse.ArgumentParser) -> None:
    """--clip-model / --clip-checkpoint / --device / --precision / --cache-dir (override the env)."""
    group = parser.add_argument_group("model (each flag overrides its environment variable)")
    group.add_argument("--clip-model", metavar="SPEC", help=ENVIRONMENT_VARIABLES["AUGCLIP_CLIP_MODEL"])
    group.add_argument("--clip-checkpoint", metavar="PATH", help=ENVIRONMENT_VARIABLES["AUGCLIP_CLIP_CHECKPOINT"])
    group.add_argument("--device", metavar="DEVICE", help=ENVIRONMENT_VARIABLES["AUGCLIP_DEVICE"])
    group.add_argument("--precision", choices=PRECISIONS, help=ENVIRONMENT_VARIABLES["AUGCLIP_PRECISION"])
    group.add_argument("--cache-dir", metavar="DIR", help=ENVIRONMENT_VARIABLES["AUGCLIP_CACHE_DIR"])


def settings_from_args(args: argparse.Namespace, **extra: Any) -> Settings:
    return Settings.from_env(
        clip_model=getattr(args, "clip_model", None),
        clip_checkpoint=getattr(args, "clip_checkpoint", None),
        device=getattr(args, "device", None),
        precision=getattr(args, "precision", None),
        cache_dir=getattr(args, "cache_dir", None),
        **extra,
    )


def warn(message: str) -> None:
    print(message, file=sys.stderr)
