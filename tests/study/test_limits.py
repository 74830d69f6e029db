"""The rate limits of the rater routes and the operator token, on a clock the test moves (no waiting)."""

from __future__ import annotations

import pytest

from augclip_demo.study import limits
from augclip_demo.study.limits import Buckets, OperatorLimits, Rate, RaterLimits
from augclip_demo.study.store import StudyError
from augclip_demo.ui.study.operator import NOT_OPERATOR, Operator
from augclip_demo.ui.study.routes import client_address


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_gives_its_burst_then_its_rate():
    clock = Clock()
    bucket = Buckets(Rate(burst=3, per_s=0.5), clock)
    assert [bucket.take("k") for _ in range(3)] == [0, 0, 0]
    assert bucket.take("k") == pytest.approx(2.0)  # one token per 2 s, none left
    assert bucket.take("other") == 0  # keys are apart
    clock.now += 1.0
    assert bucket.take("k") == pytest.approx(1.0)
    clock.now += 1.0
    assert bucket.take("k") == 0 and bucket.take("k") == pytest.approx(2.0)
    clock.now += 3600
    assert [bucket.take("k") for _ in range(4)][:3] == [0, 0, 0]  # refilled to the burst, never beyond


def test_the_key_table_is_bounded_and_drops_the_oldest():
    clock = Clock()
    bucket = Buckets(Rate(burst=1, per_s=0.001), clock, max_keys=100)
    for n in range(1000):
        assert bucket.take(f"k{n}") == 0
    assert len(bucket._state) == 100
    assert bucket.take("k999") > 0 and bucket.take("k0") == 0  # k0 was dropped: it starts full again


def test_rater_limits_count_tokens_addresses_and_bad_links():
    clock = Clock()
    rater = RaterLimits(clock)
    allowed = sum(rater.admit("10.0.0.1", "token-a") is None for _ in range(200))
    assert allowed == limits.RATER_TOKEN.burst  # one token's burst, then refused
    refusal = rater.admit("10.0.0.1", "token-a")
    assert refusal.message == "too many requests with your link; wait 1 s and try again"
    assert rater.admit("10.0.0.1", "token-b") is None  # another rater at the same address goes on
    for _ in range(limits.BAD_TOKEN_ADDRESS.burst):
        rater.bad_token("10.0.0.9")
    refusal = rater.admit("10.0.0.9", "token-c")  # refused, and counted: it sent while told to wait
    assert "not valid from your address" in refusal.message and refusal.wait_s == pytest.approx(2.0)
    assert rater.admit("10.0.0.2", "token-c") is None  # other addresses are not touched
    clock.now += 1.0
    assert rater.admit("10.0.0.9", "token-c").wait_s == pytest.approx(2.0)  # still sending: 1 s refilled, 1 charged
    for _ in range(100):
        rater.admit("10.0.0.9", "token-c")
    assert rater.bad_tokens.wait("10.0.0.9") == pytest.approx(limits.BAD_TOKEN_ADDRESS.burst + 1)  # the floor
    clock.now += limits.BAD_TOKEN_ADDRESS.burst + 1
    assert rater.admit("10.0.0.9", "token-c") is None


def test_a_wrong_operator_token_is_counted_and_nothing_sleeps(monkeypatch):
    monkeypatch.setenv("AUGCLIP_STUDY_OPERATOR_TOKEN", "the-right-operator-token")
    clock = Clock()
    operator = Operator(OperatorLimits(clock))

    class Request:  # what gr.Request exposes: the client and the headers
        def __init__(self, host: str) -> None:
            self.client = type("Client", (), {"host": host})()
            self.headers = {}

    operator.check("the-right-operator-token", Request("203.0.113.5"))
    for _ in range(limits.OPERATOR_MISS_ADDRESS.burst):
        with pytest.raises(StudyError, match="not right") as info:
            operator.check("guess", Request("203.0.113.5"))
        assert str(info.value) == NOT_OPERATOR and info.value.status == 403
    assert clock.now == 1000.0  # no pause: the clock the limits read did not move, and nothing else waits
    with pytest.raises(StudyError, match=r"^Too many wrong operator tokens from your address; wait 12 s") as info:
        operator.check("the-right-operator-token", Request("203.0.113.5"))  # refused unchecked while blocked
    assert info.value.status == 429
    operator.check("the-right-operator-token", Request("198.51.100.7"))  # another address
    clock.now += 12
    operator.check("the-right-operator-token", Request("203.0.113.5"))


def test_the_client_address_is_the_peer_the_server_saw():
    # X-Forwarded-For is uvicorn's to read, from the operator's proxies only (AUGCLIP_FORWARDED_ALLOW_IPS;
    # tests/security/test_round_three.py sends forged headers to a running server)
    assert client_address("10.0.0.2") == "10.0.0.2"
    assert client_address("x" * 100) == "x" * 64
    assert client_address(None) == "unknown"
