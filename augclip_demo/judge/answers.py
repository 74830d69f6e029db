"""Reading a judge answer: the JSON object a :class:`~.prompts.Question` asks for, checked field by field.

Validation always runs, whether or not the server was asked to constrain its output: servers that
accept ``response_format`` do not all enforce it, and a reply can be cut short (``finish_reason``
``length``). A problem is reported as a short sentence (:class:`AnswerProblem`), which becomes the
follow-up request of the retry policy and, when retries are spent, the reason the metric is
unavailable.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from .prompts import RATIONALE_MAX_CHARS, SCORE_MAX, SCORE_MIN, Question

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


class AnswerProblem(ValueError):
    """The answer is not the JSON object asked for; the message says what is wrong."""


@dataclass(frozen=True)
class Answer:
    """One valid answer: the sub-scores (0-10), the question's score (their minimum) and the rationale."""

    subscores: dict[str, float]
    rationale: str

    @property
    def score(self) -> float:
        return min(self.subscores.values())

    def to_dict(self) -> dict[str, object]:
        return {"subscores": dict(self.subscores), "rationale": self.rationale}

    @classmethod
    def from_dict(cls, data: dict, question: Question) -> Answer:
        """An answer read back from the cache, checked like a fresh one."""
        if not isinstance(data, dict):
            raise AnswerProblem("not an object")
        return parse_answer(json.dumps({**(data.get("subscores") or {}), "rationale": data.get("rationale")}),
                            question)


def _json_object(text: str) -> object:
    stripped = _FENCE.sub("", text.strip()).strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    start, end = stripped.find("{"), stripped.rfind("}")
    if start == -1 or end <= start:
        raise AnswerProblem("it holds no JSON object")
    try:
        return json.loads(stripped[start:end + 1])
    except json.JSONDecodeError as exc:
        raise AnswerProblem(f"it is not valid JSON ({exc.msg} at character {exc.pos})") from None


def parse_answer(text: str, question: Question) -> Answer:
    """The :class:`Answer` in ``text``, or :class:`AnswerProblem` naming the first thing wrong.

    Scores must be numbers from 0 to 10 (a whole number written as ``7.0`` is accepted, a fraction
    is kept as given; ``true`` / ``"7"`` are refused); the rationale must be a non-empty string and
    is cut to :data:`~.prompts.RATIONALE_MAX_CHARS`. Other fields are ignored.
    """
    data = _json_object(text)
    if not isinstance(data, dict):
        raise AnswerProblem(f"it is a JSON {type(data).__name__}, not an object")
    subscores: dict[str, float] = {}
    for name in question.subscores:
        if name not in data:
            raise AnswerProblem(f'the field "{name}" is missing')
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise AnswerProblem(f'"{name}" must be a number from {SCORE_MIN} to {SCORE_MAX}, got {value!r}'[:200])
        if not SCORE_MIN <= value <= SCORE_MAX:
            raise AnswerProblem(f'"{name}" must be from {SCORE_MIN} to {SCORE_MAX}, got {value!r}')
        subscores[name] = float(value)
    rationale = data.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise AnswerProblem('the field "rationale" must be a non-empty string')
    rationale = " ".join(rationale.split())
    if len(rationale) > RATIONALE_MAX_CHARS:
        rationale = rationale[:RATIONALE_MAX_CHARS - 3] + "..."
    return Answer(subscores, rationale)
