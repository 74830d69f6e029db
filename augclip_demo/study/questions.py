"""The questions raters answer, in our own words and versioned.

A judgment row stores the version of the wording it answered, so changing a sentence means a new
version (``2afc-v2``), never an edit of a published one: judgments under different wordings must
not be pooled silently.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS: tuple[str, ...] = ("2afc", "rating")
QUESTION_IDS: tuple[str, ...] = ("overall", "text", "source")  # "overall" is always asked
_RATING_SCALE: tuple[int, ...] = (1, 2, 3, 4, 5)
_TWO_AFC_ANSWERS: tuple[str, ...] = ("a", "b", "tie")  # a = the edit with the lower index in the manifest


@dataclass(frozen=True)
class Question:
    id: str
    prompt: str
    low: str = ""  # rating scale ends (ratings only)
    high: str = ""


QUESTION_SETS: dict[str, dict[str, Question]] = {
    "2afc-v1": {
        "overall": Question("overall", "Which edit carries out the text best, while leaving everything else in "
                                       "the original picture as it was?"),
        "text": Question("text", "Which edit matches the text better? Judge only the text here."),
        "source": Question("source", "Which edit keeps more of the original picture, apart from what the text "
                                     "asks to change?"),
    },
    "rating-v1": {
        "overall": Question("overall", "How well does this edit carry out the text while leaving everything else "
                                       "in the original picture as it was?", "1 = not at all", "5 = perfectly"),
        "text": Question("text", "How well does this edit match the text? Judge only the text here.",
                         "1 = not at all", "5 = fully"),
        "source": Question("source", "How much of the original picture does this edit keep, apart from what the "
                                     "text asks to change?", "1 = almost nothing", "5 = all of it"),
    },
}
CURRENT_VERSION: dict[str, str] = {"2afc": "2afc-v1", "rating": "rating-v1"}


def valid_answer(kind: str, answer: object) -> str | None:
    """The answer as stored ("a" / "b" / "tie", or "1".."5"), or ``None`` when it is not one of the choices."""
    if kind == "2afc":
        return answer if isinstance(answer, str) and answer in _TWO_AFC_ANSWERS else None
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int) and answer in _RATING_SCALE:
        return str(answer)
    if isinstance(answer, str) and answer.strip() in {str(v) for v in _RATING_SCALE}:
        return answer.strip()
    return None
