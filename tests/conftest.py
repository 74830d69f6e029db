"""Shared fixtures: the tiny random CLIP model and small drawn images (all offline)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

# Keep every test offline and out of the user's real cache.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

TINY = "random:tiny"


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("augclip-cache")
    os.environ["AUGCLIP_CACHE_DIR"] = str(cache)
    return cache


@pytest.fixture(scope="session")
def tiny_encoder():
    from augclip_demo.inference import ClipEncoder

    return ClipEncoder(TINY, device="cpu").load()


def draw_scene(size: tuple[int, int] = (96, 96), background: str = "white", shapes: list[tuple] | None = None) -> Image.Image:
    """A small synthetic picture: a background colour and a list of (kind, box, colour) shapes."""
    image = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(image)
    for kind, box, colour in shapes or []:
        getattr(draw, kind)(box, fill=colour)
    return image


@pytest.fixture()
def scene_files(tmp_path: Path) -> dict[str, Path]:
    """A source image and three edits (faithful, barely changed, replaced) saved as PNG files."""
    source = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")])
    faithful = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red"), ("rectangle", (0, 72, 96, 96), "green")])
    preserved = Image.fromarray(np.clip(np.asarray(source, dtype=np.int16) + 2, 0, 255).astype(np.uint8))
    replaced = draw_scene((120, 90), "navy", [("rectangle", (10, 10, 60, 60), "yellow")])
    paths = {}
    for name, image in {"source": source, "faithful": faithful, "preserved": preserved, "replaced": replaced}.items():
        paths[name] = tmp_path / f"{name}.png"
        image.save(paths[name])
    return paths
