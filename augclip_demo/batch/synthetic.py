"""Synthetic manifests with drawn images: for the speed benchmark, demos and tests (no data needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

COLORS = ["red", "green", "blue", "yellow", "purple", "orange", "white", "black", "pink", "brown", "grey", "cyan"]
SHAPES = ["ball", "box", "disc", "block", "ring", "tile"]
_PLACES = ["a lawn", "a beach", "a street", "a kitchen", "a forest", "a desk", "a snowfield", "a lake"]


def _draw_picture(rng: np.random.Generator, size: int, shapes: int = 3) -> Image.Image:
    """A random picture: a background colour and a few filled ellipses / rectangles."""
    background = tuple(int(c) for c in rng.integers(0, 256, size=3))
    image = Image.new("RGB", (size, size), background)
    draw = ImageDraw.Draw(image)
    for _ in range(shapes):
        x0, y0 = (int(v) for v in rng.integers(0, size * 3 // 4, size=2))
        x1, y1 = x0 + int(rng.integers(size // 8, size // 2)), y0 + int(rng.integers(size // 8, size // 2))
        color = tuple(int(c) for c in rng.integers(0, 256, size=3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)((x0, y0, x1, y1), fill=color)
    return image


def _edit_picture(rng: np.random.Generator, source: Image.Image, strength: float) -> Image.Image:
    """A drawn 'edit' of ``source``: a new shape, plus a global colour shift for stronger edits."""
    image = source.copy()
    size = image.size[0]
    draw = ImageDraw.Draw(image)
    x0, y0 = (int(v) for v in rng.integers(0, size // 2, size=2))
    extent = max(4, int(size * (0.2 + 0.6 * strength)))
    color = tuple(int(c) for c in rng.integers(0, 256, size=3))
    draw.rectangle((x0, y0, x0 + extent, y0 + extent), fill=color)
    if strength > 0.5:
        shifted = np.asarray(image, dtype=np.int16) + rng.integers(-60, 60, size=3)
        image = Image.fromarray(np.clip(shifted, 0, 255).astype(np.uint8))
    return image


def write_synthetic_manifest(folder: str | Path, n_items: int = 200, *, n_edits: int = 2, n_attributes: int = 8,
                             image_size: int = 96, seed: int = 0, human: bool = True,
                             image_format: str = "png", dataset: str | None = None) -> Path:
    """Draw ``n_items`` items (a source, ``n_edits`` edits, inline attributes) into ``folder``.

    Each item's attribute texts are specific to it (as MLLM attributes are), so text dedupe does
    not make a benchmark on these manifests look faster than a real one. Edits are named
    ``model-1``, ``model-2``...; with ``human`` every item carries a made-up 2AFC choice and scores
    (only for exercising the protocols; they say nothing about any metric).
    """
    folder = Path(folder)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    path = folder / "manifest.jsonl"
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for index in range(n_items):
            source = _draw_picture(rng, image_size)
            src_name = f"images/{index:05d}-source.{image_format}"
            source.save(folder / src_name)
            color, shape, place = (COLORS[rng.integers(len(COLORS))], SHAPES[rng.integers(len(SHAPES))],
                                    _PLACES[rng.integers(len(_PLACES))])
            new_color = COLORS[(COLORS.index(color) + 1 + int(rng.integers(len(COLORS) - 1))) % len(COLORS)]
            edits = []
            for e in range(n_edits):
                edit = _edit_picture(rng, source, strength=(e + 1) / (n_edits + 1))
                name = f"images/{index:05d}-edit{e + 1}.{image_format}"
                edit.save(folder / name)
                edits.append({"path": name, "name": f"model-{e + 1}", "role": "candidate"})
            item = {
                "id": f"item-{index:05d}",
                "source": src_name,
                "target_text": f"a {new_color} {shape} on {place}",
                "source_text": f"a {color} {shape} on {place}",
                "instruction": f"make the {shape} {new_color}",
                "edits": edits,
                "attributes": {
                    "source": [f"a {color} {shape} number {index} detail {k}" for k in range(n_attributes)],
                    "target": [f"a {new_color} {shape} number {index} detail {k}" for k in range(n_attributes)],
                },
            }
            if dataset:
                item["dataset"] = dataset
            if human:
                item["human"] = {"preferred": int(rng.integers(n_edits)),
                                 "scores": [float(rng.integers(1, 6)) for _ in range(n_edits)]}
            handle.write(json.dumps(item) + "\n")
    return path
