"""Request rates of the rater routes and the operator's token: token buckets, checked before any work.

A bucket holds up to ``burst`` requests and refills at ``per_s`` a second; a request takes one, and
one that finds the bucket empty is refused with the seconds to wait. Buckets are kept per key (a
rater's token, a client's address) in a bounded table: the least recently used key is dropped first,
so a flood of new keys costs at most :data:`_MAX_KEYS` entries (a dropped key starts again full, which
only ever lets a client through sooner). The clock is passed in, so the arithmetic is tested without
waiting.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

_MAX_KEYS = 10_000


@dataclass(frozen=True)
class Rate:
    """``burst`` requests at once, then ``per_s`` a second."""

    burst: int
    per_s: float

    def describe(self) -> str:
        every = 1 / self.per_s
        pace = f"{self.per_s:g} a second" if self.per_s >= 1 else f"one every {every:g} s"
        return f"{self.burst} at once, then {pace}"


# A rater's page makes about five requests per judgment (the task, up to three pictures, the answer)
# and a person needs a second or more per judgment; a class of raters may share one address (a NAT).
RATER_TOKEN = Rate(burst=60, per_s=6.0)
_RATER_ADDRESS = Rate(burst=300, per_s=60.0)
# Requests whose token is unknown, per address: a typo or a stale link is retried a few times, never more.
BAD_TOKEN_ADDRESS = Rate(burst=20, per_s=1.0)
# Wrong operator tokens, per address. No server-wide bucket: it would let anyone lock the operator out of
# the tab; guessing from many addresses is answered by the token's length (16 characters at least, config.py).
OPERATOR_MISS_ADDRESS = Rate(burst=5, per_s=1 / 12)


class Buckets:
    """Token buckets per key (thread-safe)."""

    def __init__(self, rate: Rate, clock: Callable[[], float] = time.monotonic, max_keys: int = _MAX_KEYS):
        self.rate, self.clock, self.max_keys = rate, clock, max_keys
        self._lock = threading.Lock()
        self._state: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)

    def _level(self, key: str, now: float) -> float:
        tokens, at = self._state.get(key, (float(self.rate.burst), now))
        return min(float(self.rate.burst), tokens + (now - at) * self.rate.per_s)

    def _put(self, key: str, tokens: float, now: float) -> None:
        """Record ``key``'s bucket as the newest, forgetting the oldest keys over ``max_keys`` (the lock is held)."""
        self._state[key] = (tokens, now)
        self._state.move_to_end(key)
        while len(self._state) > self.max_keys:
            self._state.popitem(last=False)

    def take(self, key: str) -> float:
        """0 when the request may go (one token taken), else the seconds until the bucket has one."""
        with self._lock:
            now = self.clock()
            tokens = self._level(key, now)
            if tokens >= 1:
                self._put(key, tokens - 1, now)
                return 0.0
            self._put(key, tokens, now)
            return (1 - tokens) / self.rate.per_s

    def charge(self, key: str) -> None:
        """Take one token even from an empty bucket, down to ``-burst``: a client that keeps sending while told
        to wait keeps waiting (at most ``(burst + 1) / per_s`` seconds after it stops)."""
        with self._lock:
            now = self.clock()
            self._put(key, max(-float(self.rate.burst), self._level(key, now) - 1), now)

    def wait(self, key: str) -> float:
        """The seconds until ``key`` may send again (0: now), taking nothing."""
        with self._lock:
            tokens = self._level(key, self.clock())
            return 0.0 if tokens >= 1 else (1 - tokens) / self.rate.per_s


@dataclass(frozen=True)
class Refusal:
    """A request over its rate: the message (what was too frequent, how long to wait) and the wait."""

    message: str
    wait_s: float


def _too_many(wait_s: float, what: str) -> Refusal:
    return Refusal(f"too many {what}; wait {max(1, math.ceil(wait_s))} s and try again", wait_s)


class RaterLimits:
    """The rater routes' limits: per token, per client address, and unknown tokens per address."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.by_token = Buckets(RATER_TOKEN, clock)
        self.by_address = Buckets(_RATER_ADDRESS, clock)
        self.bad_tokens = Buckets(BAD_TOKEN_ADDRESS, clock)

    def admit(self, address: str, token: str) -> Refusal | None:
        """None when the request may go (counted against its address and token); else the refusal (429)."""
        wait = self.bad_tokens.wait(address)
        if wait:
            self.bad_tokens.charge(address)  # still sending while told to wait: waits longer
            return _too_many(self.bad_tokens.wait(address), "requests with a link that is not valid from your address")
        wait = self.by_address.take(address)
        if wait:
            return _too_many(wait, "requests from your address")
        wait = self.by_token.take(token)
        return _too_many(wait, "requests with your link") if wait else None

    def bad_token(self, address: str) -> None:
        """Count a request whose token is not a rater's (or that came without one)."""
        self.bad_tokens.charge(address)


class OperatorLimits:
    """Wrong operator tokens per address. A refused try checks nothing and waits for nothing (no worker thread
    sleeps): the client is told how long to wait."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.by_address = Buckets(OPERATOR_MISS_ADDRESS, clock)

    def blocked(self, address: str) -> Refusal | None:
        """The refusal while this address has used up its wrong tries, else None."""
        wait = self.by_address.wait(address)
        return _too_many(wait, "wrong operator tokens from your address") if wait else None

    def missed(self, address: str) -> None:
        self.by_address.take(address)
