"""The judge's rows where users meet them: the Evaluator, the Python API and ``augclip-demo score``
(in-process, the tiny random CLIP, a real chat server on 127.0.0.1)."""

from __future__ import annotations

import json
import math

import pytest

from augclip_demo import Attributes, JudgeOptions, Report, evaluate
from augclip_demo.cli import main
from augclip_demo.metrics.suite import METRICS, parse_metric_keys
from tests.support import TINY
from tests.support.chat_server import ChatServer
from tests.support.judge_chat import judge_answer

TINY_ARGS = ["--clip-model", "random:tiny", "--device", "cpu"]
SECRET = "sk-test-SURFACE-DO-NOT-LEAK-99"
ATTRS = Attributes(source=["red ball"], target=["blue ball"])


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_CUSTOM_HEADERS", "AUGCLIP_MLLM_MODEL",
                 "AUGCLIP_JUDGE_MODEL", "AUGCLIP_JUDGE_BASE_URL", "AUGCLIP_JUDGE_SAMPLES", "AUGCLIP_JUDGE_TEMPERATURE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def server():
    with ChatServer(judge_answer) as srv:
        yield srv


def test_the_rows_are_in_the_one_metric_table():
    for key in ("judge_sc", "judge_pq", "judge_overall"):
        metric = METRICS[key]
        assert metric.basis == "judge" and not metric.computable and "llm" in metric.needs and metric.higher_is_better
    with pytest.raises(ValueError, match="needs an MLLM judge"):
        parse_metric_keys("augclip,judge_sc")
    assert parse_metric_keys("augclip,judge_sc", supplied_bases=["judge"]) == ["augclip", "judge_sc"]


@pytest.mark.slow  # loads the tiny CLIP through the public API (about 10 s on 2 cores when it is the first)
def test_the_api_adds_the_judge_and_rescoring_keeps_it(scene_files, server, tmp_path, monkeypatch):
    monkeypatch.setenv("AUGCLIP_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("AUGCLIP_CLIP_MODEL", TINY)
    report = evaluate(scene_files["source"], [scene_files["faithful"], scene_files["replaced"]], "a blue ball",
                      attributes=ATTRS, device="cpu", judge=JudgeOptions(model="judge-model", samples=2))
    for edit in report.edits:
        assert edit.metrics["judge_sc"] == 6.5 and edit.metrics["judge_pq"] == 5.5
        assert edit.metrics["judge_overall"] == pytest.approx((math.sqrt(30) + math.sqrt(42)) / 2, abs=1e-12)
        assert edit.judge["sc"]["std"] == pytest.approx(math.sqrt(0.5), abs=1e-12)
        assert edit.judge["settings"]["model"] == "judge-model" and edit.judge["settings"]["samples"] == 2
    text = report.to_json()
    assert SECRET not in text and "judge-model" in text and "judge_overall" in report.to_csv()
    again = Report.from_json(text)
    assert again.edits[0].judge == report.edits[0].judge
    assert {"judge_sc", "judge_pq", "judge_overall"} <= set(report.metric_keys())
    # re-scoring with other AugCLIP options keeps the judge's values (no AugCLIP option changes them)
    from augclip_demo import AugCLIPOptions, Evaluator

    rescored = Evaluator(TINY, "cpu").rescore(report, AugCLIPOptions(C=0.5))
    assert [e.metrics["judge_sc"] for e in rescored.edits] == [6.5, 6.5] and rescored.edits[0].judge is not None


def test_without_an_endpoint_the_rows_say_why(scene_files, tmp_path, monkeypatch):
    monkeypatch.setenv("AUGCLIP_CACHE_DIR", str(tmp_path))
    report = evaluate(scene_files["source"], scene_files["faithful"], "a blue ball", attributes=ATTRS,
                      clip_model=TINY, device="cpu", judge=True)
    edit = report.edits[0]
    assert edit.metrics["judge_sc"] is None and "not configured" in edit.unavailable["judge_sc"]
    assert "OPENAI_BASE_URL" in edit.unavailable["judge_overall"]


@pytest.mark.slow  # the score command end to end (about 4 s on 2 cores)
def test_score_cli_flags(scene_files, server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = tmp_path / "report.json"
    code = main(["score", "--source", str(scene_files["source"]), "--edited", str(scene_files["faithful"]),
                 "--target", "a blue ball", "--instruction", "REFUSE please", "--no-bpm",
                 "--attributes", str(_attributes_file(tmp_path)), "--judge-model", "cli-judge",
                 "--judge-base-url", server.url, "--judge-samples", "3", "--judge-temperature", "0.4",
                 "--cache-dir", str(tmp_path), "--out", str(out), *TINY_ARGS])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Judge PQ" in printed and "n/a: judge unavailable: the model refused to answer" in printed
    assert "PQ 5.33 +/- 0.58 sd (quality answer for seed 0)" in printed
    assert "model cli-judge, judge-v1, temperature 0.4, 3 sample(s)" in printed
    saved = json.loads(out.read_text())
    assert saved["edits"][0]["metrics"]["judge_sc"] is None and SECRET not in out.read_text()
    bodies = [r.body for r in server.requests]
    assert {b["model"] for b in bodies} == {"cli-judge"} and {b["temperature"] for b in bodies} == {0.4}
    assert sorted({b["seed"] for b in bodies}) == [0, 1, 2]


def _attributes_file(tmp_path):
    path = tmp_path / "attributes.json"
    ATTRS.save(path)
    return path
