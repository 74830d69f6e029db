"""The ``openai`` provider against a real OpenAI-compatible server on 127.0.0.1 (App. C.2 / C.3 flow)."""

from __future__ import annotations

import base64
import io
import json
import logging

import pytest
from PIL import Image

from augclip_demo.attributes import OpenAIProvider, get_provider
from augclip_demo.attributes.disk_cache import AttributeCache
from augclip_demo.attributes.prompts import (
    CAPTION_PROMPT,
    PROMPT_VERSION,
    SOURCE_EXAMPLE_ATTRIBUTES,
    SOURCE_EXAMPLE_CAPTION,
    TARGET_EXAMPLE_ATTRIBUTES,
)
from augclip_demo.config import Settings
from augclip_demo.errors import LLMError
from augclip_demo.pipeline import Evaluator
from tests.support import draw_scene
from tests.support.attribute_chat import CAPTION, paper_flow, step_of
from tests.support.chat_server import ChatServer, Recorded

SECRET = "sk-test-NEVER-SHOW-9876"
SECRET = "sk-test-NEVER-SHOW-9876"
FAST_RETRY = {"retry-after-ms": "5"}


@pytest.fixture(autouse=True)
def _clean_openai_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_CUSTOM_HEADERS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def server():
    with ChatServer(responder=paper_flow) as srv:
        yield srv


@pytest.fixture()
def source_image():
    return draw_scene((160, 120), "white", [("ellipse", (50, 30, 110, 90), "red")])


def provider_for(server: ChatServer, tmp_path, **kwargs) -> OpenAIProvider:
    settings = Settings.from_env(cache_dir=tmp_path / "cache")
    kwargs = {"model": "vision-model", "base_url": server.url, "timeout": 5.0, "max_retries": 2, **kwargs}
    return OpenAIProvider(settings=settings, **kwargs)


def test_paper_flow_requests_and_result(server, tmp_path, source_image):
    attrs = provider_for(server, tmp_path).extract(source_image, "a red ball on green grass", "a red ball")
    assert attrs.source == ["A ball is red", "A ball is round", "A ball is shiny", "A floor is white"]
    assert attrs.target == ["Grass is green", "Ball is on grass", "Grass is short"]
    prov = attrs.provenance
    assert (prov.provider, prov.model, prov.prompt_version, prov.seed, prov.samples) == (
        "openai", "vision-model", PROMPT_VERSION, 0, 1)
    assert prov.seconds is not None and prov.seconds > 0 and prov.fidelity.startswith("MLLM")
    assert prov.extra["captions"] == [CAPTION] and prov.extra["base_url"] == server.url

    caption_req, source_req, target_req = server.requests
    assert [step_of(r) for r in server.requests] == ["caption", "source", "target"]
    # step 1 (C.2): the image as a data URL, with the objective-caption instruction
    (url,) = caption_req.image_urls()
    assert url.startswith("data:image/jpeg;base64,")
    sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert sent.size == source_image.size
    assert caption_req.texts() == [CAPTION_PROMPT]
    # step 2 (C.2): the caption broken down with our worked example, text only
    source_text = "\n".join(source_req.texts())
    assert CAPTION in source_text and SOURCE_EXAMPLE_CAPTION in source_text
    assert all(example in source_text for example in SOURCE_EXAMPLE_ATTRIBUTES)
    assert not source_req.image_urls()
    # step 3 (C.3): target text, caption as context, our worked example, near-duplicate rule,
    # and the request to leave unchanged attributes out of the target set
    target_text = "\n".join(target_req.texts())
    assert "a red ball on green grass" in target_text and CAPTION in target_text and "a red ball" in target_text
    assert all(example in target_text for example in TARGET_EXAMPLE_ATTRIBUTES)
    assert '"A cup is small" and "A cup is little"' in target_text
    assert "leave out whatever the edit keeps" in target_text
    for request in server.requests:
        assert request.body["model"] == "vision-model"
        assert request.body["seed"] == 0 and request.body["temperature"] == 0.0


@pytest.mark.parametrize("answer", [
    "Sure! Here you go:\n```json\n[\"A ball is red\", \"A floor is white\"]\n```",
    "1. A ball is red\n2. A floor is white",
    "- A ball is red\n- A floor is white\n\nThese are the characteristics.",
    "['A ball is red', 'a ball is red.', 'A floor is white', '']",
])
def test_answer_shapes_are_parsed(server, tmp_path, source_image, answer):
    server.responder = lambda r: answer if step_of(r) == "source" else paper_flow(r)
    attrs = provider_for(server, tmp_path, use_cache=False).extract(source_image, "a ball on grass")
    assert attrs.source == ["A ball is red", "A floor is white"]


def test_samples_use_consecutive_seeds_and_merge_by_frequency(server, tmp_path, source_image):
    per_seed = {3: ["a zebra", "black stripes"], 4: ["black stripes", "a mane"], 5: ["A zebra.", "black stripes"]}

    def answer(request: Recorded) -> str:
        step = step_of(request)
        return json.dumps(per_seed[request.body["seed"]]) if step == "target" else paper_flow(request)

    server.responder = answer
    attrs = provider_for(server, tmp_path, samples=3, seed=3).extract(source_image, "turn the ball into a zebra")
    assert attrs.target == ["black stripes", "a zebra", "a mane"]
    prov = attrs.provenance
    assert prov.samples == 3 and prov.seed == 3 and prov.extra["seeds"] == [3, 4, 5]
    assert prov.extra["target_counts"] == [3, 2, 1] and prov.extra["temperature"] == 1.0
    assert sorted({r.body["seed"] for r in server.requests}) == [3, 4, 5] and len(server.requests) == 9


