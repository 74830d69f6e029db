"""The app's session logic without the page: a changed CLIP model is refused, not silently mixed in."""

from __future__ import annotations

import pytest

from augclip_demo.config import Settings
from augclip_demo.errors import InputError
from augclip_demo.pipeline import AugCLIPOptions, Evaluator
from augclip_demo.ui import session as logic
from tests.support import TINY

ATTRS = ("a red ball\ngreen grass", "a blue ball")


@pytest.fixture()
def evaluated(tiny_encoder, scene_files) -> logic.Session:
    from augclip_demo.attributes import Attributes

    report = Evaluator(TINY, device="cpu", encoder=tiny_encoder).evaluate(
        scene_files["source"], [scene_files["faithful"]], "a blue ball", None,
        Attributes(logic.lines(ATTRS[0]), logic.lines(ATTRS[1])))
    return logic.Session(report=report, clip_model=TINY)


@pytest.mark.parametrize("action", ["rescore", "bpm"])
def test_a_changed_clip_model_asks_for_a_new_evaluation(evaluated, action):
    other = Settings.from_env(clip_model="random:ViT-B-16", device="cpu")
    with pytest.raises(InputError, match="CLIP model changed"):
        if action == "rescore":
            logic.rescore(other, evaluated, AugCLIPOptions(), *ATTRS)
        else:
            logic.run_bpm(other, evaluated, instruction="make the ball blue")
