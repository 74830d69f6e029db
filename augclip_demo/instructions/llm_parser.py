"""LLM instruction parser: one question, one JSON answer checked against a schema, rules as fallback.

The BPM paper parses instructions with an LLM (Alg. 1 line 4: o1, o2, the size state and the
position state). We ask an OpenAI-compatible chat model (the project's
:class:`~augclip_demo.llm.OpenAICompatibleClient`, at temperature 0 with a fixed seed) for all
fields at once, as a JSON object whose form :data:`ANSWER_SCHEMA` fixes and :func:`read_answer`
checks field by field. The prompt and its worked examples are our own.

Any failure (the server cannot be reached, answers something that is not JSON, or JSON that breaks
the schema) falls back to the offline rules: the parse is the rules' parse, with a note that says
the LLM failed and why, so the app, the CLI and batch results show it. An answer that says the
instruction is a global or style edit is not a failure: it is refused like the rules refuse one.
Parses are cached per (endpoint, model, instruction) for the life of the process.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from ..errors import InstructionParseError
from .parsed import POSITION_STATES, SIZE_STATES, ParsedInstruction, clean_phrase, is_pronoun

SEED = 0
_MAX_TOKENS = 300

#: The answer's form (JSON Schema, draft 2020-12 vocabulary); :func:`read_answer` enforces it.
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["o1", "o2", "size_state", "position_state"],
    "properties": {
        "o1": {"type": ["string", "null"]},
        "o2": {"type": ["string", "null"]},
        "size_state": {"enum": list(SIZE_STATES)},
        "position_state": {"enum": list(POSITION_STATES)},
        "reference": {"type": ["string", "null"]},
        "other_changes": {"type": "array", "items": {"type": "string"}},
        "global_edit": {"type": "boolean"},
        "confidence": {"enum": ["high", "medium", "low"]},
        "note": {"type": ["string", "null"]},
    },
    "additionalProperties": False,
}

SYSTEM_PROMPT = """You turn one image-editing request into a JSON object for an evaluation tool. The tool \
finds objects with a detector, so every object must be a short noun phrase a detector could find \
("red mug", "old man"), never a pronoun and never the whole picture.

Fields:
- "o1": what the request changes in the ORIGINAL picture, or null when something is only added.
- "o2": what stands in its place in the EDITED picture, or null when something is only taken away.
  When an object keeps its identity but changes colour, material, pose or clothing, o1 is the \
object and o2 the object with the change ("lamp" -> "green lamp", "horse" -> "horse rearing").
- "size_state": "larger", "smaller" or "unchanged": how the edited object's area should change. \
Moving an object nearer the camera makes it larger; moving it further away makes it smaller.
- "position_state": one of "left", "right", "up", "down", "inside", "near", "unchanged": where the \
edited object should end up relative to the reference object, or, without one, relative to where \
it was. "near" covers beside, behind, in front of and between; for a corner keep the left/right part.
- "reference": the object the new position is described against, or null.
- "other_changes": short descriptions of further changes when the request asks for several things \
to different objects; o1/o2 describe the first one.
- "global_edit": true when the request changes the whole picture (style, lighting, colours, season, \
camera) and names no object; then o1 and o2 are null.
- "confidence": "high", "medium" or "low".
Reply with the JSON object only, no prose and no code fence."""

#: Worked examples in our own words (none is taken from a paper).
EXAMPLES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("trade the lantern for a candle",
     {"o1": "lantern", "o2": "candle", "size_state": "unchanged", "position_state": "unchanged", "reference": None,
      "other_changes": [], "global_edit": False, "confidence": "high"}),
    ("could you hang a kite above the oak tree?",
     {"o1": None, "o2": "kite", "size_state": "unchanged", "position_state": "up", "reference": "oak tree",
      "other_changes": [], "global_edit": False, "confidence": "high"}),
    ("the teapot ought to be much smaller and blue",
     {"o1": "teapot", "o2": "blue teapot", "size_state": "smaller", "position_state": "unchanged", "reference": None,
      "other_changes": [], "global_edit": False, "confidence": "high"}),
    ("take the scarf off the snowman and put a bird on the fence",
     {"o1": "scarf", "o2": None, "size_state": "unchanged", "position_state": "unchanged", "reference": None,
      "other_changes": ["add a bird on the fence"], "global_edit": False, "confidence": "medium"}),
    ("give everything a grainy old-film feel",
     {"o1": None, "o2": None, "size_state": "unchanged", "position_state": "unchanged", "reference": None,
      "other_changes": [], "global_edit": True, "confidence": "high"}),
)

_CACHE: dict[tuple[str, str, str], ParsedInstruction] = {}
_CACHE_LOCK = threading.Lock()


def build_messages(instruction: str) -> list[dict[str, str]]:
    """The chat: our system prompt, the worked examples as earlier turns, then the request."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    for text, answer in EXAMPLES:
        messages.append({"role": "user", "content": f"Request: {text}"})
        messages.append({"role": "assistant", "content": json.dumps(answer)})
    messages.append({"role": "user", "content": f"Request: {instruction}"})
    return messages


class _AnswerError(ValueError):
    """The model's answer is not a JSON object of :data:`ANSWER_SCHEMA`'s form."""


