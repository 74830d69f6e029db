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


NETWORK_KEYS = "dino_gt,structure_distance,lpips_unedited,psnr_unedited"


@pytest.mark.slow  # DINO / LPIPS from the local hub, torchmetrics
def test_batch_feature_metrics_equal_the_evaluator(tmp_path, tiny_encoder, hub, hub_features, online):
    """dino_gt, structure_distance and lpips_unedited (tiny random networks served by the local hub, as
    published) in a batch run equal Evaluator.add_references on the same images, mask and networks."""
    from augclip_demo.batch.results import read_resume_state
    from augclip_demo.batch.runner import BatchRunner
    from augclip_demo.errors import InputError
    from augclip_demo.io import open_image
    from augclip_demo.pipeline import FeatureNetworks
    from tests.support import published

    files = _files(tmp_path)
    draw_scene((96, 96), "green", [("rectangle", (20, 20, 70, 70), "blue")]).save(tmp_path / "img" / "edit2.png")
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"id": "a", "source": files["source"], "target_text": "a red ball on grass",
                                    "edits": [files["edit"], "img/edit2.png"], "attributes": ATTRS,
                                    "ground_truth": files["gt"], "edit_mask": files["mask"]}) + "\n")
    settings = Settings.from_env(clip_model=TINY, device="cpu").replace(cache_dir=online,
                                                                         file_mirror=f"{hub.url}/files")
    networks = FeatureNetworks(dino=published.DINO_REPO, structure=published.DINO_REPO, lpips="squeeze")
    out = tmp_path / "r.jsonl"
    summary = run_batch(manifest, out, options=BatchOptions(metrics=NETWORK_KEYS, networks=networks),
                        settings=settings, encoder=tiny_encoder)
    assert summary.n_ok == 1, summary.failures
    (record,) = list(iter_results(out))
    assert record["run"]["features"] == {"dino_gt": published.DINO_REPO, "structure_distance": published.DINO_REPO,
                                         "lpips_unedited": "squeeze", "structure_pixel_scale": 255.0}
    evaluator = Evaluator(settings=settings, encoder=tiny_encoder, networks=networks)
    arrays = evaluator.embed(open_image(tmp_path / files["source"]),
                             [open_image(tmp_path / files["edit"]), open_image(tmp_path / "img/edit2.png")],
                             "a red ball on grass", None, Attributes(ATTRS["source"], ATTRS["target"]))
    evaluator.add_references(arrays, ground_truth=tmp_path / files["gt"], edit_mask=tmp_path / files["mask"],
                             feature_metrics=["dino_gt", "structure_distance", "lpips_unedited"])
    want = evaluator.score(arrays, Attributes(ATTRS["source"], ATTRS["target"]), evaluator.options)
    for got_edit, want_edit in zip(record["edits"], want):
        for key in NETWORK_KEYS.split(","):
            assert got_edit["metrics"][key] is not None, (key, got_edit["unavailable"])
            assert got_edit["metrics"][key] == pytest.approx(want_edit.metrics[key], abs=1e-9), key
    assert record["edits"][0]["metrics"]["dino_gt"] != record["edits"][1]["metrics"]["dino_gt"]
    # another network is another run: resuming the results with it is refused
    other = BatchOptions(metrics=NETWORK_KEYS, networks=FeatureNetworks(dino="random:tiny",
                                                                         structure=published.DINO_REPO))
    with pytest.raises(InputError, match="features"):
        read_resume_state(out, BatchRunner(manifest, out, options=other, settings=settings,
                                           encoder=tiny_encoder).run_signature())
