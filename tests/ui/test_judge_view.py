"""The app's judge stage without the page: the session logic against a real chat server, and the HTML
whose cells carry each rationale as hover text (title), escaped."""

from __future__ import annotations

import html
import re

import pytest

from augclip_demo.attributes import Attributes
from augclip_demo.config import Settings
from augclip_demo.errors import InputError
from augclip_demo.pipeline import Evaluator
from augclip_demo.ui.evaluate import session as logic
from augclip_demo.ui.evaluate import views
from tests.support import TINY
from tests.support.chat_server import ChatServer
from tests.support.judge_chat import judge_answer


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AUGCLIP_JUDGE_MODEL", "AUGCLIP_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AUGCLIP_CACHE_DIR", str(tmp_path))


@pytest.mark.slow  # an evaluation with the tiny CLIP, then the judge (about 10 s on 2 loaded cores)
def test_the_judge_stage_adds_columns_and_hover_rationales(tiny_encoder, scene_files, tmp_path):
    report = Evaluator(TINY, device="cpu", encoder=tiny_encoder).evaluate(
        scene_files["source"], [scene_files["faithful"], scene_files["replaced"]], "a ball <b>on</b> grass", None,
        Attributes(["a red ball"], ["green grass"]))
    session = logic.Session(report=report, clip_model=TINY)
    assert views.judge_html(report) == ""
    with pytest.raises(InputError, match="press Evaluate"):
        logic.run_judge(Settings.from_env(), logic.Session(), instruction="")
    with ChatServer(judge_answer) as server:
        settings = Settings.from_env(clip_model=TINY, device="cpu", judge_base_url=server.url, judge_model="ui-judge",
                                     judge_samples=2)
        assert logic.judge_ready(settings) == (True, f"judge model ui-judge at {server.url}")
        judged = logic.run_judge(settings, session, instruction="")
        assert any("a ball <b>on</b> grass" in r.texts()[1] for r in server.requests)  # no instruction: the target
    frame = views.score_frame(judged)
    assert list(frame["Judge SC"]) == [6.5, 6.5] and list(frame["Judge PQ"]) == [5.5, 5.5]
    page = views.judge_html(judged)
    titles = [html.unescape(t) for t in re.findall(r'title="([^"]*)"', page)]
    assert "semantic answer for seed 0 | semantic answer for seed 1" in titles
    assert "6.50 &plusmn; 0.71" in page and "judge ui-judge, prompt judge-v1, temperature 1.0, 2 sample(s)" in page
    assert "<b>" not in page  # nothing the model or the user wrote is rendered as markup


def test_not_configured_is_said_before_anything_runs():
    ready, why = logic.judge_ready(Settings.from_env())
    assert not ready and "OPENAI_BASE_URL" in why


def test_the_batch_tab_offers_the_judge_only_when_the_operator_configured_one():
    from augclip_demo.ui.batch.layout import metric_choices

    judge_keys = {"judge_sc", "judge_pq", "judge_overall"}
    assert not judge_keys & {key for _, key in metric_choices(Settings.from_env())}
    configured = Settings.from_env(judge_base_url="http://127.0.0.1:9/v1")
    assert judge_keys <= {key for _, key in metric_choices(configured)}