def test_answer_without_a_list_is_a_clear_error(server, tmp_path, source_image):
    server.responder = lambda r: "I am unable to help with that." if step_of(r) == "target" else paper_flow(r)
    with pytest.raises(LLMError, match="target-attribute request .* holds no usable list") as info:
        provider_for(server, tmp_path).extract(source_image, "a ball on grass")
    assert info.value.kind == "no_list" and "unable to help" in str(info.value) and "vision-model" in str(info.value)


def test_one_bad_sample_of_several_is_skipped(server, tmp_path, source_image):
    server.responder = lambda r: ("no list here" if step_of(r) == "target" and r.body["seed"] == 1
                                  else paper_flow(r))
    attrs = provider_for(server, tmp_path, samples=2).extract(source_image, "a ball on grass")
    assert attrs.target == ["Grass is green", "Ball is on grass", "Grass is short"]
    assert len(attrs.provenance.extra["failed_samples"]) == 1


def test_rate_limit_then_success_inside_an_extraction(server, tmp_path, source_image):
    server.add_error(429, "rate limited", headers=FAST_RETRY)  # the first request (the caption) is refused once
    attrs = provider_for(server, tmp_path).extract(source_image, "a ball on grass")
    assert attrs.source and len(server.requests) == 4


def test_server_errors_and_timeouts_surface_as_llm_errors(server, tmp_path, source_image):
    for _ in range(3):
        server.add_error(500, "overloaded", headers=FAST_RETRY)
    with pytest.raises(LLMError, match=r"HTTP 500\) on all 3 attempts") as info:
        provider_for(server, tmp_path).extract(source_image, "a ball on grass")
    assert info.value.kind == "server"
    server.add_reply(CAPTION, delay=3.0)
    with pytest.raises(LLMError, match="no answer within 0.2 s") as info:
        provider_for(server, tmp_path, timeout=0.2, max_retries=0).extract(source_image, "a ball on grass")
    assert info.value.kind == "timeout"


def test_cache_hit_sends_nothing_and_key_parts_matter(server, tmp_path, source_image):
    first = provider_for(server, tmp_path).extract(source_image, "a ball on grass")
    assert first.provenance.extra["cache"] == "miss" and len(server.requests) == 3
    again = provider_for(server, tmp_path).extract(source_image, "a ball on grass")
    assert again.provenance.extra["cache"] == "hit" and len(server.requests) == 3
    assert again.source == first.source and again.provenance.seconds == first.provenance.seconds
    provider_for(server, tmp_path, seed=1).extract(source_image, "a ball on grass")
    assert len(server.requests) == 6  # another seed is another key
    provider_for(server, tmp_path, model="other-model").extract(source_image, "a ball on grass")
    assert len(server.requests) == 9
    provider_for(server, tmp_path, use_cache=False).extract(source_image, "a ball on grass")
    assert len(server.requests) == 12  # --no-cache neither reads nor writes


@pytest.mark.slow
def test_key_never_leaks_into_logs_errors_cache_or_reports(server, tmp_path, source_image, tiny_encoder,
                                                           monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    provider = provider_for(server, tmp_path)
    evaluator = Evaluator(encoder=tiny_encoder, settings=Settings.from_env(cache_dir=tmp_path / "cache"))
    edited = draw_scene((160, 120), "green", [("ellipse", (50, 30, 110, 90), "red")])
    report = evaluator.evaluate(source_image, edited, "a red ball on green grass", attributes=provider)
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)  # it was used
    server.add_error(401, f"Incorrect API key provided: {SECRET}")
    with pytest.raises(LLMError) as info:
        provider_for(server, tmp_path, use_cache=False).extract(source_image, "anything")
    cache_files = list(AttributeCache(tmp_path / "cache" / "attributes").root.rglob("*.json"))
    assert cache_files
    texts = {"report": report.to_json(), "csv": report.to_csv(), "error": str(info.value) + repr(info.value),
             "logs": caplog.text, "provider": repr(provider) + repr(provider.client) + str(vars(provider)),
             **{f"cache {p.name}": p.read_text() for p in cache_files}}
    for where, text in texts.items():
        assert SECRET not in text and "NEVER-SHOW" not in text, f"the key leaked into the {where}"
    assert report.attributes.provenance.provider == "openai" and report.edits[0].metrics["augclip"] is not None


def test_get_provider_by_name_and_not_configured(monkeypatch, tmp_path):
    with pytest.raises(LLMError, match="not configured"):
        get_provider("openai", model="gpt-4o")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    provider = get_provider("openai", model="llava", settings=Settings.from_env(cache_dir=tmp_path))
    assert provider.model == "llava" and provider.client.base_url == "http://127.0.0.1:9/v1"
