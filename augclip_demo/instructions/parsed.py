"""The parse of an editing instruction: (o1, o2, size state, position state, reference).

Alg. 1 line 4 of the BPM paper: o1 is the object of the *source* image that the edit changes
(``None`` for "add"), o2 the object of the *edited* image that results (``None`` for "remove").
``size_state`` says how o2's area should compare with o1's, ``position_state`` where o2 should
lie relative to the anchor: the ``reference`` object when the instruction names one ("put a
bird on top of the tower": reference ``tower``), else o1's original place.

Phrases are stored in lower case without articles ("the red cup" -> "red cup"), the form the
detector and the CLIP text encoder are given.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from ..choices import POSITION_STATES, SIZE_STATES
from ..errors import InstructionParseError

#: How sure the parser is: ``high`` (a form it knows, every word placed), ``medium`` (it had to
#: approximate: a compound edit, a corner, a state BPM cannot express exactly), ``low`` (a guess:
#: check the fields), ``given`` (typed by hand). ``notes`` says why.
CONFIDENCE_LEVELS: tuple[str, ...] = ("high", "medium", "low", "given")

#: Values a user may type for "no object" in a hand-filled parse.
_NONE_WORDS = frozenset({"", "none", "null", "nothing", "n/a", "-", "no object"})
#: Words that refer to something without naming it: no detector can find "it".
_PRONOUNS = frozenset({
    "it", "its", "them", "they", "this", "that", "these", "those", "him", "her", "he", "she", "one",
    "something", "anything", "everything", "stuff", "things", "thing", "object", "objects", "image",
    "me", "us", "you",
})

_ARTICLES = re.compile(r"\b(?:a|an|the)\b\s*")
_LEADING_DETERMINERS = re.compile(
    r"^(?:(?:some|any|this|that|these|those|my|your|his|her|its|their|our|another|other|more|each|every)\s+)+"
)
_EDGE_PUNCTUATION = " \t\r\n.,;:!?\"'`()[]{}"


def clean_phrase(text: str | None) -> str | None:
    """Lower case, articles dropped, leading determiners dropped, spaces collapsed; ``None`` when empty.

    ``"The red cup."`` -> ``"red cup"``; ``"screen of the laptop"`` -> ``"screen of laptop"``;
    ``"None"`` -> ``None``.
    """
    if text is None:
        return None
    phrase = str(text).replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"').lower()
    phrase = " ".join(phrase.split()).strip(_EDGE_PUNCTUATION)  # str.split: the same whitespace as regex's \s
    if phrase in _NONE_WORDS:
        return None
    phrase = _ARTICLES.sub("", phrase + " ").strip()
    phrase = _LEADING_DETERMINERS.sub("", phrase).strip(_EDGE_PUNCTUATION)
    phrase = " ".join(phrase.split())
    return phrase or None


def is_pronoun(phrase: str | None) -> bool:
    """True for phrases like "it" or "them" that name no object."""
    return phrase is not None and phrase in _PRONOUNS


@dataclass(frozen=True)
class ParsedInstruction:
    """The parse Alg. 1 needs; see the module docstring for what each field means.

    ``edit_type`` (``add``, ``remove``, ``replace``, ``attribute``, ``resize``, ``move``,
    ``background``, ``state``, or ``given`` for a hand-filled parse) and ``parser`` (``rules``,
    ``llm``, ``manual``) are for display; the metric only reads the five fields.
    """

    o1: str | None
    o2: str | None
    size_state: str = "unchanged"
    position_state: str = "unchanged"
    reference: str | None = None
    edit_type: str = "given"
    parser: str = "manual"
    instruction: str | None = None
    confidence: str = "given"
    notes: tuple[str, ...] = ()
    other_changes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.confidence not in CONFIDENCE_LEVELS:
            raise InstructionParseError(
                f"confidence must be one of {', '.join(CONFIDENCE_LEVELS)}, got {self.confidence!r}")
        object.__setattr__(self, "notes", tuple(str(n) for n in self.notes or ()))
        object.__setattr__(self, "other_changes", tuple(str(c) for c in self.other_changes or ()))
        for name in ("o1", "o2", "reference"):
            object.__setattr__(self, name, clean_phrase(getattr(self, name)))
        size = (self.size_state or "unchanged").strip().lower()
        position = (self.position_state or "unchanged").strip().lower()
        if size not in SIZE_STATES:
            raise InstructionParseError(f"size state must be one of {', '.join(SIZE_STATES)}, got {self.size_state!r}")
        if position not in POSITION_STATES:
            raise InstructionParseError(
                f"position state must be one of {', '.join(POSITION_STATES)}, got {self.position_state!r}"
            )
        object.__setattr__(self, "size_state", size)
        object.__setattr__(self, "position_state", position)
        if self.o1 is None and self.o2 is None:
            raise InstructionParseError(
                "the parse names no object: at least one of o1 (the object in the source image) and o2 "
                "(the object in the edited image) is needed"
            )
        for name in ("o1", "o2", "reference"):
            value = getattr(self, name)
            if is_pronoun(value):
                raise InstructionParseError(
                    f"{name} is {value!r}, which names no object the detector could look for; "
                    "write the object itself (e.g. 'cup')"
                )

    @property
    def is_add(self) -> bool:
        """o1 is None: something new appears (Sec. 3.2: the origin region is the edit region)."""
        return self.o1 is None

    @property
    def is_remove(self) -> bool:
        """o2 is None: something disappears (Sec. 3.2: the edit region is the origin region)."""
        return self.o2 is None

    @classmethod
    def from_fields(cls, o1: str | None, o2: str | None, size_state: str | None = "unchanged",
                    position_state: str | None = "unchanged", reference: str | None = None,
                    instruction: str | None = None) -> ParsedInstruction:
        """A hand-filled parse (the app's four fields, ``--o1/--o2`` for description-style targets).

        Empty strings and "None" mean no object.
        """
        return cls(o1=o1, o2=o2, size_state=size_state or "unchanged",
                   position_state=position_state or "unchanged", reference=reference,
                   edit_type="given", parser="manual", instruction=instruction)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["notes"], data["other_changes"] = list(self.notes), list(self.other_changes)
        return data

    @property
    def fields(self) -> dict[str, str | None]:
        """The five fields BPM reads (what a user may correct)."""
        return {name: getattr(self, name) for name in CORRECTABLE_FIELDS}

    def corrected(self, corrections: dict[str, Any] | None) -> ParsedInstruction:
        """This parse with the user's corrections applied (see :func:`apply_corrections`)."""
        return apply_corrections(self, corrections)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParsedInstruction:
        known = {"o1", "o2", "size_state", "position_state", "reference", "edit_type", "parser", "instruction",
                 "confidence", "notes", "other_changes"}
        return cls(**{k: v for k, v in data.items() if k in known})

    def describe(self) -> str:
        """One line, e.g. ``o1=cup -> o2=red cup, size unchanged, position unchanged``."""
        where = self.position_state + (f" of {self.reference}" if self.reference else "")
        return f"o1={self.o1 or 'None'} -> o2={self.o2 or 'None'}, size {self.size_state}, position {where}"

    def explain(self) -> str:
        """Several lines for people: the fields, the confidence and every note and unscored change."""
        lines = [f"{self.parser} parse ({self.confidence} confidence): {self.describe()}"]
        lines += [f"note: {note}" for note in self.notes]
        lines += [f"also asked, not scored by BPM: {change}" for change in self.other_changes]
        return "\n".join(lines)


#: The fields of a parse a user can correct (app fields, CLI flags, manifest ``parse`` object).
CORRECTABLE_FIELDS: tuple[str, ...] = ("o1", "o2", "size_state", "position_state", "reference")


def apply_corrections(parsed: ParsedInstruction | None, corrections: dict[str, Any] | None,
                      instruction: str | None = None) -> ParsedInstruction:
    """Apply hand corrections to a parse (or build one from them when ``parsed`` is None).

    ``corrections`` maps any of :data:`CORRECTABLE_FIELDS` to a value; keys that are absent or
    ``None`` keep the parsed value, so a user fixes only what is wrong. An empty string or "None"
    for o1 / o2 / reference means "no object". The result is ``parser="manual"`` when there was no
    parse, else keeps the parser's name with ``confidence="given"`` and a note listing the fields
    the user changed.
    """
    given = {k: v for k, v in (corrections or {}).items() if v is not None}
    unknown = sorted(set(given) - set(CORRECTABLE_FIELDS))
    if unknown:
        raise InstructionParseError(
            f"unknown parse field(s) {', '.join(unknown)}; the fields are {', '.join(CORRECTABLE_FIELDS)}")
    for key, value in given.items():
        if not isinstance(value, str):
            raise InstructionParseError(f"parse field {key} must be text, got {type(value).__name__}")
    if parsed is None:
        return ParsedInstruction.from_fields(given.get("o1"), given.get("o2"), given.get("size_state") or "unchanged",
                                             given.get("position_state") or "unchanged", given.get("reference"),
                                             instruction)
    merged = {**parsed.fields, **given}
    changed = [k for k in CORRECTABLE_FIELDS if k in given and not _same(parsed.fields[k], given[k], k)]
    if not changed:
        return parsed
    note = f"corrected by hand: {', '.join(changed)}"
    return ParsedInstruction(o1=merged["o1"], o2=merged["o2"], size_state=merged["size_state"] or "unchanged",
                             position_state=merged["position_state"] or "unchanged", reference=merged["reference"],
                             edit_type=parsed.edit_type, parser=parsed.parser, instruction=parsed.instruction,
                             confidence="given", notes=(*parsed.notes, note), other_changes=parsed.other_changes)


def _same(old: str | None, new: str, key: str) -> bool:
    if key in ("size_state", "position_state"):
        return (old or "unchanged") == (new.strip().lower() or "unchanged")
    return old == clean_phrase(new)


@dataclass(frozen=True)
class ParseOutcome:
    """What a parser made of an instruction, without raising: a parse, or the reason there is none.

    ``refusal`` is set (and ``parsed`` is None) when the instruction cannot be parsed: a global or
    style edit, a pronoun, an unknown form; the text says how to give the fields by hand.
    ``notice`` is set when the parse came from a fallback (the LLM failed, the rules answered).
    """

    parsed: ParsedInstruction | None
    refusal: str | None = None
    notice: str | None = None

    @property
    def unparsed(self) -> bool:
        return self.parsed is None

    def to_dict(self) -> dict[str, Any]:
        return {"parsed": self.parsed.to_dict() if self.parsed else None, "unparsed": self.unparsed,
                "refusal": self.refusal, "notice": self.notice}
