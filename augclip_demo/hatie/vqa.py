"""HATIE's VQA component through our OpenAI-compatible multimodal client.

HATIE asks a large local VQA model yes / no questions about the edited image. We ask any
OpenAI-compatible vision model instead: one question, an answer of one word, scored as
P(yes) = e^yes / (e^yes + e^no) from the first answer token's log-probabilities when the server
gives them (OpenAI, vLLM), else 1 for a "yes" answer and 0 for a "no". Any other answer is an
error (never a made-up score).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from PIL import Image

from ..errors import LLMError
from ..llm.client import user_message

#: Our wording of the yes / no question (the answer format is fixed so the first token decides).
QUESTION = "Answer with one word, yes or no. {question}"


@dataclass(frozen=True)
class VqaAnswer:
    """P(yes) for one question and how it was read (``logprobs`` or ``text``)."""

    p_yes: float
    how: str
    answer: str


def yes_probability(logprobs: dict[str, float] | None, text: str) -> tuple[float, str]:
    """(P(yes), how): from the yes / no tokens' log-probabilities (summed over spellings such as
    "Yes", " yes"), else from the answer's first word; raises ValueError for any other answer."""
    if logprobs:
        mass = {"yes": 0.0, "no": 0.0}
        for token, logprob in logprobs.items():
            word = token.strip().strip(".,!").lower()
            if word in mass and math.isfinite(logprob):
                mass[word] += math.exp(logprob)
        if mass["yes"] + mass["no"] > 0:
            return mass["yes"] / (mass["yes"] + mass["no"]), "logprobs"
    words = text.strip().lower().split()
    first = words[0].strip(".,!\"'") if words else ""
    if first in ("yes", "no"):
        return (1.0 if first == "yes" else 0.0), "text"
    raise ValueError(f"the VQA answer is neither yes nor no: {text.strip()[:60]!r}")


class VqaScorer:
    """Asks yes / no questions about images through an :class:`~augclip_demo.llm.OpenAICompatibleClient`."""

    def __init__(self, client: Any, *, top_logprobs: int = 5, max_side: int = 512):
        self.client = client
        self.top_logprobs = top_logprobs
        self.max_side = max_side

    def info(self) -> dict[str, Any]:
        return {"base_url": getattr(self.client, "base_url", None), "model": getattr(self.client, "model", None)}

    def ask(self, image: Image.Image, question: str) -> VqaAnswer:
        message = user_message(QUESTION.format(question=question), [image], max_side=self.max_side,
                               image_format="PNG")
        reply = self.client.complete([message], temperature=0.0, max_tokens=2, top_logprobs=self.top_logprobs)
        try:
            p, how = yes_probability(reply.first_token_logprobs, reply.text)
        except ValueError as exc:
            raise LLMError(f"VQA through {getattr(self.client, 'base_url', '?')}: {exc}", kind="bad_response") from None
        return VqaAnswer(p, how, reply.text.strip()[:40])


def object_question(name: str) -> str:
    return f"Does the picture show a {name}?"


def relation_question(relation_text: str) -> str:
    return f"Does the picture show a {relation_text}?"


def scene_question(text: str) -> str:
    return f"Is this picture {text}?"
