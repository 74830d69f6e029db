"""A chat server answer for the MLLM judge: deterministic scores from the request's seed, plus triggers
in the edit request that make the server refuse, filter, or send text that is not the JSON asked for.

Semantic consistency (the request names ``follows_request``): ``follows_request = 6 + seed % 3``,
``keeps_the_rest = 8``. Perceptual quality: ``looks_natural = 9``, ``free_of_artifacts = 5 + seed % 2``.
So seeds 0, 1, 2 give SC 6, 7, 8 and PQ 5, 6, 5 (each question's score is the smaller sub-score).

Triggers (words in the edit request, which only the SC question quotes):
``REFUSE`` -> a refusal; ``FILTER`` -> ``finish_reason="content_filter"``; ``GARBLE`` -> prose without
JSON on the first attempt, valid JSON once the judge's correction follows; ``GARBLE-ALWAYS`` -> never JSON;
``RANGE`` -> a score of 12 (out of range) on every attempt.
"""

from __future__ import annotations

import json
import threading
import time

from augclip_demo.judge.prompts import SYSTEM_PROMPT
from tests.support.chat_server import Recorded, Scripted, completion

SECRET_IN_REFUSAL = "sk-proj-LEAKEDKEY0123456789"


def sc_scores(seed: int) -> dict[str, int]:
    return {"follows_request": 6 + seed % 3, "keeps_the_rest": 8}


def pq_scores(seed: int) -> dict[str, int]:
    return {"looks_natural": 9, "free_of_artifacts": 5 + seed % 2}


def judge_answer(request: Recorded) -> str | Scripted:
    body = request.body if isinstance(request.body, dict) else {}
    seed = int(body.get("seed") or 0)
    texts = request.texts()
    assert texts and texts[0] == SYSTEM_PROMPT, "the judge sends its system prompt first"
    question = texts[1]
    corrected = len(texts) > 2  # the judge's follow-up after an unusable answer
    if "follows_request" in question:
        if "GARBLE-ALWAYS" in question or ("GARBLE" in question and not corrected):
            return "The edit looks fine to me, I would give it a seven."
        if "REFUSE" in question:
            return Scripted(200, completion(None, refusal=f"I cannot judge this image. ({SECRET_IN_REFUSAL})"))
        if "FILTER" in question:
            return Scripted(200, completion(None, finish_reason="content_filter"))
        scores = sc_scores(seed)
        if "RANGE" in question:
            scores["follows_request"] = 12
        return json.dumps({**scores, "rationale": f"semantic answer for seed {seed}"})
    return json.dumps({**pq_scores(seed), "rationale": f"quality answer for seed {seed}"})


class ConcurrencyProbe:
    """Wraps a responder: each answer takes ``delay`` seconds; records the most requests in flight at once
    and when each request arrived."""

    def __init__(self, responder, delay: float = 0.05):
        self.responder = responder
        self.delay = delay
        self.in_flight = 0
        self.peak = 0
        self.arrivals: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, request: Recorded):
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.arrivals.append(time.monotonic())
        try:
            time.sleep(self.delay)
            return self.responder(request)
        finally:
            with self._lock:
                self.in_flight -= 1