def _json_object(answer: str) -> dict[str, Any]:
    text = answer.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.S)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise _AnswerError("the answer is not JSON") from None
        try:
            data = json.loads(text[start:end + 1])
        except json.JSONDecodeError as exc:
            raise _AnswerError(f"the answer is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(data, dict):
        raise _AnswerError(f"the answer is JSON {type(data).__name__}, not an object")
    return data


def validate_answer(data: dict[str, Any]) -> list[str]:
    """Every way ``data`` breaks :data:`ANSWER_SCHEMA` (empty when it fits)."""
    problems = []
    properties = ANSWER_SCHEMA["properties"]
    for key in ANSWER_SCHEMA["required"]:
        if key not in data:
            problems.append(f"'{key}' is missing")
    for key, value in data.items():
        rule = properties.get(key)
        if rule is None:
            problems.append(f"unknown field '{key}'")
            continue
        if "enum" in rule and value not in rule["enum"]:
            problems.append(f"'{key}' is {value!r}, not one of {', '.join(map(str, rule['enum']))}")
        kinds = rule.get("type")
        if kinds is None:
            continue
        kinds = kinds if isinstance(kinds, list) else [kinds]
        ok = any((kind == "string" and isinstance(value, str)) or (kind == "null" and value is None)
                 or (kind == "boolean" and isinstance(value, bool))
                 or (kind == "array" and isinstance(value, list) and all(isinstance(v, str) for v in value))
                 for kind in kinds)
        if not ok:
            problems.append(f"'{key}' is {type(value).__name__}, expected {' or '.join(kinds)}")
    return problems


def read_answer(answer: str, instruction: str) -> ParsedInstruction:
    """The parse in a model's answer; :class:`_AnswerError` when it breaks the schema or names no
    usable object; :class:`InstructionParseError` when the model calls it a global edit."""
    data = _json_object(answer)
    problems = validate_answer(data)
    if problems:
        raise _AnswerError("the JSON does not fit the schema: " + "; ".join(problems))
    if data.get("global_edit"):
        from .rules import HAND_FILL_HELP

        raise InstructionParseError(
            f"the LLM parser calls {instruction!r} a global or style edit: it names no object BPM could locate. "
            f"{HAND_FILL_HELP}")
    for key in ("o1", "o2", "reference"):
        phrase = clean_phrase(data.get(key))
        if is_pronoun(phrase):
            raise _AnswerError(f"'{key}' is {phrase!r}, which names no object")
    if clean_phrase(data.get("o1")) is None and clean_phrase(data.get("o2")) is None:
        raise _AnswerError("both o1 and o2 are null but global_edit is not true")
    edit_type = "add" if clean_phrase(data["o1"]) is None else "remove" if clean_phrase(data["o2"]) is None else "llm"
    confidence = data.get("confidence") or "medium"
    notes = (str(data["note"]),) if data.get("note") else ()
    return ParsedInstruction(o1=data["o1"], o2=data["o2"], size_state=data["size_state"],
                             position_state=data["position_state"], reference=data.get("reference"),
                             edit_type=edit_type, parser="llm", instruction=instruction, confidence=confidence,
                             notes=notes, other_changes=tuple(data.get("other_changes") or ()))


class LLMInstructionParser:
    """Parses instructions with an OpenAI-compatible chat model; falls back to the rules on failure.

    Args:
        client: anything with ``chat(messages, *, seed, temperature, max_tokens) -> str``
            (default: :class:`~augclip_demo.llm.OpenAICompatibleClient` with the
            declared model settings; the key and base URL are the OpenAI SDK's variables).
        use_cache: reuse a parse of the same instruction by the same endpoint and model.
        fallback: on a failure, answer with the rule parser's parse and a notice (default);
            ``False`` raises :class:`InstructionParseError` / :class:`~augclip_demo.errors.LLMError`.
    """

    def __init__(self, client: Any = None, *, use_cache: bool = True, fallback: bool = True):
        if client is None:
            from ..llm import OpenAICompatibleClient

            client = OpenAICompatibleClient()
        self.client = client
        self.use_cache = use_cache
        self.fallback = fallback

    def _where(self) -> str:
        return f"{getattr(self.client, 'base_url', 'the LLM')} (model {getattr(self.client, 'model', '?')})"

    def parse(self, instruction: str) -> ParsedInstruction:
        if not isinstance(instruction, str) or not instruction.strip():
            raise InstructionParseError("the instruction is empty: type what the edit should do")
        text = re.sub(r"\s+", " ", instruction).strip()
        key = (str(getattr(self.client, "base_url", "")), str(getattr(self.client, "model", "")), text)
        if self.use_cache:
            with _CACHE_LOCK:
                if key in _CACHE:
                    return _CACHE[key]
        from ..errors import LLMError

        try:
            answer = self.client.chat(build_messages(text), seed=SEED, temperature=0.0, max_tokens=_MAX_TOKENS)
            parsed = read_answer(answer, text)
        except (LLMError, _AnswerError) as exc:
            reason = (f"the answer of {self._where()} could not be used: {exc}; answer {_short(answer)}"
                      if isinstance(exc, _AnswerError) else f"{self._where()} failed: {exc}")
            if not self.fallback:
                if isinstance(exc, LLMError):
                    raise
                raise InstructionParseError(
                    f"{reason}. Try again, use the rule parser, or fill the fields by hand") from None
            return self._from_rules(text, reason)
        if self.use_cache:
            with _CACHE_LOCK:
                _CACHE[key] = parsed
        return parsed

    @staticmethod
    def _from_rules(text: str, reason: str) -> ParsedInstruction:
        from dataclasses import replace

        from .rules import parse_with_rules

        notice = f"LLM parser unavailable ({reason}); this parse comes from the offline rules"
        try:
            parsed = parse_with_rules(text)
        except InstructionParseError as exc:
            raise InstructionParseError(f"{notice}, which refuse it too: {exc}") from None
        return replace(parsed, notes=(notice, *parsed.notes))


def fallback_notice(parsed: ParsedInstruction) -> str | None:
    """The fallback notice of a parse the LLM parser handed to the rules, else None."""
    return next((n for n in parsed.notes if n.startswith("LLM parser unavailable")), None)


def _short(text: str, limit: int = 160) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
