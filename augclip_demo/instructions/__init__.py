"""Edit-instruction parsing: text -> (o1, o2, size state, position state, reference).

Two parsers behind one function: the offline rules (:mod:`.rules`, the default) and an LLM
through the OpenAI-compatible client (:mod:`.llm_parser`, which falls back to the rules). Every
parse carries a confidence and notes; :func:`try_parse` never raises and says why an instruction
has no parse; :func:`~.parsed.apply_corrections` applies a user's field corrections. No models
and no torch here.
"""

from __future__ import annotations

from typing import Any

from ..choices import PARSERS, POSITION_STATES, SIZE_STATES
from ..errors import InstructionParseError
from .edit_types import HATIE_EDIT_TYPES, EditType, check_edit_type, classify_edit_type
from .llm_parser import LLMInstructionParser, fallback_notice
from .parsed import (
    CONFIDENCE_LEVELS,
    CORRECTABLE_FIELDS,
    ParsedInstruction,
    ParseOutcome,
    apply_corrections,
    clean_phrase,
    is_pronoun,
)
from .rules import HAND_FILL_HELP, parse_with_rules

__all__ = [
    "CONFIDENCE_LEVELS", "CORRECTABLE_FIELDS", "EditType", "HATIE_EDIT_TYPES", "check_edit_type",
    "classify_edit_type", "HAND_FILL_HELP", "PARSERS", "POSITION_STATES", "SIZE_STATES",
    "LLMInstructionParser", "ParseOutcome", "ParsedInstruction", "apply_corrections", "clean_phrase", "is_pronoun",
    "parse_instruction", "parse_with_rules", "resolve_parse", "try_parse",
]


def parse_instruction(text: str, parser: str = "rules", *, client: Any = None) -> ParsedInstruction:
    """Parse an editing instruction with the offline rule parser (default) or the LLM parser.

    Args:
        text: the instruction, e.g. ``"put a kite above the trees"``.
        parser: ``"rules"`` (offline, :mod:`.rules`) or ``"llm"`` (an OpenAI-compatible chat model
            answering in JSON, :mod:`.llm_parser`; on any failure the rules answer, with a note).
        client: for ``"llm"``, an :class:`~augclip_demo.llm.OpenAICompatibleClient` (default: one with the
            declared model settings; the key and base URL are the OpenAI SDK's variables).

    Raises:
        InstructionParseError: nothing to parse (a global or style edit, a pronoun, an unknown
            form); the message says why and how to give the fields by hand.
    """
    if not isinstance(text, str) or not text.strip():
        raise InstructionParseError("the instruction is empty: type what the edit should do, e.g. 'make the cup red'")
    if parser == "rules":
        return parse_with_rules(text)
    if parser == "llm":
        return LLMInstructionParser(client).parse(text)
    raise InstructionParseError(f"unknown instruction parser {parser!r}; choose one of {', '.join(PARSERS)}")


def try_parse(text: str, parser: str = "rules", *, client: Any = None) -> ParseOutcome:
    """Like :func:`parse_instruction`, but returns a :class:`ParseOutcome` instead of raising."""
    try:
        parsed = parse_instruction(text, parser, client=client)
    except InstructionParseError as exc:
        return ParseOutcome(None, refusal=str(exc))
    return ParseOutcome(parsed, notice=fallback_notice(parsed))


def resolve_parse(instruction: str | None, corrections: dict[str, Any] | None = None, parser: str = "rules", *,
                  client: Any = None) -> ParsedInstruction:
    """The parse BPM should use: the instruction's parse with the user's corrections applied.

    When o1 or o2 is corrected and the instruction cannot be parsed (or there is none), the
    corrections alone make the parse; otherwise a refusal is raised as it is.
    """
    given = {k: v for k, v in (corrections or {}).items() if v is not None and str(v).strip() != ""}
    names_objects = any(str(given.get(k, "")).strip().lower() not in ("", "none") for k in ("o1", "o2"))
    if instruction and instruction.strip():
        try:
            parsed = parse_instruction(instruction, parser, client=client)
        except InstructionParseError:
            if not names_objects:
                raise
            return apply_corrections(None, corrections, instruction)
        return apply_corrections(parsed, corrections)
    if not names_objects:
        raise InstructionParseError(
            "BPM needs an editing instruction or the objects o1 / o2 (at least one of them). " + HAND_FILL_HELP)
    return apply_corrections(None, corrections, instruction)
