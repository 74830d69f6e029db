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


def write_results(manifest: Path, values: dict[str, dict[str, list[float]]], out: Path) -> Path:
    """A `batch`-style results file for ``manifest``: ``values[metric][item id]`` = one value per edit.

    The edits' content hashes are computed here as batch does (``open_image(...).sha256``)."""
    from augclip_demo.batch.manifest import load_manifest
    from augclip_demo.io import open_image

    records = []
    for item in load_manifest(manifest):
        edits = [{"index": i, "path": e.path, "name": e.name, "role": e.role, "sha256": open_image(e.resolved).sha256,
                  "metrics": {metric: per_item[item.id][i] for metric, per_item in values.items()}}
                 for i, e in enumerate(item.edits)]
        records.append({"id": item.id, "dataset": "study", "status": "ok", "edits": edits,
                        "human": item.human.to_dict() if item.human else None,
                        "run": {"model": "random:tiny", "untrained": True, "metrics": list(values)}})
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return out


def answer_all(db: Path, token: str, choose) -> int:
    """Answer every task of a rater through the store: ``choose(view)`` gives the answers dict."""
    from augclip_demo.study import store

    count = 0
    while (view := store.rater_view(db, token)).task is not None:
        store.submit_answer(db, token, view.task["position"], choose(view), 1000)
        count += 1
    return count
