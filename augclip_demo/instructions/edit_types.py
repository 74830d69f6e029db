"""HATIE's edit type of an instruction: add, remove, replace, resize, attribute, background or style.

HATIE scores each edit type with its own criteria (Ryu et al., CVPR 2025, Sec. 3.2 and App. C.1), so the type
must be known. It comes, in order of precedence, from the user (the manifest's ``edit_type`` or the
app's choice: confidence ``given``), else from the instruction's parse (the BPM parse's own kind
mapped to HATIE's seven), else, for the whole-picture edits the BPM parser refuses (style changes,
weather or lighting), from a few style words. Every answer carries a confidence and the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import InstructionParseError
from .parsed import ParsedInstruction

HATIE_EDIT_TYPES: tuple[str, ...] = ("add", "remove", "replace", "resize", "attribute", "background", "style")

#: The parse's own kinds (rules / LLM parser) -> HATIE's types; None: HATIE has no such edit.
_FROM_PARSE: dict[str, str | None] = {
    "add": "add", "remove": "remove", "replace": "replace", "resize": "resize", "attribute": "attribute",
    "state": "attribute", "pose": "attribute", "background": "background", "move": None, "keep": None,
}
_STYLE = re.compile(
    r"\b(?:painting|painted|paint|sketch|drawing|drawn|cartoon|anime|watercolou?r|oil|van\s+gogh|mosaic|pop\s+art|"
    r"graffiti|egyptian|pixel\s+art|comic|illustration|style|styled|art|artwork|gr[ae]y\s*scale|black\s+and\s+white|"
    r"monochrome|sepia|impressionis\w*|cubis\w*|ukiyo|pencil|charcoal|crayon|pastel|vintage|retro)\b")
_WHOLE_PICTURE = frozenset({"scene", "image", "picture", "photo", "photograph", "everything", "whole", "view"})
_BACKGROUND = re.compile(r"\b(?:background|backdrop|scenery|setting|surroundings)\b")


@dataclass(frozen=True)
class EditType:
    """An edit's HATIE type (None: not one of HATIE's), how sure we are, and why."""

    edit_type: str | None
    confidence: str  # high / medium / low / given (as the parse's confidence levels)
    source: str  # "given" (manifest or app), "parse", "style words", "none"
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"edit_type": self.edit_type, "confidence": self.confidence, "source": self.source,
                "reason": self.reason}


def check_edit_type(value: Any) -> str:
    """A user-given edit type, checked (case and spaces ignored; "object add" style names accepted)."""
    if not isinstance(value, str):
        raise InstructionParseError(f"edit_type must be text, one of {', '.join(HATIE_EDIT_TYPES)}")
    text = re.sub(r"[\s_-]+", " ", value.strip().lower())
    text = re.sub(r"^(?:object )|(?: change)$|(?:ment|ing|al)$", "", text).strip()
    aliases = {"addition": "add", "add": "add", "remov": "remove", "remove": "remove", "replace": "replace",
               "replac": "replace", "resiz": "resize", "resize": "resize", "attribute": "attribute",
               "background": "background", "style": "style"}
    if text not in aliases:
        raise InstructionParseError(f"unknown edit_type {value!r}; choose one of {', '.join(HATIE_EDIT_TYPES)}")
    return aliases[text]


def classify_edit_type(instruction: str | None, parsed: ParsedInstruction | None = None,
                       given: str | None = None) -> EditType:
    """The HATIE type of one edit (see the module docstring for the order of the sources)."""
    if given:
        return EditType(check_edit_type(given), "given", "given", "chosen by the user")
    text = (instruction or "").lower()
    if parsed is not None:
        kind = parsed.edit_type
        if kind in _FROM_PARSE:
            mapped = _FROM_PARSE[kind]
            if mapped is None:
                return EditType(None, parsed.confidence if parsed.confidence != "given" else "medium", "parse",
                                f"the parse reads a {kind} edit, which HATIE does not score (no such edit type)")
            if mapped == "resize" and parsed.size_state == "unchanged":
                return EditType(None, "low", "parse", "a resize without a direction (larger or smaller)")
            if (parsed.o2 and _STYLE.search(parsed.o2)
                    and _WHOLE_PICTURE & set(re.findall(r"[a-z]+", parsed.o1 or ""))):
                return EditType("style", "medium", "parse", f"the parse turns the whole picture into {parsed.o2!r}")
            if kind == "background" and _STYLE.search(text) and not _BACKGROUND.search(text):
                return EditType("style", "medium", "parse", "the parse says background, the words say style")
            reason = f"the {parsed.parser} parse reads the edit as {kind}"
            confidence = "medium" if kind in ("state", "pose") else parsed.confidence
            return EditType(mapped, "medium" if confidence == "given" else confidence, "parse", reason)
        return _from_fields(parsed)
    if not text.strip():
        return EditType(None, "low", "none", "no instruction and no parse: give edit_type")
    if _BACKGROUND.search(text):
        return EditType("background", "medium", "style words", "the instruction names the background")
    if _STYLE.search(text):
        return EditType("style", "high", "style words", "the instruction asks for a style of the whole picture")
    return EditType("style", "low", "style words",
                    "the parser found no object: read as a whole-picture (style) change; check it")


def _head(phrase: str | None) -> str | None:
    return phrase.split()[-1] if phrase else None


def _from_fields(parsed: ParsedInstruction) -> EditType:
    """A hand-filled or LLM parse without a known kind: the type from its fields."""
    why = "from the parse's fields"
    if parsed.o1 is None:
        return EditType("add", "medium", "parse", f"{why}: no o1, a new object")
    if parsed.o2 is None:
        return EditType("remove", "medium", "parse", f"{why}: no o2, the object goes")
    if parsed.o1 == "background" or _head(parsed.o2) == "background":
        return EditType("background", "medium", "parse", f"{why}: the background changes")
    if parsed.size_state != "unchanged" and _head(parsed.o1) == _head(parsed.o2):
        return EditType("resize", "medium", "parse", f"{why}: the same object, {parsed.size_state}")
    if _head(parsed.o1) == _head(parsed.o2):
        return EditType("attribute", "medium", "parse", f"{why}: the same object with new words")
    return EditType("replace", "medium", "parse", f"{why}: another object in its place")
