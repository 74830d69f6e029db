"""Manifest fields ground_truth / edit_mask / output_caption: batch runs give the Evaluator's values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.batch.manifest import validate_manifest
from augclip_demo.batch.results import iter_results
from augclip_demo.batch.runner import BatchOptions, run_batch
from augclip_demo.config import Settings
from augclip_demo.errors import ManifestError
from augclip_demo.pipeline import Attributes, Evaluator
from tests.support import TINY, draw_scene

ATTRS = {"source": ["a red ball"], "target": ["green grass"]}
KEYS = "augclip,l1_gt,l2_gt,clip_i_gt,clip_t_caption,psnr_unedited,mse_unedited,ssim_unedited"


def _files(folder: Path) -> dict[str, str]:
    (folder / "img").mkdir(parents=True, exist_ok=True)
    draw_scene((96, 96), "white", [("ellipse", (20, 20, 70, 70), "red")]).save(folder / "img" / "src.png")
    draw_scene((96, 96), "green", [("ellipse", (20, 20, 70, 70), "red")]).save(folder / "img" / "edit.png")
    draw_scene((96, 96), "green", [("ellipse", (22, 20, 72, 70), "red")]).save(folder / "img" / "gt.png")
    mask = np.zeros((96, 96), np.uint8)
    mask[60:] = 255
    Image.fromarray(mask).save(folder / "img" / "mask.png")
    return {"source": "img/src.png", "edit": "img/edit.png", "gt": "img/gt.png", "mask": "img/mask.png"}


@pytest.mark.slow  # torchmetrics in the decode workers
def test_batch_reference_metrics_equal_the_evaluator(tmp_path, tiny_encoder):
    files = _files(tmp_path)
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"id": "a", "source": files["source"], "target_text": "a red ball on grass",
                                    "edits": [files["edit"]], "attributes": ATTRS, "ground_truth": files["gt"],
                                    "edit_mask": files["mask"], "output_caption": "a red ball on green grass",
                                    "human": {"scores": [3.0]}}) + "\n")
    settings = Settings.from_env(clip_model=TINY, device="cpu")
    summary = run_batch(manifest, tmp_path / "r.jsonl", options=BatchOptions(metrics=KEYS), settings=settings,
                        encoder=tiny_encoder)
    assert summary.n_ok == 1
    (record,) = list(iter_results(tmp_path / "r.jsonl"))
    got = record["edits"][0]["metrics"]
    report = Evaluator(settings=settings, encoder=tiny_encoder).evaluate(
        tmp_path / files["source"], [tmp_path / files["edit"]], "a red ball on grass",
        attributes=Attributes(ATTRS["source"], ATTRS["target"]), ground_truth=tmp_path / files["gt"],
        output_caption="a red ball on green grass", edit_mask=tmp_path / files["mask"])
    want = report.edits[0].metrics
    for key in KEYS.split(","):
        assert got[key] is not None, key
        assert got[key] == pytest.approx(want[key], abs=1e-5), key
    # the protocol tables take them like any other metric (direction from the suite)
    from augclip_demo.batch.protocol_tables import compute_protocols

    protocols = compute_protocols(tmp_path / "r.jsonl", n_boot=0)
    assert {"l1_gt", "psnr_unedited", "clip_t_caption"} <= set(protocols.metrics)


def test_manifest_reference_fields_are_checked(tmp_path):
    files = _files(tmp_path)
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"id": "a", "source": files["source"], "target_text": "grass",
                                    "edits": [files["edit"]], "ground_truth": "img/missing.png",
                                    "edit_mask": 3, "output_caption": "fine"}) + "\n")
    with pytest.raises(ManifestError) as caught:
        validate_manifest(manifest)
    text = str(caught.value)
    assert "ground_truth 'img/missing.png': file not found" in text
    assert "edit_mask must be a path" in text
