"""The MLLM judge against a real chat-completions server on 127.0.0.1 (tests/support/judge_chat.py answers)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from augclip_demo.config import Settings
from augclip_demo.io import open_image
from augclip_demo.judge import PROMPT_VERSION, JudgeOptions, MLLMJudge
from augclip_demo.judge.cache import JudgeCache
from augclip_demo.judge.prompts import QUALITY, SEMANTIC
from augclip_demo.llm import OpenAICompatibleClient
from tests.support import draw_scene
from tests.support.chat_server import ChatServer, Scripted, completion
from tests.support.judge_chat import SECRET_IN_REFUSAL, ConcurrencyProbe, judge_answer, pq_scores, sc_scores

SECRET = "sk-test-JUDGE-DO-NOT-LEAK-77"


@pytest.fixture(autouse=True)
def _clean_openai_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def server():
    with ChatServer(judge_answer) as srv:
        yield srv


@pytest.fixture()
def images():
    source = open_image(draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")]), name="source")
    edits = [open_image(draw_scene(shapes=[("ellipse", (20, 20, 70, 70), color)]), name=color)
             for color in ("blue", "green")]
    return source, edits


def make_judge(server: ChatServer, tmp_path, **options) -> MLLMJudge:
    client = OpenAICompatibleClient(base_url=server.url, model="judge-model", timeout=5, max_retries=0)
    return MLLMJudge(JudgeOptions(**options), settings=Settings(cache_dir=tmp_path), client=client)


def test_scores_are_the_answers_and_their_spread_over_samples(server, images, tmp_path):
    source, edits = images
    judge = make_judge(server, tmp_path, samples=3)
    results = judge.judge_edits(source, edits, "make the ball blue")
    seeds = [0, 1, 2]
    sc = np.array([min(sc_scores(s).values()) for s in seeds], dtype=float)  # 6, 7, 8
    pq = np.array([min(pq_scores(s).values()) for s in seeds], dtype=float)  # 5, 6, 5
    overall = np.sqrt(sc * pq)
    for result in results:
        metrics = result.metrics()
        assert metrics["judge_sc"] == pytest.approx(sc.mean(), abs=1e-12) == pytest.approx(7.0)
        assert metrics["judge_pq"] == pytest.approx(pq.mean(), abs=1e-12)
        assert metrics["judge_overall"] == pytest.approx(overall.mean(), abs=1e-12)
        assert result.sc.std == pytest.approx(np.std(sc, ddof=1), abs=1e-12) == pytest.approx(1.0)
        assert result.pq.std == pytest.approx(np.std(pq, ddof=1), abs=1e-12)
        assert result.overall.std == pytest.approx(np.std(overall, ddof=1), abs=1e-12)
        assert result.sc.rationales == [f"semantic answer for seed {s}" for s in seeds]
        assert result.unavailable() == {}
        assert result.settings["model"] == "judge-model" and result.settings["prompt_version"] == PROMPT_VERSION
        assert result.settings["temperature"] == 1.0 and result.settings["seeds"] == seeds
        json.dumps(result.to_dict(), allow_nan=False)
    # 2 edits x 2 questions x 3 samples, each with its seed, the schema, and the right images
    assert len(server.requests) == judge.requests == 12
    for request in server.requests:
        body = request.body
        assert body["model"] == "judge-model" and body["temperature"] == 1.0 and body["seed"] in seeds
        assert body["response_format"]["type"] == "json_schema"
        sc_question = "follows_request" in request.texts()[1]
        assert len(request.image_urls()) == (2 if sc_question else 1)
        assert ("make the ball blue" in request.texts()[1]) == sc_question  # PQ never sees the request
        schema = body["response_format"]["json_schema"]["schema"]
        assert schema == (SEMANTIC if sc_question else QUALITY).schema()


def test_one_sample_defaults_to_temperature_zero_and_reports_no_spread(server, images, tmp_path):
    source, edits = images
    result = make_judge(server, tmp_path).judge(source, edits[0], "make the ball blue")
    assert result.sc.values == [6.0] and result.sc.std is None and result.overall.mean == pytest.approx(math.sqrt(30))
    assert {r.body["temperature"] for r in server.requests} == {0.0}


def test_a_second_call_is_answered_from_the_cache(server, images, tmp_path):
    source, edits = images
    first = make_judge(server, tmp_path, samples=2).judge_edits(source, edits, "make the ball blue")
    sent = len(server.requests)
    assert sent == 8
    again = make_judge(server, tmp_path, samples=2)  # a new judge, the same cache folder
    second = again.judge_edits(source, edits, "make the ball blue")
    assert len(server.requests) == sent and again.requests == 0
    assert [r.metrics() for r in second] == [r.metrics() for r in first]
    assert all(all(r.sc.cached) and all(r.pq.cached) for r in second) and not any(first[0].sc.cached)
    # one more sample: only the new seed is asked (2 edits x 2 questions)
    make_judge(server, tmp_path, samples=3).judge_edits(source, edits, "make the ball blue")
    assert len(server.requests) == sent + 4
    # another request text: only the SC question is asked again; PQ does not depend on it
    make_judge(server, tmp_path, samples=3).judge_edits(source, edits, "make the ball green")
    assert len(server.requests) == sent + 4 + 6
    # another temperature is another key
    make_judge(server, tmp_path, samples=1, temperature=0.5).judge(source, edits[0], "make the ball blue")
    assert len(server.requests) == sent + 10 + 2
    files = list((tmp_path / "judge").rglob("*.json"))
    assert files and all("judge-model" in f.read_text() and PROMPT_VERSION in f.read_text() for f in files)


def test_a_refusal_makes_the_metric_unavailable_with_the_reason(server, images, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    source, edits = images
    judge = make_judge(server, tmp_path, samples=2)
    result = judge.judge(source, edits[0], "REFUSE to judge this")
    metrics = result.metrics()
    assert metrics["judge_sc"] is None and metrics["judge_overall"] is None  # never a silent 0
    assert metrics["judge_pq"] == pytest.approx(5.5)  # the other question still counts
    reason = result.unavailable()["judge_sc"]
    assert "refused" in reason and "I cannot judge this image" in reason and "2 of 2 samples failed" in reason
    assert result.sc.kind == "refused" and "needs both questions" in result.unavailable()["judge_overall"]
    text = json.dumps(result.to_dict()) + "".join(p.read_text() for p in (tmp_path / "judge").rglob("*.json"))
    assert SECRET_IN_REFUSAL not in text and SECRET not in text
    # refusals are not cached: asked again next time
    sent = len(server.requests)
    judge.judge(source, edits[0], "REFUSE to judge this")
    assert len(server.requests) == sent + 2


def test_a_filtered_answer_is_reported_as_filtered(server, images, tmp_path):
    source, edits = images
    result = make_judge(server, tmp_path).judge(source, edits[0], "FILTER this one")
    assert result.metrics()["judge_sc"] is None and result.sc.kind == "filtered"
    assert "content filter" in result.unavailable()["judge_sc"]


def test_invalid_json_is_asked_again_once_with_the_problem(server, images, tmp_path):
    source, edits = images
    result = make_judge(server, tmp_path).judge(source, edits[0], "GARBLE then answer")
    assert result.metrics()["judge_sc"] == 6.0
    sc_requests = [r for r in server.requests if "follows_request" in r.texts()[1]]
    assert len(sc_requests) == 2
    follow_up = sc_requests[1].messages
    assert follow_up[-2]["role"] == "assistant" and "I would give it a seven" in follow_up[-2]["content"]
    assert "holds no JSON object" in follow_up[-1]["content"]


@pytest.mark.parametrize("request_text, problem", [("GARBLE-ALWAYS", "holds no JSON object"),
                                                   ("RANGE", '"follows_request" must be from 0 to 10, got 12')])
def test_an_answer_that_stays_invalid_is_a_reason(server, images, tmp_path, request_text, problem):
    source, edits = images
    judge = make_judge(server, tmp_path, json_retries=1)
    result = judge.judge(source, edits[0], request_text)
    reason = result.unavailable()["judge_sc"]
    assert result.sc.kind == "bad_json" and problem in reason and "after 2 attempts" in reason
    assert len([r for r in server.requests if "follows_request" in r.texts()[1]]) == 2
    no_retry = make_judge(server, tmp_path, json_retries=0).judge(source, edits[0], request_text)
    assert "after 1 attempt " in no_retry.unavailable()["judge_sc"]


def test_a_server_without_json_schema_support_is_asked_without_it(images, tmp_path):
    def picky(request):
        if "response_format" in request.body:
            return Scripted(400, {"error": {"message": "response_format is not supported"}})
        return judge_answer(request)

    source, edits = images
    with ChatServer(picky) as server:
        judge = make_judge(server, tmp_path, samples=2)
        result = judge.judge_edits(source, edits, "make the ball blue")
        assert all(r.unavailable() == {} for r in result)
        with_schema = [r for r in server.requests if "response_format" in r.body]
        assert 1 <= len(with_schema) <= judge.options.concurrency  # at most the first requests in flight
        assert len(server.requests) == 8 + len(with_schema)
    with ChatServer(picky) as server:
        forced = make_judge(server, tmp_path / "forced", structured="json_schema").judge(source, edits[0], "x")
        assert forced.sc.kind == "bad_request" and "response_format is not supported" in forced.sc.reason
    with ChatServer(judge_answer) as server:
        make_judge(server, tmp_path / "off", structured="off").judge(source, edits[0], "x")
        assert all("response_format" not in r.body for r in server.requests)


def test_no_request_text_leaves_only_quality(server, images, tmp_path):
    source, edits = images
    result = make_judge(server, tmp_path).judge(source, edits[0], "  ")
    assert result.metrics()["judge_sc"] is None and result.metrics()["judge_pq"] == 5.0
    assert "no instruction and no target text" in result.unavailable()["judge_sc"]
    assert len(server.requests) == 1


def test_concurrency_and_rate_are_bounded(images, tmp_path):
    source, edits = images
    probe = ConcurrencyProbe(judge_answer, delay=0.05)
    with ChatServer(probe) as server:
        judge = make_judge(server, tmp_path, samples=4, concurrency=2)
        judge.judge_edits(source, edits, "make the ball blue")
        assert len(server.requests) == 16 and probe.peak == 2
        assert judge._key_locks == {}  # the per-key locks of finished samples are dropped (bounded memory)
    probe = ConcurrencyProbe(judge_answer, delay=0.0)
    with ChatServer(probe) as server:
        make_judge(server, tmp_path / "rate", samples=2, concurrency=4, requests_per_minute=1200).judge(
            source, edits[0], "make the ball blue")
        # starts 60 / 1200 = 0.05 s apart: 4 requests span at least 0.15 s (arrival jitter aside)
        assert len(probe.arrivals) == 4 and max(probe.arrivals) - min(probe.arrivals) >= 0.13


def test_transport_errors_are_reasons_and_not_cached(images, tmp_path):
    source, edits = images
    with ChatServer() as server:
        server.add_error(503, "overloaded").add_error(503, "overloaded")
        result = make_judge(server, tmp_path, concurrency=1).judge(source, edits[0], "make the ball blue")
        assert result.sc.kind == "server" and "HTTP 503" in result.unavailable()["judge_sc"]
        assert not list((tmp_path / "judge").rglob("*.json"))


def test_options_are_validated():
    for bad in ({"samples": 0}, {"samples": 17}, {"temperature": -1}, {"structured": "xml"}, {"concurrency": 0},
                {"json_retries": 5}, {"requests_per_minute": -1}):
        with pytest.raises(ValueError):
            JudgeOptions(**bad)


def test_a_broken_cache_file_is_ignored(server, images, tmp_path):
    source, edits = images
    make_judge(server, tmp_path).judge(source, edits[0], "make the ball blue")
    for path in (tmp_path / "judge").rglob("*.json"):
        path.write_text('{"format": 1, "key": {}, "answer": {"subscores": {"looks_natural": 99}}}')
    sent = len(server.requests)
    cache = JudgeCache(tmp_path / "judge")
    judge = make_judge(server, tmp_path)
    judge.cache = cache
    result = judge.judge(source, edits[0], "make the ball blue")
    assert result.metrics()["judge_pq"] == 5.0 and len(server.requests) == sent + 2 and cache.hits == 0


def test_completion_helper_is_what_the_server_sends():
    assert completion("x")["choices"][0]["message"] == {"role": "assistant", "content": "x"}
