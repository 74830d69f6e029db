"""HATIE's VQA component against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import math

import pytest

from augclip_demo.errors import LLMError
from augclip_demo.hatie.vqa import VqaScorer, yes_probability
from augclip_demo.llm.client import OpenAICompatibleClient
from tests.support import draw_scene
from tests.support.chat_server import ChatServer, completion

IMAGE = draw_scene((64, 48), shapes=[("ellipse", (10, 10, 40, 40), "red")])


def _with_logprobs(text: str, alternatives: dict[str, float]) -> dict:
    body = completion(text)
    first = next(iter(alternatives))
    body["choices"][0]["logprobs"] = {"content": [{
        "token": first, "logprob": alternatives[first], "bytes": None,
        "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in alternatives.items()]}]}
    return body


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ChatServer() as srv:
        yield srv


def _scorer(server: ChatServer) -> VqaScorer:
    return VqaScorer(OpenAICompatibleClient(base_url=server.url, model="vision-test", timeout=5, max_retries=0))


def test_probability_from_logprobs(server):
    server.add(body=_with_logprobs("Yes", {"Yes": math.log(0.6), " yes": math.log(0.1), "No": math.log(0.2),
                                           "Maybe": math.log(0.1)}))
    answer = _scorer(server).ask(IMAGE, "Does the picture show a ball?")
    assert answer.how == "logprobs"
    assert answer.p_yes == pytest.approx(0.7 / 0.9)
    request = server.requests[0]
    assert request.body["logprobs"] is True and request.body["top_logprobs"] == 5
    assert any("ball" in text for text in request.texts()) and len(request.image_urls()) == 1


def test_text_answer_when_the_server_gives_no_logprobs(server):
    server.add_reply("No.")
    answer = _scorer(server).ask(IMAGE, "Does the picture show a cat?")
    assert (answer.p_yes, answer.how) == (0.0, "text")


def test_an_answer_that_is_neither_yes_nor_no_is_an_error(server):
    server.add_reply("It depends")
    with pytest.raises(LLMError, match="neither yes nor no"):
        _scorer(server).ask(IMAGE, "Does the picture show a cat?")


def test_yes_probability_by_hand():
    assert yes_probability({"yes": math.log(0.3), "no": math.log(0.1)}, "yes") == (pytest.approx(0.75), "logprobs")
    assert yes_probability({"maybe": 0.0}, "Yes, it does") == (1.0, "text")
