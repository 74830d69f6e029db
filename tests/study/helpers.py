"""A small manifest of drawn pictures for study tests: items with a gt, an ep and an em edit by three models."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import draw_scene

MODELS = ("alpha", "beta", "gamma")
ROLES = ("gt", "ep", "em")
COLOURS = ("red", "green", "blue", "orange", "purple", "black", "gray", "yellow", "pink", "brown", "navy", "teal")


def write_study_manifest(folder: Path, n_items: int = 4, n_edits: int = 3) -> Path:
    """``n_items`` items, each a source and ``n_edits`` edits (distinct pictures), models alpha/beta/gamma."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n_items):
        source = f"src/{i}.png"
        (folder / "src").mkdir(exist_ok=True)
        draw_scene(shapes=[("ellipse", (10 + i, 10, 60, 60), COLOURS[i % len(COLOURS)])]).save(folder / source)
        edits = []
        for k in range(n_edits):
            path = f"out/{MODELS[k]}/{i}.png"
            (folder / "out" / MODELS[k]).mkdir(parents=True, exist_ok=True)
            draw_scene(shapes=[("rectangle", (5 * k, 5 + i, 50 + 3 * k, 70), COLOURS[(i + k + 1) % len(COLOURS)])]
                       ).save(folder / path)
            edits.append({"path": path, "name": MODELS[k], "role": ROLES[k] if n_edits == 3 else "candidate"})
        lines.append({"id": f"item-{i}", "source": source, "target_text": f"a picture with shape {i}",
                      "edits": edits, "meta": {"n": i}})
    manifest = folder / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return manifest
