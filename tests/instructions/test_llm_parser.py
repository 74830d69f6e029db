"""The LLM parser against a real OpenAI-compatible server on 127.0.0.1: one JSON answer checked
against the schema, and the fallback to the rules (with a notice) on every kind of failure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from augclip_demo.errors import InstructionParseError, LLMError
from augclip_demo.instructions import try_parse
from augclip_demo.instructions.llm_parser import (
    ANSWER_SCHEMA,
    EXAMPLES,
    SYSTEM_PROMPT,
    LLMInstructionParser,
    build_messages,
    read_answer,
    validate_answer,
)
from augclip_demo.llm import OpenAICompatibleClient
from tests.support.chat_server import ChatServer

PAPERS = Path("/work/shared/papers")


@pytest.fixture(autouse=True)
def _clean_openai_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _client(server: ChatServer) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(base_url=server.url, model="parser-model", timeout=5.0, max_retries=0)


def _answer(**fields) -> str:
    base = {"o1": None, "o2": None, "size_state": "unchanged", "position_state": "unchanged", "reference": None}
    return json.dumps({**base, **fields})


def _fields(parsed) -> tuple:
    return (parsed.o1, parsed.o2, parsed.size_state, parsed.position_state, parsed.reference)


def test_llm_parser_sends_one_request_and_reads_the_json_answer():
    answer = _answer(o1=None, o2="kite", position_state="up", reference="the old oak", confidence="high",
                     other_changes=["make the sky orange"])
    with ChatServer(lambda request: answer) as server:
        parsed = LLMInstructionParser(_client(server), use_cache=False).parse("hang a kite over the old oak")
        requests = list(server.requests)
    assert _fields(parsed) == (None, "kite", "unchanged", "up", "old oak")
    assert parsed.parser == "llm" and parsed.edit_type == "add" and parsed.confidence == "high"
    assert parsed.other_changes == ("make the sky orange",)
    assert len(requests) == 1
    body = requests[0].body
    assert body["model"] == "parser-model" and body["temperature"] == 0 and body["seed"] == 0
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert body["messages"][-1]["content"] == "Request: hang a kite over the old oak"
    assert len(body["messages"]) == 2 + 2 * len(EXAMPLES)


def test_answers_in_a_code_fence_or_with_prose_around_the_object_are_read():
    inner = _answer(o1="vase", o2="vase", size_state="smaller")
    for text in (f"```json\n{inner}\n```", f"Here you go: {inner} Hope it helps."):
        assert _fields(read_answer(text, "x")) == ("vase", "vase", "smaller", "unchanged", None)


@pytest.mark.parametrize("answer, problem", [
    ("I cannot tell.", "not JSON"),
    ("[1, 2]", "not an object"),
    (json.dumps({"o1": "cup", "o2": "mug", "size_state": "huge", "position_state": "up"}), "'size_state' is 'huge'"),
    (json.dumps({"o1": "cup", "o2": "mug", "size_state": "larger"}), "'position_state' is missing"),
    (json.dumps({"o1": 3, "o2": "mug", "size_state": "larger", "position_state": "up"}), "'o1' is int"),
    (_answer(o1="cup", o2="mug", colour="red"), "unknown field 'colour'"),
    (_answer(o1="it", o2="red cup"), "'o1' is 'it'"),
    (_answer(), "both o1 and o2 are null"),
])
def test_answers_that_break_the_schema_fall_back_to_the_rules_with_a_notice(answer, problem):
    with ChatServer(lambda request: answer) as server:
        parsed = LLMInstructionParser(_client(server), use_cache=False).parse("make the ball smaller and red")
    assert parsed.parser == "rules"
    assert _fields(parsed) == ("ball", "red ball", "smaller", "unchanged", None)
    assert parsed.notes[0].startswith("LLM parser unavailable") and problem in parsed.notes[0]
    assert "parser-model" in parsed.notes[0] and "offline rules" in parsed.notes[0]


def test_server_errors_fall_back_to_the_rules_without_leaking_the_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parser-secret-123")
    with ChatServer() as server:
        server.add_error(401, "bad key sk-parser-secret-123")
        outcome = try_parse("remove the umbrella", "llm", client=_client(server))
    assert outcome.parsed is not None and outcome.parsed.o1 == "umbrella"
    assert outcome.notice is not None and "401" in outcome.notice
    assert "sk-parser-secret-123" not in json.dumps(outcome.to_dict())


def test_an_unreachable_server_falls_back_too():
    with ChatServer() as server:
        url = server.url
    client = OpenAICompatibleClient(base_url=url, model="gone", timeout=2.0, max_retries=0)
    parsed = LLMInstructionParser(client, use_cache=False).parse("shrink the piano")
    assert parsed.parser == "rules" and parsed.size_state == "smaller"
    assert "LLM parser unavailable" in parsed.notes[0]


def test_without_fallback_failures_raise():
    with ChatServer(lambda request: "no idea") as server:
        with pytest.raises(InstructionParseError, match="could not be used: the answer is not JSON"):
            LLMInstructionParser(_client(server), use_cache=False, fallback=False).parse("shrink the piano")
    with ChatServer() as server:
        server.add_error(500, "boom")
        with pytest.raises(LLMError):
            LLMInstructionParser(_client(server), use_cache=False, fallback=False).parse("shrink the piano")


def test_a_global_edit_answer_is_a_refusal_not_a_failure():
    with ChatServer(lambda request: _answer(global_edit=True)) as server:
        outcome = try_parse("give it a dreamy glow", "llm", client=_client(server))
    assert outcome.unparsed and "global or style edit" in outcome.refusal and "--o1" in outcome.refusal


def test_when_both_parsers_refuse_the_message_says_so():
    with ChatServer(lambda request: "nope") as server:
        outcome = try_parse("make it more cinematic", "llm", client=_client(server))
    assert outcome.unparsed
    assert "LLM parser unavailable" in outcome.refusal and "global or style edit" in outcome.refusal


def test_llm_parses_are_cached_per_endpoint_model_and_instruction():
    with ChatServer(lambda request: _answer(o1="cup", o2="red cup")) as server:
        client = _client(server)
        first = LLMInstructionParser(client).parse("make the cup red (cache test)")
        second = LLMInstructionParser(client).parse("make the cup red (cache test)")
        assert first == second and len(server.requests) == 1


def test_every_worked_example_fits_the_schema():
    for text, answer in EXAMPLES:
        assert validate_answer(answer) == [], text
    assert set(ANSWER_SCHEMA["required"]) <= set(ANSWER_SCHEMA["properties"])


def _ten_word_runs(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {tuple(words[i:i + 10]) for i in range(len(words) - 9)}


@pytest.mark.skipif(not PAPERS.is_dir(), reason="the papers folder is not on this machine")
def test_prompt_and_examples_share_no_ten_word_run_with_any_paper():
    ours = _ten_word_runs(" ".join(m["content"] for m in build_messages("put a kite above the trees")))
    for paper in sorted(PAPERS.glob("*.txt")):
        shared = ours & _ten_word_runs(paper.read_text(encoding="utf-8", errors="replace"))
        assert not shared, f"{paper.name}: {[' '.join(run) for run in sorted(shared)[:3]]}"
