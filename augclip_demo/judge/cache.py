"""On-disk cache of judge answers, one JSON file per (question, images, request, model, prompt version,
temperature, sample and its seed, image size) under ``AUGCLIP_CACHE_DIR/judge/<question>/``, like the
attribute cache. The base URL is not part of the key: the model name names the judge.

Only valid answers are stored (a refusal, a filtered answer or invalid JSON is asked again next
time). The key is stored in the file and checked on read; an unreadable file is ignored with a
warning and rewritten. Nothing secret goes in: the base URL is stored without user info or query.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..attributes.disk_cache import KeyedJsonCache, cache_key
from .answers import Answer, AnswerProblem
from .prompts import Question


class JudgeCache(KeyedJsonCache):
    """Get and put :class:`~.answers.Answer` by key parts; ``root`` defaults to ``AUGCLIP_CACHE_DIR/judge``."""

    what = "judge"
    folder = "judge"

    def path_for(self, parts: dict[str, Any]) -> Path:
        return self.root / str(parts["question"]) / f"{cache_key(parts)}.json"

    def get(self, parts: dict[str, Any], question: Question) -> tuple[Answer, str] | None:
        """(the cached answer, the model name the server reported), or None on a miss."""
        return self._read(parts, lambda data, path: (Answer.from_dict(data.get("answer"), question),
                                                     str(data.get("served_model") or "")), (AnswerProblem,))

    def put(self, parts: dict[str, Any], answer: Answer, served_model: str) -> Path | None:
        """Store a valid answer; a write failure is warned about, never raised."""
        return self._write(parts, {"answer": answer.to_dict(), "served_model": served_model})
