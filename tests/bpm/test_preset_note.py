"""A BPM value from the fast preset says so in the report (it is not the paper's GroundingDINO + SAM)."""

from __future__ import annotations

import pytest

from augclip_demo.attributes import Attributes
from augclip_demo.config import Settings
from augclip_demo.pipeline import Evaluator
from tests.support import TINY


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["fast", "standard"])
def test_the_report_names_the_fast_preset(preset, tiny_encoder, scene_files, tmp_path):
    settings = Settings.from_env(clip_model=TINY, device="cpu", cache_dir=tmp_path, bpm_preset=preset,
                                 fast_detector_model="random:test", fast_sam_model="random:test",
                                 gdino_model="random:tiny", sam_model="random:tiny")
    evaluator = Evaluator(settings=settings, encoder=tiny_encoder)
    report = evaluator.evaluate(scene_files["source"], [scene_files["faithful"]], "a blue ball", None,
                                Attributes(["a red ball"], ["a blue ball"]))
    evaluator.add_bpm(report, "make the ball blue")
    assert isinstance(report.edits[0].metrics["bpm"], float)
    named = [note for note in report.notes if "fast preset" in note]
    assert (len(named) == 1) == (preset == "fast"), report.notes
