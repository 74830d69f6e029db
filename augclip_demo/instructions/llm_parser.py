"""LLM instruction parser: the three questions of the BPM paper's Fig. 6, in our words.

The paper asks an LLM three separate questions (object identification, size state, position
state), each with a few worked examples. We do the same through the project's
OpenAI-compatible client (:class:`~augclip_demo.llm.OpenAICompatibleClient`, the client the
attribute providers use), at temperature 0 with a fixed seed, and read the answers with tolerant
patterns. One difference, for the reference object: where Fig. 6's position example treats the
anchor ("tower" in "put a bird on top of the tower") as the *original* object, we ask for it
separately as the reference, so that an added object keeps o1 = None (Sec. 3.2) and is still
placed relative to its anchor; the object question's examples say so.

Answers that name no usable object or state raise :class:`InstructionParseError` quoting the
answer (never the request or any key). Parses are cached per (endpoint, model, instruction) for
the life of the process.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from ..errors import InstructionParseError
from .parsed import POSITION_STATES, SIZE_STATES, ParsedInstruction, clean_phrase

SEED = 0
MAX_TOKENS = 60

OBJECT_PROMPT = """You read instructions for editing an image. Say which part of the ORIGINAL image the \
instruction changes, and what that part becomes in the EDITED image. Write "None" when a side does not \
exist: nothing of the original is changed when something is only added, and nothing appears in the \
edited image when something is only removed. If the new thing is placed on or next to an existing \
object, that object is not changed, so the original side is None. Use short noun phrases and give no \
reasons.
Answer in exactly this form: Original image: <phrase or None>. Edited image: <phrase or None>.

Examples:
Instruction: "Swap the bike for a bear." Answer: Original image: bike. Edited image: bear.
Instruction: "Add a bear." Answer: Original image: None. Edited image: bear.
Instruction: "Take the bike away." Answer: Original image: bike. Edited image: None.
Instruction: "Put a bird on top of the tower." Answer: Original image: None. Edited image: bird.
Instruction: "Make the hydrant blue." Answer: Original image: hydrant. Edited image: blue hydrant.

Instruction: "{instruction}" Answer:"""

SIZE_PROMPT = """You read instructions for editing an image. Say how the size of the edited object \
should change: "larger", "smaller" or "unchanged". Answer with that one word and give no reasons.

Examples:
Instruction: "Give the bear bigger claws." Answer: larger.
Instruction: "Make the hydrant blue." Answer: unchanged.
Instruction: "Make the vase smaller." Answer: smaller.

Instruction: "{instruction}" Answer:"""

POSITION_PROMPT = """You read instructions for editing an image, together with the edited area in the \
original image and in the edited image. Say where the edited area of the edited image should lie \
relative to its anchor: the object the instruction places it against, or, when there is none, the \
edited area of the original image. Choose one of: "left", "right", "up", "down", "inside", "near", \
"unchanged". Name the anchor object as the reference, or None when the instruction names no anchor \
object. Give no reasons.
Answer in exactly this form: Position: <one of the choices>. Reference: <phrase or None>.

Examples:
Instruction: "Put a car on the screen of the laptop." Original area: None. Edited area: car. \
Answer: Position: inside. Reference: screen of the laptop.
Instruction: "Put a bird on top of the tower." Original area: None. Edited area: bird. \
Answer: Position: up. Reference: tower.
Instruction: "Replace the cat with a dog." Original area: cat. Edited area: dog. \
Answer: Position: unchanged. Reference: None.
Instruction: "Move the apple to the right." Original area: apple. Edited area: apple. \
Answer: Position: right. Reference: None.

