"""On-disk cache of judge answers, one JSON file per (question, images, request, model, prompt version,
temperature, sample and its seed, image size) under ``AUGCLIP_CACHE_DIR/judge/<question>/``, like the
attribute cache. The base URL is not part of the key: the model name names the judge.

Only valid answers are stored (a refusal, a filtered answer or invalid JSON is asked again next
time). The key is stored in the file and checked on read; an unreadable file is ignored with a
warning and rewritten. Nothing secret goes in: the base URL is stored without user info or query.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..attributes.disk_cache import cache_key, write_atomic
from ..config import Settings
from .answers import Answer, AnswerProblem
from .prompts import Question

log = logging.getLogger(__name__)

CACHE_FORMAT = 1


class JudgeCache:
    """Get and put :class:`~.answers.Answer` by key parts; ``root`` defaults to ``AUGCLIP_CACHE_DIR/judge``."""

    def __init__(self, root: str | Path | None = None, settings: Settings | None = None):
        if root is None:
            root = (settings or Settings.from_env()).cache_dir / "judge"
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def path_for(self, parts: dict[str, Any]) -> Path:
        return self.root / str(parts["question"]) / f"{cache_key(parts)}.json"

    def get(self, parts: dict[str, Any], question: Question) -> tuple[Answer, str] | None:
        """(the cached answer, the model name the server reported), or None on a miss."""
        path = self.path_for(parts)
        if not path.is_file():
            self.misses += 1
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
                raise ValueError(f"not a format-{CACHE_FORMAT} judge cache entry")
            if data.get("key") != json.loads(json.dumps(parts, default=str)):
                raise ValueError("its stored key does not match its name")
            answer = Answer.from_dict(data.get("answer"), question)
        except (OSError, UnicodeDecodeError, ValueError, AnswerProblem) as exc:
            log.warning("judge cache file %s is unreadable (%s); ignoring it, it will be rewritten",
                        path, str(exc).splitlines()[0][:200])
            self.misses += 1
            return None
        self.hits += 1
        return answer, str(data.get("served_model") or "")

    def put(self, parts: dict[str, Any], answer: Answer, served_model: str) -> Path | None:
        """Store a valid answer; a write failure is warned about, never raised."""
        path = self.path_for(parts)
        entry = {"format": CACHE_FORMAT, "key": parts, "answer": answer.to_dict(), "served_model": served_model}
        try:
            write_atomic(path, json.dumps(entry, ensure_ascii=False, indent=1, default=str).encode("utf-8"))
        except OSError as exc:
            log.warning("could not write the judge cache file %s (%s); continuing without caching it", path, exc)
            return None
        return path
