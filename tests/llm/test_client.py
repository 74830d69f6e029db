"""The OpenAI-compatible client against a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

import base64
import io
import logging
import socket
import time

import pytest
from PIL import Image

from augclip_demo.config import Settings
from augclip_demo.errors import AugclipError, LLMError
from augclip_demo.llm import (
    NO_KEY_PLACEHOLDER,
    OpenAICompatibleClient,
    display_url,
    endpoint_status,
    image_data_url,
    redact,
    user_message_with_image,
)
from tests.support import draw_scene
from tests.support.chat_server import ChatServer

SECRET = "sk-test-DO-NOT-LEAK-4242"
FAST_RETRY = {"retry-after-ms": "5"}  # the SDK honours it: keeps the backoff tests quick


@pytest.fixture(autouse=True)
def _clean_openai_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def server():
    with ChatServer() as srv:
        yield srv


def make_client(server: ChatServer, **kwargs) -> OpenAICompatibleClient:
    kwargs = {"model": "vision-model", "timeout": 5.0, "max_retries": 2, **kwargs}
    return OpenAICompatibleClient(base_url=server.url, **kwargs)


def test_chat_sends_the_request_and_returns_the_text(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server.add_reply("hello there", model="served-name")
    client = make_client(server)
    messages = [{"role": "user", "content": "hi"}]
    reply = client.complete(messages, seed=7, temperature=0.3, max_tokens=50)
    assert reply.text == "hello there" and reply.model == "served-name" and reply.finish_reason == "stop"
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "vision-model" and request.body["messages"] == messages
    assert request.body["seed"] == 7 and request.body["temperature"] == 0.3 and request.body["max_tokens"] == 50
    assert request.headers["authorization"] == f"Bearer {SECRET}"  # the SDK read OPENAI_API_KEY
    assert SECRET not in repr(client) and SECRET not in str(vars(client))
    assert "key=set" in repr(client)


def test_defaults_leave_optional_fields_out(server):
    server.add_reply("ok")
    assert make_client(server).chat([{"role": "user", "content": "hi"}]) == "ok"
    body = server.requests[0].body
    assert "seed" not in body and "max_tokens" not in body and body["temperature"] == 0.0


def test_local_server_without_key_gets_a_placeholder(server):
    server.add_reply("ok")
    client = make_client(server)
    client.chat([{"role": "user", "content": "hi"}])
    assert server.requests[0].headers["authorization"] == f"Bearer {NO_KEY_PLACEHOLDER}"
    assert "key=not set" in repr(client)


def test_base_url_from_the_sdk_environment_variable(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    server.add_reply("from env")
    client = OpenAICompatibleClient(Settings.from_env({"AUGCLIP_MLLM_MODEL": "llava", "AUGCLIP_MLLM_TIMEOUT": "7",
                                                      "AUGCLIP_MLLM_MAX_RETRIES": "1"}))
    assert (client.model, client.timeout, client.max_retries) == ("llava", 7.0, 1)
    assert client.chat([{"role": "user", "content": "x"}]) == "from env"
    assert server.requests[0].body["model"] == "llava"


def test_image_message_is_a_data_url_shrunk_to_max_side():
    image = draw_scene((300, 150), "white", [("ellipse", (10, 10, 100, 100), "red")])
    message = user_message_with_image("describe", image, max_side=120, image_format="PNG")
    assert message["role"] == "user"
    text_part, image_part = message["content"]
    assert text_part == {"type": "text", "text": "describe"}
    url = image_part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,") and "detail" not in image_part["image_url"]
    decoded = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert decoded.size == (120, 60)
    small = image_data_url(draw_scene((40, 30)), image_format="PNG")
    assert Image.open(io.BytesIO(base64.b64decode(small.split(",", 1)[1]))).size == (40, 30)  # never enlarged
    assert image_data_url(image).startswith("data:image/jpeg;base64,")


def test_429_then_success_is_retried(server):
    server.add_error(429, "slow down", headers=FAST_RETRY).add_reply("after the wait")
    assert make_client(server).chat([{"role": "user", "content": "hi"}]) == "after the wait"
    assert len(server.requests) == 2


def test_500_three_times_gives_up_with_a_clear_error(server):
    for _ in range(3):
        server.add_error(500, "boom", headers=FAST_RETRY)
    server.add_reply("never reached")
    with pytest.raises(LLMError) as info:
        make_client(server, max_retries=2).chat([{"role": "user", "content": "hi"}])
    err = info.value
    assert err.kind == "server" and err.status == 500 and isinstance(err, AugclipError)
    assert len(server.requests) == 3
    message = str(err)
    assert "HTTP 500" in message and "3 attempts" in message and server.url in message and "vision-model" in message


def test_429_exhausted_says_rate_limited(server):
    server.add_error(429, "quota", headers=FAST_RETRY).add_error(429, "quota", headers=FAST_RETRY)
    with pytest.raises(LLMError, match=r"rate limiting \(HTTP 429\) after 2 attempts") as info:
        make_client(server, max_retries=1).chat([{"role": "user", "content": "hi"}])
    assert info.value.kind == "rate_limited"


def test_timeout(server):
    server.add_reply("too late", delay=3.0)
    start = time.perf_counter()
    with pytest.raises(LLMError, match=r"no answer within 0.3 s \(1 attempt\)") as info:
        make_client(server, timeout=0.3, max_retries=0).chat([{"role": "user", "content": "hi"}])
    assert info.value.kind == "timeout" and time.perf_counter() - start < 2.5


def test_401_names_url_and_model_never_the_key(server, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # Real servers echo (part of) the rejected key; none of it may reach the user.
    server.add_error(401, f"Incorrect API key provided: {SECRET}")
    caplog.set_level(logging.DEBUG)
    client = make_client(server)
    with pytest.raises(LLMError) as info:
        client.chat([{"role": "user", "content": "hi"}])
    err = info.value
    assert err.kind == "auth" and err.status == 401 and len(server.requests) == 1  # no retry on 401
    assert server.url in str(err) and "vision-model" in str(err) and "OPENAI_API_KEY" in str(err)
    for text in (str(err), repr(err), caplog.text, repr(client)):
        assert SECRET not in text and "DO-NOT-LEAK" not in text


@pytest.mark.parametrize("status, kind, hint", [(403, "forbidden", "HTTP 403"), (404, "not_found", "check the model name"),
                                                (400, "bad_request", "vision model")])
def test_client_errors_fail_at_once_with_advice(server, status, kind, hint):
    server.add_error(status, "the model `vision-model` does not exist")
    with pytest.raises(LLMError, match=hint) as info:
        make_client(server).chat([{"role": "user", "content": "hi"}])
    assert info.value.kind == kind and len(server.requests) == 1
    assert "does not exist" in str(info.value)  # the server's own reason is quoted


def test_connection_refused():
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAICompatibleClient(base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout=2, max_retries=0)
    with pytest.raises(LLMError, match="could not connect to") as info:
        client.chat([{"role": "user", "content": "hi"}])
    assert info.value.kind == "connection" and f"127.0.0.1:{port}" in str(info.value)


def test_empty_answer_is_an_error(server):
    server.add_reply(None)
    with pytest.raises(LLMError, match="returned no text") as info:
        make_client(server).chat([{"role": "user", "content": "hi"}])
    assert info.value.kind == "no_answer"


def test_not_configured_without_key_or_base_url():
    status = endpoint_status(env={})
    assert not status.configured and "OPENAI_API_KEY" in status.reason and "OPENAI_BASE_URL" in status.reason
    with pytest.raises(LLMError, match="not configured") as info:
        OpenAICompatibleClient(model="gpt-4o")
    assert info.value.kind == "not_configured"
    assert endpoint_status(env={"OPENAI_API_KEY": SECRET}).configured
    hosted = endpoint_status(env={"OPENAI_API_KEY": SECRET})
    assert "api.openai.com" in hosted.reason and SECRET not in str(hosted)
    local = endpoint_status(env={"OPENAI_BASE_URL": "http://user:pw@localhost:11434/v1?token=x"})
    assert local.configured and local.base_url == "http://localhost:11434/v1" and "pw" not in local.reason


def test_redaction_helpers(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "plain-secret-value")
    assert redact("got plain-secret-value and sk-proj-abcd****wxyz, Bearer abc.def") == "got *** and ***, ***"
    assert display_url("https://u:p@host:8000/v1?key=1#f") == "https://host:8000/v1"