Instruction: "{instruction}" Original area: {o1}. Edited area: {o2}. Answer:"""

_FIELD_END = r"(?=\s*(?:[.;,\n]|$|edited|reference|position))"
_ORIGINAL = re.compile(r"original(?:\s+(?:image|area))?[\s*]*[:=-]\s*[\"'*]*(.*?)[\"'*]*" + _FIELD_END, re.I | re.S)
_EDITED = re.compile(r"edited(?:\s+(?:image|area))?[\s*]*[:=-]\s*[\"'*]*(.*?)[\"'*]*" + _FIELD_END, re.I | re.S)
_POSITION = re.compile(r"position[\s*]*[:=-]\s*[\"'*]*([a-z]+)", re.I)
_REFERENCE = re.compile(r"reference[\s*]*[:=-]\s*[\"'*]*(.*?)[\"'*]*" + _FIELD_END, re.I | re.S)
_SIZE_WORDS = {"larger": "larger", "bigger": "larger", "smaller": "smaller", "unchanged": "unchanged",
               "same": "unchanged", "no change": "unchanged"}

_CACHE: dict[tuple[str, str, str], ParsedInstruction] = {}
_CACHE_LOCK = threading.Lock()


def read_objects(answer: str) -> tuple[str | None, str | None]:
    """(o1, o2) from an answer like ``Original image: bike. Edited image: bear.``"""
    original, edited = _ORIGINAL.search(answer), _EDITED.search(answer)
    if not original or not edited:
        raise ValueError("the answer does not have the form 'Original image: ... Edited image: ...'")
    return clean_phrase(original.group(1)), clean_phrase(edited.group(1))


def read_size(answer: str) -> str:
    """``larger`` / ``smaller`` / ``unchanged`` from the first state word in the answer."""
    found = re.search(r"\b(larger|bigger|smaller|unchanged|same|no change)\b", answer, re.I)
    if not found:
        raise ValueError(f"the answer names none of {', '.join(SIZE_STATES)}")
    return _SIZE_WORDS[found.group(1).lower()]


def read_position(answer: str) -> tuple[str, str | None]:
    """(state, reference) from an answer like ``Position: up. Reference: tower.``"""
    labelled = _POSITION.search(answer)
    state = labelled.group(1).lower() if labelled else None
    if state not in POSITION_STATES:
        words = re.findall(r"\b(" + "|".join(POSITION_STATES) + r")\b", answer, re.I)
        state = words[0].lower() if words else None
    if state is None:
        raise ValueError(f"the answer names none of {', '.join(POSITION_STATES)}")
    reference = _REFERENCE.search(answer)
    return state, clean_phrase(reference.group(1)) if reference else None


class LLMInstructionParser:
    """Parses instructions by asking an OpenAI-compatible chat model the three Fig. 6 questions.

    Args:
        client: anything with ``chat(messages, *, seed, temperature, max_tokens) -> str``
            (default: :class:`~augclip_demo.llm.OpenAICompatibleClient` from the environment:
            ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``AUGCLIP_MLLM_MODEL``).
        use_cache: reuse a parse of the same instruction by the same endpoint and model.
    """

    def __init__(self, client: Any = None, *, use_cache: bool = True):
        if client is None:
            from ..llm import OpenAICompatibleClient

            client = OpenAICompatibleClient()
        self.client = client
        self.use_cache = use_cache

    def _ask(self, prompt: str) -> str:
        return self.client.chat([{"role": "user", "content": prompt}], seed=SEED, temperature=0.0,
                                max_tokens=MAX_TOKENS)

    def _where(self) -> str:
        return f"{getattr(self.client, 'base_url', 'the LLM')} (model {getattr(self.client, 'model', '?')})"

    def parse(self, instruction: str) -> ParsedInstruction:
        """Three chat calls: objects, size, then position (which needs the objects)."""
        if not isinstance(instruction, str) or not instruction.strip():
            raise InstructionParseError("the instruction is empty: type what the edit should do")
        text = re.sub(r"\s+", " ", instruction).strip()
        key = (str(getattr(self.client, "base_url", "")), str(getattr(self.client, "model", "")), text)
        if self.use_cache:
            with _CACHE_LOCK:
                if key in _CACHE:
                    return _CACHE[key]
        quoted = text.replace('"', "'")
        answer = self._ask(OBJECT_PROMPT.format(instruction=quoted))
        try:
            o1, o2 = read_objects(answer)
        except ValueError as exc:
            raise self._unusable("objects", answer, exc) from None
        if o1 is None and o2 is None:
            raise InstructionParseError(
                f"{self._where()} found no object in {text!r} (answer: {_short(answer)}); name the object in the "
                "instruction or fill o1/o2 by hand"
            )
        answer = self._ask(SIZE_PROMPT.format(instruction=quoted))
        try:
            size = read_size(answer)
        except ValueError as exc:
            raise self._unusable("size state", answer, exc) from None
        answer = self._ask(POSITION_PROMPT.format(instruction=quoted, o1=o1 or "None", o2=o2 or "None"))
        try:
            position, reference = read_position(answer)
        except ValueError as exc:
            raise self._unusable("position state", answer, exc) from None
        edit_type = "add" if o1 is None else "remove" if o2 is None else "llm"
        parsed = ParsedInstruction(o1=o1, o2=o2, size_state=size, position_state=position, reference=reference,
                                   edit_type=edit_type, parser="llm", instruction=text)
        if self.use_cache:
            with _CACHE_LOCK:
                _CACHE[key] = parsed
        return parsed

    def _unusable(self, what: str, answer: str, exc: Exception) -> InstructionParseError:
        return InstructionParseError(
            f"{self._where()} answered the {what} question with {_short(answer)}, which cannot be read: {exc}. "
            "Try again, use another model, the rule parser, or fill the fields by hand"
        )


def _short(text: str, limit: int = 160) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
