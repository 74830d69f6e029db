"""Bad inputs for the probe tables: builders of broken images, manifests, zips and JSON (no test code here)."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

from tests.support import draw_scene


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def good_png(path: Path, color: str = "red") -> Path:
    draw_scene(shapes=[("ellipse", (20, 20, 70, 70), color)]).save(path)
    return path


def write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def truncated_png() -> bytes:
    return png(draw_scene())[:200]


def noise(size: tuple[int, int]) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)


def manifest_line(**fields) -> str:
    item = {"id": "a", "source": "src.png", "target_text": "a pink flower", "edits": [{"path": "edit.png"}]}
    item.update(fields)
    return json.dumps({k: v for k, v in item.items() if v is not None})


def manifest_folder(root: Path) -> Path:
    """A folder with the two images a manifest line names."""
    root.mkdir(parents=True, exist_ok=True)
    good_png(root / "src.png")
    good_png(root / "edit.png", "blue")
    return root


def zip_of(path: Path, entries: dict[str, bytes], *, links: tuple[str, ...] = (), encrypted: tuple[str, ...] = ()
) -> Path:
    """A zip with the given entries; ``links`` become symlink entries, ``encrypted`` get the encryption flag."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            if name in links:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, data)
    if encrypted:
        raw = bytearray(path.read_bytes())
        for name in encrypted:  # set bit 0 of the general-purpose flags in both headers
            encoded = name.encode()
            for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
                start = 0
                while (start := raw.find(signature, start)) != -1:
                    name_at = start + (30 if signature == b"PK\x03\x04" else 46)
                    if raw[name_at:name_at + len(encoded)] == encoded:
                        raw[start + offset] |= 1
                    start += 4
        path.write_bytes(bytes(raw))
    return path


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def many_runs_results(path: Path, *, records: int = 3000, metrics: int = 120, per_edit: int = 40) -> Path:
    """A results file of ``records`` records, each with its own run signature, and ``metrics`` metric names
    between them (``per_edit`` in each of its two edits): the shape that made the leaderboard quadratic."""
    names = [f"metric{k:03d}" for k in range(metrics)]
    rng = np.random.default_rng(1)
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(records):
            keys = [names[(i + k) % metrics] for k in range(per_edit)]
            edits = [{"name": f"model{j}", "role": "candidate", "path": f"e{i}-{j}.png",
                      "metrics": {key: round(float(v), 6) for key, v in zip(keys, rng.random(per_edit))}}
                     for j in range(2)]
            handle.write(json.dumps({"id": f"r{i}", "status": "ok", "edits": edits, "human": {"preferred": i % 2},
                                     "run": {"model": "random:tiny", "seed": i}}) + "\n")
    return path
