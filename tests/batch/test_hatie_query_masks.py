"""The source masks of HATIE's own benchmark (an item's ``meta.hatie.masks``): read only when HATIE runs, and
only from inside the manifest's folder, like every other file a manifest names."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.batch.benchmarks.hatie_bench import hatie_query
from augclip_demo.batch.manifest import load_manifest
from augclip_demo.batch.results import iter_results
from augclip_demo.batch.runner import BatchOptions, BatchRunner
from augclip_demo.config import Settings
from augclip_demo.errors import InputError
from tests.support import TINY, draw_scene

BALL = [("ellipse", (20, 20, 60, 60), "red")]


def _manifest(root: Path, masks: dict[str, str]) -> Path:
    """One item in ``root/data`` (a subfolder, so ``..`` leaves it) whose meta names ``masks``."""
    data = root / "data"
    (data / "img").mkdir(parents=True)
    draw_scene((64, 48), shapes=BALL).save(data / "img" / "src.png")
    draw_scene((64, 48), shapes=[("ellipse", (20, 20, 60, 60), "blue")]).save(data / "img" / "blue.png")
    item = {"id": "q1", "source": "img/src.png", "target_text": "a blue ball", "instruction": "make the ball blue",
            "edit_type": "attribute", "edits": [{"path": "img/blue.png", "name": "m"}],
            "meta": {"hatie": {"query_id": "1", "type": "attribute", "target": "ball", "after": "blue",
                               "masks": masks}}}
    path = data / "manifest.jsonl"
    path.write_text(json.dumps(item) + "\n")
    return path


def _outside(root: Path) -> str:
    """A readable mask outside the manifest's folder, named from inside it."""
    Image.fromarray(np.full((48, 64), 255, np.uint8)).save(root / "outside.png")
    return "../outside.png"


def _run(manifest: Path, metrics: str, encoder) -> dict:
    settings = Settings.from_env({}, clip_model=TINY, device="cpu", gdino_model="random:tiny", sam_model="random:tiny")
    out = manifest.parent / "results.jsonl"
    BatchRunner(manifest, out, options=BatchOptions(metrics=metrics, hatie_features=None), settings=settings,
                encoder=encoder, show_progress=False).run()
    (record,) = list(iter_results(out))
    return record


def test_masks_are_not_read_when_hatie_is_off(tmp_path, tiny_encoder):
    manifest = _manifest(tmp_path, {"ball": "masks/missing.png", "box": _outside(tmp_path)})
    record = _run(manifest, "clip_i,l2", tiny_encoder)
    assert record["status"] == "ok", record.get("error")
    assert record["edits"][0]["metrics"]["l2"] is not None


def test_with_hatie_on_a_mask_outside_the_folder_is_refused_naming_the_field(tmp_path, tiny_encoder):
    manifest = _manifest(tmp_path, {"ball": _outside(tmp_path)})
    record = _run(manifest, "hatie_of", tiny_encoder)
    assert record["status"] == "error"
    assert "meta.hatie.masks['ball']" in record["error"] and "'..'" in record["error"]


def test_hatie_query_reads_masks_inside_and_refuses_the_rest(tmp_path):
    manifest = _manifest(tmp_path, {"ball": "masks/ball.png"})
    (manifest.parent / "masks").mkdir()
    wanted = np.zeros((48, 64), bool)
    wanted[20:40, 10:30] = True
    Image.fromarray(wanted.astype(np.uint8) * 255).save(manifest.parent / "masks" / "ball.png")
    (item,) = load_manifest(manifest)
    assert item.root == manifest.parent.resolve()
    query = hatie_query(item)
    assert query is not None and query.target == "ball" and query.after == "blue"
    assert np.array_equal(query.source_masks["ball"], wanted)

    (tmp_path / "elsewhere.png").write_bytes((manifest.parent / "masks" / "ball.png").read_bytes())
    (manifest.parent / "masks" / "link.png").symlink_to(tmp_path / "elsewhere.png")
    refused = {"/etc/passwd": "is absolute", "../elsewhere.png": "contains '..'",
               "masks/link.png": "points outside the manifest's folder"}
    for rel, why in refused.items():
        item.meta["hatie"]["masks"] = {"ball": rel}
        with pytest.raises(InputError, match=why) as caught:
            hatie_query(item)
        assert str(caught.value).startswith("meta.hatie.masks['ball']")
    item.meta["hatie"]["masks"] = {"ball": "masks/missing.png"}
    with pytest.raises(InputError, match=r"meta.hatie.masks\['ball'\] 'masks/missing.png' cannot be read"):
        hatie_query(item)
    item.meta["hatie"]["masks"] = ["masks/ball.png"]
    with pytest.raises(InputError, match="meta.hatie.masks must be an object"):
        hatie_query(item)


def test_a_damaged_mask_or_a_bad_foreground_is_an_input_error_naming_the_field(tmp_path):
    manifest = _manifest(tmp_path, {"ball": "masks/ball.png"})
    (manifest.parent / "masks").mkdir()
    good = Image.fromarray(np.zeros((48, 64), np.uint8))
    good.save(manifest.parent / "masks" / "ball.png")
    data = (manifest.parent / "masks" / "ball.png").read_bytes()
    (manifest.parent / "masks" / "ball.png").write_bytes(data[:60])  # a PNG cut inside its image data
    (item,) = load_manifest(manifest)
    with pytest.raises(InputError, match=r"meta.hatie.masks\['ball'\] 'masks/ball.png' cannot be read as an image"):
        hatie_query(item)
    good.save(manifest.parent / "masks" / "ball.png")
    for bad in ("ball", 3, ["ball", 3]):
        item.meta["hatie"]["foreground"] = bad
        with pytest.raises(InputError, match="meta.hatie.foreground must be a list of object names"):
            hatie_query(item)
    item.meta["hatie"]["foreground"] = ["ball"]
    assert hatie_query(item).foreground == ("ball",)
