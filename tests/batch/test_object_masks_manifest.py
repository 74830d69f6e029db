"""The manifest's ``object_masks`` (named objects' masks for BPM's given-mask regions and HATIE): read, checked,
written back; a BPM stage set to given masks gives an item without masks its reason; the ``bpm`` command's
``--object-mask`` flags."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.batch.manifest import load_manifest, scan_manifest
from augclip_demo.bpm import BPMOptions
from augclip_demo.cli.bpm import object_masks_from_args
from augclip_demo.errors import InputError
from augclip_demo.io import open_image
from augclip_demo.pipeline import ItemImages, load_object_masks
from augclip_demo.pipeline.stages import BpmStage
from tests.support import draw_scene

HALF_MASK = np.zeros((48, 48), dtype=bool)  # half the source's 96 x 96
HALF_MASK[5:15, 3:13] = True


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    (tmp_path / "img").mkdir()
    for name in ("src", "a", "b"):
        draw_scene().save(tmp_path / "img" / f"{name}.png")
    Image.fromarray(HALF_MASK.astype(np.uint8) * 255).save(tmp_path / "img" / "ball.png")
    return tmp_path


def _item(item_id: str, **extra) -> dict:
    return {"id": item_id, "source": "img/src.png", "target_text": "a ball", "edits": ["img/a.png", "img/b.png"],
            **extra}


def _write(root: Path, *items: dict) -> Path:
    path = root / "m.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def test_object_masks_are_read_resolved_and_written_back(root):
    masks = {"source": {"ball": "img/ball.png"}, "edits": [{"ball": "img/ball.png"}, None]}
    both, source_only = load_manifest(_write(root, _item("both", object_masks=masks),
                                             _item("source-only", object_masks={"source": {"ball": "img/ball.png"}})))
    assert both.object_mask_paths == {"source": {"ball": root / "img" / "ball.png"},
                                      "edits": [{"ball": root / "img" / "ball.png"}, None]}
    assert both.to_dict()["object_masks"] == masks
    assert source_only.object_mask_paths["edits"] == [None, None]
    size = open_image(both.source_path).image.size
    loaded = load_object_masks(both.object_mask_paths, size, 2)
    want = HALF_MASK.repeat(2, axis=0).repeat(2, axis=1)  # doubled to the source's size, nearest
    assert size == (96, 96) and np.array_equal(loaded.source["ball"], want)
    assert np.array_equal(loaded.edits[0]["ball"], want) and loaded.edits[1] is None


def test_bad_object_masks_are_all_reported(root):
    scan = scan_manifest(_write(
        root,
        _item("key", object_masks={"source": {}, "edit": []}),
        _item("count", object_masks={"edits": [{"ball": "img/ball.png"}]}),
        _item("outside", object_masks={"source": {"ball": "../ball.png"}}),
        _item("shape", object_masks=["img/ball.png"]),
        _item("missing", object_masks={"edits": [{"ball": "img/none.png"}, None]})))
    text = "\n".join(scan.problems)
    assert "object_masks: unknown key 'edit' (did you mean 'edits'?)" in text
    assert "object_masks.edits must be a list with one entry per edit (2" in text
    assert "object_masks.source['ball']" in text and ".." in text
    assert "object_masks must be an object" in text
    assert "object_masks.edits[0]['ball']" in text and "none.png" in text
    assert scan.items == 0


def test_a_bpm_stage_on_given_masks_gives_an_item_without_masks_its_reason(root):
    def no_models():
        raise AssertionError("no model may be asked for an item that cannot be scored")

    source = open_image(root / "img" / "src.png")
    item = ItemImages(source, [open_image(root / "img" / "a.png")], instruction="make the ball red", parsed=None)
    output = BpmStage(no_models, BPMOptions(regions="masks")).run(item)
    assert output.scores.values[0]["bpm"] is None
    assert "gives none: add its \"object_masks\" or an \"edit_mask\"" in output.scores.unavailable[0]["bpm"]


def test_object_mask_flags(root):
    args = argparse.Namespace(regions="masks", object_mask=["ball=s.png", "2:ball=b.png", "2:box=x.png"])
    assert object_masks_from_args(args, 2) == {"source": {"ball": "s.png"},
                                               "edits": [None, {"ball": "b.png", "box": "x.png"}]}
    with pytest.raises(InputError, match="edit 3 does not exist"):
        object_masks_from_args(argparse.Namespace(regions="masks", object_mask=["3:ball=b.png"]), 2)
    with pytest.raises(InputError, match="expected NAME=MASK"):
        object_masks_from_args(argparse.Namespace(regions="masks", object_mask=["ball"]), 2)
    with pytest.raises(InputError, match="--object-mask needs --regions masks"):
        object_masks_from_args(argparse.Namespace(regions="detected", object_mask=["ball=s.png"]), 2)
