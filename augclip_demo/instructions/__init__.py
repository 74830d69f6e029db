"""Edit-instruction parsing: text -> (o1, o2, size state, position state, reference).

Two parsers behind one function: the offline rules (:mod:`.rules`, the default) and an LLM
through the OpenAI-compatible client (:mod:`.llm_parser`). No models and no torch here.
"""

from __future__ import annotations

from typing import Any

from ..errors import InstructionParseError
from .llm_parser import LLMInstructionParser
from .parsed import PARSERS, POSITION_STATES, SIZE_STATES, ParsedInstruction, clean_phrase, is_pronoun
from .rules import parse_with_rules

__all__ = [
    "PARSERS", "POSITION_STATES", "SIZE_STATES", "LLMInstructionParser", "ParsedInstruction", "clean_phrase",
    "is_pronoun", "parse_instruction", "parse_with_rules",
]


def parse_instruction(text: str, parser: str = "rules", *, client: Any = None) -> ParsedInstruction:
    """Parse an editing instruction with the offline rule parser (default) or the LLM parser.

    Args:
        text: the instruction, e.g. ``"put a bird on top of the tower"``.
        parser: ``"rules"`` (offline, :mod:`.rules`) or ``"llm"`` (the three questions of the
            paper's Fig. 6 sent to an OpenAI-compatible chat model, :mod:`.llm_parser`).
        client: for ``"llm"``, an :class:`~augclip_demo.llm.OpenAICompatibleClient` (default: one
            built from the environment).

    Raises:
        InstructionParseError: the instruction names no object, uses a pronoun, or has a form
            the rules do not cover (the message says which and what to do instead).
    """
    if not isinstance(text, str) or not text.strip():
        raise InstructionParseError("the instruction is empty: type what the edit should do, e.g. 'make the cup red'")
    if parser == "rules":
        return parse_with_rules(text)
    if parser == "llm":
        return LLMInstructionParser(client).parse(text)
    raise InstructionParseError(f"unknown instruction parser {parser!r}; choose one of {', '.join(PARSERS)}")
