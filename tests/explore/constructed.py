"""A constructed batch run for the Explore tests: known values, known winners, known disagreements.

Dataset ``toy``: 12 items, each edited by models A, B and C (role candidate), metrics ``augclip`` (higher is
better) and ``l2`` (lower is better), human 2AFC choices on every item and per-edit scores on the even
ones. Items 0 and 1 are built so that AugCLIP's winner is A and L2's winner is B (a disagreement), item 2
so that both pick C and the humans pick A. Dataset ``trip``: 4 gt / ep / em triplets (AccBoth). One failed
item. Values carry 15 significant digits so that any rounding on the way to the page shows.
Images (when ``images`` is given): one small PNG per source and edit, written under the manifest's folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

MODELS = ("A", "B", "C")
RUN = {"model": "random:tiny", "untrained": True, "precision": "fp32", "matmul": "blas",
       "metrics": ["augclip", "l2"], "options": {"classifier": "svm", "C": 1.0}, "version": "9.9-test"}


def _value(rng: np.random.Generator, center: float) -> float:
    return float(f"{center + rng.normal(scale=0.3):.15g}")


def constructed_records(run: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    run = run or RUN
    records = []
    for i in range(12):
        quality = {"A": 0.9, "B": 0.5, "C": 0.1}
        augclip = {m: _value(rng, q) for m, q in quality.items()}
        l2 = {m: abs(_value(rng, 1 - q)) for m, q in quality.items()}
        if i in (0, 1):  # AugCLIP picks A, L2 picks B
            augclip.update(A=1.234567890123456, B=0.5, C=0.25)
            l2.update(A=0.9, B=0.111111111111111, C=0.7)
        if i == 2:  # both pick C, the humans A
            augclip.update(A=0.2, B=0.3, C=0.987654321098765)
            l2.update(A=0.8, B=0.6, C=0.05)
        edits = [{"index": j, "path": f"edits/{m}/{i}.png", "name": m, "role": "candidate", "sha256": None,
                  "metrics": {"augclip": augclip[m], "l2": l2[m]}, "unavailable": {}} for j, m in enumerate(MODELS)]
        human: dict[str, Any] = {"preferred": 0 if i in (2, 5, 7) else int(np.argmax([augclip[m] for m in MODELS]))}
        if i % 2 == 0:
            human["scores"] = [float(5 - 2 * j + (i % 3) * 0.25 * j) for j in range(3)]
        attributes = {"source_attributes": ["a plain toy", "a grey floor"], "target_attributes": ["a red toy"],
                      "provenance": {"provider": "manual"}}
        records.append({"id": f"toy-{i}", "dataset": "toy", "status": "ok", "source": f"src/{i}.png",
                        "target_text": "a toy", "source_text": "a plain toy", "instruction": None, "edits": edits,
                        "human": human, "attributes": attributes, "meta": None, "run": run})
    for i in range(4):
        values = {"gt": 0.8 - 0.1 * (i == 3), "ep": 0.6 + 0.3 * (i == 3), "em": 0.2}
        edits = [{"index": j, "path": f"edits/{role}/{i}.png", "name": f"m-{role}", "role": role, "sha256": None,
                  "metrics": {"augclip": values[role], "l2": 1 - values[role]}, "unavailable": {}}
                 for j, role in enumerate(("gt", "ep", "em"))]
        records.append({"id": f"trip-{i}", "dataset": "trip", "status": "ok", "source": f"src/t{i}.png",
                        "target_text": "a toy", "source_text": None, "instruction": None, "edits": edits,
                        "human": None, "attributes": None, "meta": None, "run": run})
    records.append({"id": "broken", "dataset": "toy", "status": "error", "error": "image unreadable",
                    "source": "src/x.png", "target_text": "a toy",
                    "edits": [{"index": 0, "path": "edits/A/x.png", "name": "A", "role": "candidate"}],
                    "human": None, "meta": None, "run": run})
    return records


def write_jsonl(records: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_manifest_with_images(records: list[dict[str, Any]], folder: Path) -> Path:
    """A manifest of the records' items (edit types on the toy items) and a small picture for every path."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, record in enumerate(records):
        paths = [record["source"]] + [edit["path"] for edit in record["edits"]]
        for k, relative in enumerate(paths):
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            color = ((37 * n) % 256, (91 * k) % 256, (53 * (n + k)) % 256)
            Image.new("RGB", (48, 40), color).save(target)
        item = {"id": record["id"], "source": record["source"], "target_text": record["target_text"],
                "dataset": record["dataset"],
                "edits": [{"path": e["path"], "name": e["name"], "role": e["role"]} for e in record["edits"]]}
        if record.get("human"):
            item["human"] = record["human"]
        if record["dataset"] == "toy":
            item["edit_type"] = "add" if n % 2 else "remove"
        lines.append(json.dumps(item))
    manifest = folder / "manifest.jsonl"
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return manifest
