"""What the page and its downloads show of a report never names the server's folders."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import torch

from augclip_demo.attributes import Attributes
from augclip_demo.inference import ClipEncoder
from augclip_demo.pipeline import Evaluator
from augclip_demo.ui.evaluate import views


@pytest.mark.slow
def test_an_operator_weights_file_is_named_but_its_folder_is_not(tiny_encoder, scene_files, tmp_path):
    folder = tmp_path / "srv private-models"  # a space: not one path to a pattern
    folder.mkdir()
    weights = folder / "clip-weights.pt"
    torch.save(tiny_encoder.model.state_dict(), weights)
    encoder = ClipEncoder("augclip-tiny-vit", checkpoint=weights, device="cpu")
    report = Evaluator(encoder=encoder).evaluate(scene_files["source"], [scene_files["faithful"]], "a blue ball", None,
                                                 Attributes(["a red ball", "green grass"], ["a blue ball"]))
    assert str(folder) in report.to_json()  # the library's own report keeps the full path (CLI, Python)

    shown = json.dumps(views.public_report(report))
    assert "private-models" not in shown and "clip-weights.pt" in shown
    assert views.public_report(report)["edits"][0]["metrics"] == report.to_dict()["edits"][0]["metrics"]
    files = views.write_downloads(report, tmp_path / "out", {}, archive=True)
    for path in files:
        if path.endswith(".zip"):
            with zipfile.ZipFile(path) as bundle:
                texts = [bundle.read(name).decode() for name in bundle.namelist()]
        else:
            texts = [Path(path).read_text(encoding="utf-8")]
        for text in texts:
            assert "private-models" not in text and str(tmp_path) not in text, path
