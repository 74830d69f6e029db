"""The judge's two questions, in our own words, and the JSON shape each answer must have.

Each question is one request: *semantic consistency* (``sc``) shows the source and the edited
image with the requested edit; *perceptual quality* (``pq``) shows the edited image alone, so it
cannot be swayed by the request. Each answer holds two sub-scores from 0 to 10 and one short
rationale; a question's score is the smaller sub-score (an edit is only as good as its weaker
side), and the overall score of a sample is the geometric mean of the two question scores (see
docs/judge.md and the method notes for the source of this combination).

Changing any text here changes what the model is asked, so it changes :data:`PROMPT_VERSION`,
which is part of every cache key and recorded with every result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PROMPT_VERSION = "judge-v1"
SCORE_MIN, SCORE_MAX = 0, 10
RATIONALE_MAX_CHARS = 600

SYSTEM_PROMPT = (
    "You grade the output of image-editing systems. You look carefully at every image you are shown, judge "
    "strictly and consistently, and reply with a single JSON object and nothing else: no code fence, no text "
    "before or after it."
)


@dataclass(frozen=True)
class Question:
    """One of the judge's questions: its key, the sub-scores it asks for and how to phrase it."""

    key: str  # "sc" or "pq"
    label: str
    subscores: tuple[str, ...]  # JSON fields, each an integer from 0 to 10
    uses_source: bool  # the source image is shown (before the edited one)
    uses_text: bool  # the edit request is quoted

    def schema(self) -> dict[str, Any]:
        """The JSON schema of an answer (sent as ``response_format`` where the server takes one)."""
        properties: dict[str, Any] = {
            name: {"type": "integer", "minimum": SCORE_MIN, "maximum": SCORE_MAX} for name in self.subscores}
        properties["rationale"] = {"type": "string"}
        return {"type": "object", "properties": properties, "required": [*self.subscores, "rationale"],
                "additionalProperties": False}

    def response_format(self) -> dict[str, Any]:
        return {"type": "json_schema",
                "json_schema": {"name": f"edit_judge_{self.key}", "strict": True, "schema": self.schema()}}


SEMANTIC = Question("sc", "semantic consistency", ("follows_request", "keeps_the_rest"), True, True)
QUALITY = Question("pq", "perceptual quality", ("looks_natural", "free_of_artifacts"), False, False)
QUESTIONS: dict[str, Question] = {q.key: q for q in (SEMANTIC, QUALITY)}

_SC_TEXT = """Two images follow. The first one is the original picture; the second one is the result of an \
editing system that was asked for this change:

REQUEST: {request}

(The request may be an instruction, or a description of how the result should look.)

Give two integer scores from 0 to 10.
- follows_request: how completely the second image carries out the request. 0 means nothing asked for is \
visible; 10 means every part of the request is fully done.
- keeps_the_rest: how well the second image leaves alone what the request did not ask to change (the other \
objects, the background, the layout, the identity of people). 0 means the picture was changed far beyond the \
request; 10 means only the requested change was made.

Reply with exactly this JSON object:
{{"follows_request": <0-10>, "keeps_the_rest": <0-10>, "rationale": "<one or two short sentences saying why>"}}"""

_PQ_TEXT = """One image follows. It was produced by an image-editing system. Judge only how it looks, not what \
it shows or whether it matches any request.

Give two integer scores from 0 to 10.
- looks_natural: how believable the picture is: consistent lighting, shadows, perspective and proportions. \
0 means clearly unnatural; 10 means it could be a real photograph or a carefully made artwork.
- free_of_artifacts: how free the picture is of defects such as blur, smears, warped shapes, broken hands or \
faces, seams, noise or repeated patterns. 0 means heavy defects; 10 means none at all.

Reply with exactly this JSON object:
{{"looks_natural": <0-10>, "free_of_artifacts": <0-10>, "rationale": "<one or two short sentences saying why>"}}"""


def question_text(question: Question, request: str | None) -> str:
    """The user-message text of ``question`` (``request``: the edit instruction or target description)."""
    if question.key == "sc":
        return _SC_TEXT.format(request=" ".join((request or "").split()))
    return _PQ_TEXT


def correction_text(problem: str, question: Question) -> str:
    """The follow-up sent after an answer that was not the JSON asked for (see the retry policy)."""
    fields = ", ".join(f'"{name}"' for name in question.subscores)
    return (f"That reply could not be used: {problem}. Reply again with only one JSON object holding the integer "
            f"fields {fields} (each from 0 to 10) and the string field \"rationale\".")
