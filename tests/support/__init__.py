"""Helpers shared by the tests: constants, small drawn images, free ports (fixtures are in conftest.py)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from PIL import Image, ImageDraw

TINY = "random:tiny"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "assets" / "examples"
APP_UPLOAD_LIMIT_MB = 1
# The app's batch zip limits in the tests (small, so the tests can cross each one cheaply).
APP_ZIP_LIMITS = {"AUGCLIP_UPLOAD_MAX_ZIP_MB": "4", "AUGCLIP_UPLOAD_MAX_FILES": "100",
                  "AUGCLIP_UPLOAD_MAX_UNZIPPED_MB": "16"}


def draw_scene(size: tuple[int, int] = (96, 96), background: str = "white", shapes: list[tuple] | None = None) -> Image.Image:
    """A small synthetic picture: a background color and a list of (kind, box, color) shapes."""
    image = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(image)
    for kind, box, color in shapes or []:
        getattr(draw, kind)(box, fill=color)
    return image


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def artifacts_folder(name: str) -> Path:
    """``test-artifacts/NAME`` at the repository root (git-ignored; ``AUGCLIP_TEST_ARTIFACTS`` moves the root),
    made: where browser tests leave their screenshots to look at."""
    folder = Path(os.environ.get("AUGCLIP_TEST_ARTIFACTS") or ROOT / "test-artifacts") / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def usable_cpus() -> int:
    """The cores this process may run on (its affinity mask on Linux, every core elsewhere)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
