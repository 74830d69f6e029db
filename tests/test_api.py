"""The public API at the top of the package: every name resolves, the import stays light, evaluate() is right."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import augclip_demo
from tests.support import ROOT, TINY


def test_every_public_name_is_the_object_its_module_defines():
    assert len(set(augclip_demo.__all__)) == len(augclip_demo.__all__)
    for name in augclip_demo.__all__:
        if name == "__version__":
            continue
        module = importlib.import_module(augclip_demo._PUBLIC[name])
        assert getattr(augclip_demo, name) is getattr(module, name), name
    assert set(augclip_demo.__all__) <= set(dir(augclip_demo))
    namespace: dict = {}
    exec("from augclip_demo import *", namespace)
    assert {"evaluate", "Evaluator", "augclip_score", "parse_instruction", "bpm_score"} <= set(namespace)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        augclip_demo.not_a_name  # noqa: B018


def test_importing_the_package_loads_no_framework():
    """``import augclip_demo`` in a fresh interpreter: no torch, scikit-learn, gradio or open_clip yet."""
    code = ("import sys, json, augclip_demo; "
            "print(json.dumps(sorted(m for m in ('torch', 'sklearn', 'gradio', 'open_clip', 'transformers', "
            "'matplotlib', 'numpy') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    # ...and the pure parts stay pure when used through the top-level names
    code = ("import sys, augclip_demo; augclip_demo.parse_instruction('make the cup red'); augclip_demo.clip_i; "
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_evaluate_in_one_call_matches_cosines_computed_here(scene_files, tiny_encoder):
    from augclip_demo import Attributes, augclip_score, evaluate

    attributes = Attributes(source=["a red ball", "a white background"], target=["green grass", "a red ball on grass"])
    edits = [scene_files["faithful"], scene_files["replaced"]]
    report = evaluate(scene_files["source"], edits, "a red ball on green grass", source_text="a red ball",
                      attributes=attributes, clip_model=TINY, device="cpu", classifier="logistic", C=0.5)
    assert report.untrained and [e.name for e in report.edits] == ["faithful.png", "replaced.png"]
    assert report.options["classifier"] == "logistic" and report.options["C"] == 0.5

    # Independently: embeddings from a separately built encoder, metrics as plain numpy here.
    images = tiny_encoder.encode_images([scene_files["source"], *edits]).astype(np.float64)
    texts = tiny_encoder.encode_texts(["a red ball on green grass", "a red ball", *attributes.source,
                                       *attributes.target]).astype(np.float64)
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    src, target, source_text = images[0], texts[0], texts[1]
    source_pixels = np.asarray(Image.open(scene_files["source"]).convert("RGB"), dtype=np.float64) / 255
    for edit, emb, path in zip(report.edits, images[1:], edits):
        assert edit.metrics["clip_i"] == pytest.approx(float(unit(src) @ unit(emb)), abs=1e-6)
        assert edit.metrics["clip_t"] == pytest.approx(float(unit(emb) @ unit(target)), abs=1e-6)
        direction = float(unit(emb - src) @ unit(target - source_text))
        assert edit.metrics["clip_dir"] == pytest.approx(direction, abs=1e-5)
        fit = augclip_score(src, emb, texts[2:4], texts[4:], classifier="logistic", C=0.5)
        assert edit.metrics["augclip"] == pytest.approx(fit.score, abs=1e-6)
        edit_pixels = np.asarray(Image.open(path).convert("RGB").resize((96, 96), Image.BICUBIC),
                                 dtype=np.float64) / 255
        if Image.open(path).size == (96, 96):  # same size: no resampling involved, RMSE by hand
            assert edit.metrics["l2"] == pytest.approx(float(np.sqrt(np.mean((source_pixels - edit_pixels) ** 2))),
                                                       abs=1e-9)
    assert "prefers" in report.verdict()


@pytest.mark.slow  # loads the tiny random GroundingDINO and SAM
def test_evaluate_with_an_instruction_adds_bpm(scene_files, monkeypatch):
    from augclip_demo import Attributes, evaluate

    monkeypatch.setenv("AUGCLIP_GDINO_MODEL", "random:tiny")
    monkeypatch.setenv("AUGCLIP_SAM_MODEL", "random:tiny")
    report = evaluate(scene_files["source"], scene_files["faithful"], "a red ball on green grass",
                      attributes=Attributes(source=["a red ball"], target=["green grass"]), clip_model=TINY,
                      device="cpu", instruction="add green grass")
    bpm = report.edits[0].metrics["bpm"]
    assert bpm is not None and 0.0 <= bpm <= 2.0
    assert report.edits[0].bpm["parse"]["o2"] == "green grass"
