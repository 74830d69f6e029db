"""Offline rule-based instruction parser: the common instruction forms, no model.

Forms covered (case-insensitive, politeness such as "please" / "can you" ignored):

========================================================  ===========================================
form                                                      parse
========================================================  ===========================================
add / put / place / insert / draw X [REL Y]               o1 None, o2 X, position REL, reference Y
put / place the X REL Y  (definite article)               move: o1 = o2 = X, position REL, reference Y
give Y a X; make Y wear X                                 add X, reference Y, position inside
remove / delete / erase / get rid of / take away X        o1 X, o2 None
replace X with|by Y; swap X for Y; substitute Y for X     o1 X, o2 Y
Y instead of X                                            o1 X, o2 Y
change / turn / transform / convert X into|to Y           o1 X, o2 Y ("Y X" when Y is a colour/material)
make X Y; make X a Y; make X look (like) Y                o1 X, o2 "Y X" (adjective) or Y (with article)
make X COLOUR / MATERIAL; paint / colour / dye X Y        o1 X, o2 "Y X" (the old colour word dropped)
change the colour of X to Y                               o1 X, o2 "Y X"
make X bigger / smaller; enlarge / shrink X               o1 = o2 = X, size larger / smaller
move / shift X left|right|up|down [of Y]                  o1 = o2 = X, position, reference Y
change the background to Y; make the background Y         o1 background, o2 Y
what if X was Y; X should be Y; let X be Y                as "make X Y"
turn on / off X; open / close X                           o1 X, o2 "X turned on" / "open X" ...
========================================================  ===========================================

Relations (REL): on / on top of / onto / above / over -> up (on a flat surface such as a screen,
wall or plate -> inside); under / below / beneath -> down; (to the) left / right of -> left /
right; in / inside / into / within / to -> inside; next to / beside / near / by / behind / in
front of -> near. A direction with no reference object ("add a tree on the left", "move the cup
up") has no reference: for a move the anchor is the object's original place, for an add it is the
image frame.

Anything else raises :class:`InstructionParseError` saying why; the app then asks for the four
fields by hand and the LLM parser covers free-form wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import InstructionParseError
from .parsed import ParsedInstruction, clean_phrase, is_pronoun


def _words(text: str) -> list[str]:
    return text.split()


COLOURS = frozenset(_words(
    "red orange yellow green blue purple violet pink brown black white gray grey silver gold golden beige "
    "cyan magenta turquoise teal navy maroon crimson scarlet lime olive indigo lavender tan ivory bronze "
    "copper blond blonde brunette rainbow colorful colourful transparent striped spotted checkered "
    "polka-dot multicolored multicoloured"
))
MATERIALS = frozenset(_words(
    "wooden wood metal metallic steel iron glass glassy plastic stone marble paper cardboard leather "
    "fabric wool woolen woollen cotton silk denim velvet rubber ceramic porcelain clay concrete brick "
    "ice icy crystal diamond chocolate candy lego origami furry fluffy"
))
#: Words that may precede a colour ("light blue", "bright red") and stay part of it.
COLOUR_MODIFIERS = frozenset(_words("light dark bright pale deep dull vivid neon pastel hot sky baby navy royal"))
#: Flat or extended surfaces: "on" such a thing means inside its box, not above it.
FLAT_SURFACES = frozenset(_words(
    "screen monitor tv television display wall sign signboard board blackboard whiteboard billboard poster "
    "canvas painting picture photo frame page paper book cover shirt t-shirt tshirt jacket sweater dress "
    "door window plate tray dish table-top road street floor ground grass lawn field beach sand snow water "
    "lake sea ocean sky bed sheet blanket carpet rug mat flag banner label card"
))

_LARGER = frozenset(_words("bigger larger huger taller wider longer fatter thicker big large huge giant enormous "
                           "massive gigantic"))
_SMALLER = frozenset(_words("smaller tinier shorter narrower thinner slimmer little tiny small miniature mini "
                            "minuscule"))
_DEGREE = r"(?:(?:much|a lot|a little|a bit|slightly|even|way|far|very|twice as|two times|three times|somewhat)\s+)*"
_SIZE_WORD = "|".join(sorted(_LARGER | _SMALLER, key=len, reverse=True))
_INTENSIFIERS = frozenset(_words("very more less fully completely totally all look appear seem"))
_INDEFINITE = re.compile(r"^(?:a|an|some|one|two|three|four|five|several|many|few|a few|another|more|\d+)\s")

_PREFIX = re.compile(
    r"^(?:(?:please|kindly|can you|could you|would you|will you|i want you to|i would like you to|i'd like you to|"
    r"i want to|i would like to|i'd like to|let's|let us|try to|now|just|then|and|also|go ahead and)\s+)+"
)
_SUFFIX = re.compile(
    r"(?:\s+(?:please|now|instead|for me|as well|too|in (?:the|this) (?:image|picture|photo|photograph|scene|"
    r"painting|drawing|frame)))+$"
)

# Relation phrases, longest first so "to the left of" wins over "to" at the same position.
_RELATIONS: dict[str, str] = {
    **{f"{p}{side}{s}": side for side in ("left", "right")
       for p in ("to the ", "on the ", "at the ", "")
       for s in (" of", " side of", " hand side of")},
    "on top of": "up", "at the top of": "up", "on the top of": "up", "above": "up", "over": "up",
    "onto": "up", "on to": "up", "upon": "up", "on": "up", "atop": "up",
    "underneath": "down", "beneath": "down", "below": "down", "under": "down", "at the bottom of": "down",
    "at the foot of": "down",
    "inside of": "inside", "inside": "inside", "into": "inside", "within": "inside",
    "in the middle of": "inside", "in the center of": "inside", "in the centre of": "inside", "in": "inside",
    "to": "inside",
    "in front of": "near", "behind": "near", "next to": "near", "beside": "near", "besides": "near",
    "near": "near", "nearby": "near", "close to": "near", "by": "near", "alongside": "near", "around": "near",
    "at": "near",
}
_RELATION_RE = re.compile(
    r"\s(" + "|".join(re.escape(k) for k in sorted(_RELATIONS, key=len, reverse=True)) + r")\s+(.+)$"
)
# A direction with no reference object, at the end of the instruction.
_FRAME_DIRECTION = re.compile(
    r"\s+(?:(?:a little|a bit|slightly|further|farther|more|much|all the way)\s+)*"
    r"(?:(?:to|towards|toward|on|at|in|into)\s+(?:the\s+)?)?"
    r"(left|right|top|bottom|up|down|upwards?|downwards?|leftwards?|rightwards?|upper part|lower part)"
    r"(?:\s+(?:side|corner|edge|part|half|hand side))?"
    r"(?:\s+of\s+(?:the\s+)?(?:image|picture|photo|frame|scene))?$"
)
_DIRECTION_STATE = {
    "left": "left", "leftward": "left", "leftwards": "left", "right": "right", "rightward": "right",
    "rightwards": "right", "top": "up", "up": "up", "upward": "up", "upwards": "up", "upper part": "up",
    "bottom": "down", "down": "down", "downward": "down", "downwards": "down", "lower part": "down",
}

_ADD_VERBS = r"add|insert|draw|include|create|generate|attach|stick|hang|plant|introduce|paint|sketch|put|place|set|position"
_REMOVE_VERBS = (r"remove|delete|erase|eliminate|get rid of|take away|take out|take off|cut out|wipe out|wipe away|"
                 r"clear away|throw away|hide")

SUPPORTED_FORMS = (
    "add X [on/under/left of/in/next to Y]; remove/delete/get rid of X; replace X with Y; change/turn X into Y; "
    "make X COLOUR/MATERIAL; make X bigger/smaller; move X left/right/up/down; change the background to Y"
)


_EXAMPLES = {
    "object to add": "add a cup on the table", "object to remove": "remove the cup",
    "object to replace": "replace the cup with a glass", "new object": "replace the cup with a glass",
    "object to move": "move the cup to the left", "object to resize": "make the cup bigger",
    "reference object": "put a cup on the table",
}


def _object(text: str | None, role: str, instruction: str) -> str:
    """A cleaned object phrase, or a clear refusal when there is none or it is a pronoun."""
    phrase = clean_phrase(text)
    if phrase is None:
        example = _EXAMPLES.get(role, "make the cup red")
        raise InstructionParseError(f"{instruction!r} names no {role}; say which object, e.g. '{example}'")
    if is_pronoun(phrase):
        raise InstructionParseError(
            f"in {instruction!r} the {role} is {phrase!r}, which does not name an object (the parser has no view of "
            "the image); write the object itself, e.g. 'make the cup red'"
        )
    return phrase


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"').lower()
    text = re.sub(r"\s+", " ", text).strip().strip(" .!?;,:\"'")
    for _ in range(3):
        text = _PREFIX.sub("", text)
        text = _SUFFIX.sub("", text).strip(" .!?;,:")
    return text


def _is_adjectival(words: str) -> bool:
    """True when every word is a colour, material, colour modifier or 'and' ("light blue", "black and white")."""
    tokens = words.replace("-", " ").split()
    return bool(tokens) and all(t in COLOURS or t in MATERIALS or t in COLOUR_MODIFIERS or t == "and" for t in tokens)


def _with_attribute(attribute: str, obj: str) -> str:
    """o2 for "make OBJ ATTRIBUTE": the attribute in front, the object's old colour words dropped
    when the new attribute is a colour ("make the red car blue" -> "blue car")."""
    attribute = clean_phrase(attribute) or attribute
    words = obj.split()
    if any(w in COLOURS for w in attribute.split()) and len(words) > 1:
        kept = [w for w in words if w not in COLOURS and w not in COLOUR_MODIFIERS]
        words = kept or words
    return f"{attribute} {' '.join(words)}"


def _target(value: str, obj: str) -> str:
    """Y of "make/turn X Y": with an article it is a new object ("a dog"); else an attribute of X."""
    value = value.strip()
    if re.match(r"^(?:a|an|the|some)\s", value):
        return value
    return _with_attribute(value, obj)


def _relation(rest: str) -> tuple[str, str | None, str | None]:
    """Split "X REL Y" into (X, state, Y); a trailing frame direction gives (X, state, None).

    The leftmost relation keyword splits (longest keyword at that place). A direction at the end
    ("to the left", "up", "at the top of the image") that starts no later than that keyword is a
    frame direction with no reference object.
    """
    frame = _FRAME_DIRECTION.search(rest)
    match = _RELATION_RE.search(rest)
    if frame and (match is None or frame.start() <= match.start()):
        return rest[: frame.start()], _DIRECTION_STATE[frame.group(1)], None
    if match is None:
        return rest, None, None
    keyword, reference = match.group(1), match.group(2)
    state = _RELATIONS[keyword]
    head_words = reference.split(" of ")[0].split()
    if keyword in ("on", "onto", "on to", "upon") and head_words and head_words[-1] in FLAT_SURFACES:
        state = "inside"  # "a car on the screen of the laptop" lies within the screen (Fig. 6)
    return rest[: match.start()], state, reference


# ---------------------------------------------------------------------- the forms, tried in order
Rule = Callable[[str, str], ParsedInstruction | None]


def _make(instruction: str, edit_type: str, o1: str | None, o2: str | None, size: str = "unchanged",
          position: str = "unchanged", reference: str | None = None) -> ParsedInstruction:
    return ParsedInstruction(o1=o1, o2=o2, size_state=size, position_state=position, reference=reference,
                             edit_type=edit_type, parser="rules", instruction=instruction)


def _background(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(r"^(?:change|replace|turn|set|switch|swap|transform|convert|alter|make)\s+(?:the\s+)?"
                 r"(?:background|backdrop|scenery)\s+(?:to|into|with|by|for|as|in|to be)\s+(.*)$", text)
    if m:
        return _make(original, "background", "background", _object(m.group(1), "new background", original))
    m = re.match(r"^make\s+(?:the\s+)?(?:background|backdrop)\s+(.*)$", text)
    if m:
        value = m.group(1).strip()
        o2 = value if re.match(r"^(?:a|an|the|some)\s", value) else f"{value} background"
        return _make(original, "background", "background", _object(o2, "new background", original))
    return None


def _remove(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(rf"^(?:{_REMOVE_VERBS})(?:\s+(.*))?$", text)
    if not m:
        m = re.match(r"^(?:there should be|let there be|i want|show) no\s+(.*)$", text)
    if not m:
        m = re.match(r"^(.*?)\s+(?:should be|must be|is|are|has been|have been)\s+(?:removed|deleted|gone|erased)$", text)
    if not m:
        return None
    target = re.sub(r"\s+(?:from|out of|off of|off)\s+.*$", "", m.group(1) or "")
    return _make(original, "remove", _object(target, "object to remove", original), None)


def _replace(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(r"^substitute\s+(.*?)\s+for\s+(.*)$", text)
    if m:  # "substitute Y for X": Y takes X's place
        return _make(original, "replace", _object(m.group(2), "object to replace", original),
                     _object(m.group(1), "new object", original))
    m = re.match(r"^(?:replace|swap|switch|exchange|substitute|trade)(?:\s+(.*?))?\s+(?:with|by|for|to|into)\s+(.*)$", text)
    if m:
        return _make(original, "replace", _object(m.group(1), "object to replace", original),
                     _object(m.group(2), "new object", original))
    m = re.match(r"^(?:replace|swap|switch|exchange|substitute)(?:\s+(.*))?$", text)
    if m:
        _object(m.group(1), "object to replace", original)
        raise InstructionParseError(f"{original!r} does not say what to put instead; write 'replace X with Y'")
    m = re.match(r"^(?:(?:put|show|have|use|draw|add)\s+)?(.*?)\s+instead of\s+(.*)$", text)
    if m:
        return _make(original, "replace", _object(m.group(2), "object to replace", original),
                     _object(m.group(1), "new object", original))
    return None


def _switch_state(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(r"^(?:turn|switch|shut)\s+(on|off)\s+(.*)$", text) or re.match(
        r"^(?:turn|switch|shut)\s+(.*?)\s+(on|off)$", text)
    if m:
        state, obj = (m.group(1), m.group(2)) if m.group(1) in ("on", "off") else (m.group(2), m.group(1))
        o1 = _object(obj, "object to switch", original)
        return _make(original, "state", o1, f"{o1} turned {state}")
    m = re.match(r"^(open|close|shut)\s+(.*)$", text)
    if m:
        o1 = _object(m.group(2), "object to open or close", original)
        return _make(original, "state", o1, f"{'open' if m.group(1) == 'open' else 'closed'} {o1}")
    return None


def _resize(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(rf"^(?:make|let|have|render)\s+(.*?)\s+(?:look\s+|appear\s+|be\s+)?{_DEGREE}({_SIZE_WORD})"
                 r"(?:\s+(?:than\s+.*|in size|sized|in scale))?$", text)
    if m:
        obj = _object(m.group(1), "object to resize", original)
        return _make(original, "resize", obj, obj, "larger" if m.group(2) in _LARGER else "smaller")
    m = re.match(r"^(enlarge|expand|grow|magnify|upscale|scale up|blow up|increase the size of|double the size of|"
                 r"shrink|reduce the size of|decrease the size of|scale down|miniaturize|miniaturise|halve the size of)"
                 r"(?:\s+(.*?))?(?:\s+(?:by\s+.*|a lot|a little|a bit|slightly))?$", text)
    if m:
        obj = _object(m.group(2), "object to resize", original)
        grow = m.group(1) in ("enlarge", "expand", "grow", "magnify", "upscale", "scale up", "blow up",
                              "increase the size of", "double the size of")
        return _make(original, "resize", obj, obj, "larger" if grow else "smaller")
    m = re.match(rf"^give\s+(.*?)\s+{_DEGREE}({_SIZE_WORD})\s+(.*)$", text)
    if m:  # "give the bear bigger claws"
        obj = _object(f"{m.group(1)} {m.group(3)}", "object to resize", original)
        return _make(original, "resize", obj, obj, "larger" if m.group(2) in _LARGER else "smaller")
    return None


def _move(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(r"^(?:move|shift|slide|drag|push|relocate|reposition|bring|pull)\s+(.*)$", text)
    definite_put = re.match(r"^(?:put|place|set|position)\s+((?:the|my|his|her|their|its)\s+.*)$", text)
    if not m and not definite_put:
        return None
    rest = (m or definite_put).group(1)
    obj_text, state, reference = _relation(rest)
    if state is None:
        if definite_put:
            return None
        raise InstructionParseError(
            f"{original!r} does not say where to move the object; write e.g. 'move the cup to the left' or "
            "'move the cup next to the plate'"
        )
    obj = _object(obj_text, "object to move", original)
    ref = _object(reference, "reference object", original) if reference else None
    return _make(original, "move", obj, obj, "unchanged", state, ref)


def _give_or_wear(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(r"^give\s+(.*?)\s+((?:a|an|some|one|two|three|\d+)\s+.*)$", text)
    if m:
        return _make(original, "add", None, _object(m.group(2), "object to add", original), "unchanged", "inside",
                     _object(m.group(1), "object that receives it", original))
    m = re.match(r"^(?:make|have|let)\s+(.*?)\s+(?:wear|wearing|put on|hold|holding|carry|carrying)\s+(.*)$", text)
    if m:
        return _make(original, "add", None, _object(m.group(2), "object to add", original), "unchanged", "inside",
                     _object(m.group(1), "object that receives it", original))
    m = re.match(r"^give\s+(.*)$", text)
    if m:
        raise InstructionParseError(
            f"{original!r}: the rules cannot tell the object from its receiver; write 'give the cat a hat' or "
            "'add a hat to the cat'"
        )
    return None


def _add(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(rf"^(?:{_ADD_VERBS})(?:\s+(.*))?$", text) or re.match(
        r"^(?:let there be|there should be|there is|there are|make there be|show|include)\s+(.*)$", text)
    if not m:
        return None
    rest = m.group(1) or ""
    if text.startswith("paint") and rest and not _INDEFINITE.match(rest + " "):
        return None  # "paint the wall blue" recolours; "paint a bird on the wall" adds
    obj_text, state, reference = _relation(rest)
    obj = _object(obj_text, "object to add", original)
    ref = _object(reference, "reference object", original) if reference else None
    return _make(original, "add", None, obj, "unchanged", state or "unchanged", ref)


def _colour_verbs(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(r"^change\s+(?:the\s+)?(?:colou?r|material|texture|pattern)\s+of\s+(.*?)\s+(?:to|into|in)\s+(.*)$", text) \
        or re.match(r"^change\s+(.*?)(?:'s|s')?\s+(?:colou?r|material)\s+(?:to|into)\s+(.*)$", text)
    if m:
        obj = _object(m.group(1), "object to recolour", original)
        return _make(original, "attribute", obj, _with_attribute(_object(m.group(2), "new colour", original), obj))
    m = re.match(r"^(?:paint|colou?r|recolou?r|dye|tint|spray)\s+(.*?)\s+(?:in\s+|to\s+|with\s+)?"
                 r"((?:(?:" + "|".join(sorted(COLOUR_MODIFIERS)) + r")\s+)?(?:"
                 + "|".join(sorted(COLOURS | MATERIALS, key=len, reverse=True)) + r")(?:\s+and\s+\S+)?)$", text)
    if m:
        obj = _object(m.group(1), "object to recolour", original)
        return _make(original, "attribute", obj, _with_attribute(m.group(2), obj))
    return None


def _change_into(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(r"^(?:change|turn|transform|convert|morph|make|modify|alter)(?:\s+(.*?))?\s+"
                 r"(?:into|to be|to look like|to)\s+(.*)$", text)
    if not m:
        return None
    obj = _object(m.group(1), "object to change", original)
    value = m.group(2).strip()
    if _is_adjectival(value):
        return _make(original, "attribute", obj, _with_attribute(value, obj))
    return _make(original, "replace", obj, _object(value, "new object", original))


def _make_attribute(text: str, original: str) -> ParsedInstruction | None:
    m = re.match(r"^make\s+(.*?)\s+(?:out of|made of|made from|made out of)\s+(.*)$", text)
    if m:  # "make the table out of glass"
        obj = _object(m.group(1), "object to change", original)
        return _make(original, "attribute", obj, _with_attribute(_object(m.group(2), "material", original), obj))
    m = re.match(r"^(?:make|let|have)\s+(.*?)\s+(?:look|appear|seem)\s+like\s+(.*)$", text)
    if m:
        obj = _object(m.group(1), "object to change", original)
        return _make(original, "replace", obj, _object(m.group(2), "new object", original))
    m = (re.match(r"^what if\s+(.*?)\s+(?:was|were|is|are|became|looked)\s+(.*)$", text)
         or re.match(r"^(?:let|have)\s+(.*?)\s+be\s+(.*)$", text)
         or re.match(r"^(.*?)\s+(?:should be|should become|should look|must be|becomes|is now|are now)\s+(.*)$", text)
         or re.match(r"^(?:make|turn|render|paint|colou?r|dye|get)\s+(.*)$", text))
    if not m:
        return None
    if m.lastindex == 1:  # "make X Y": split at an article, else Y is the trailing attribute
        words = m.group(1).split()
        content = (clean_phrase(m.group(1)) or "").split()
        if len(content) < 2:
            _object(m.group(1), "object to change", original)
            raise InstructionParseError(f"{original!r} says what to change but not into what; write e.g. "
                                        "'make the cup red'")
        article = next((i for i, w in enumerate(words) if i > 0 and w in ("a", "an")), None)
        if article is not None:
            obj_text, value = " ".join(words[:article]), " ".join(words[article:])
        else:
            start = len(words) - 1
            while start > 1:
                prev = words[start - 1]
                if ((prev in COLOUR_MODIFIERS and words[start] in COLOURS) or prev == "and" or prev in _INTENSIFIERS
                        or ((prev in COLOURS or prev in MATERIALS) and words[start] == "and")):
                    start -= 1
                else:
                    break
            obj_text, value = " ".join(words[:start]), " ".join(words[start:])
            value = re.sub(r"^(?:look|appear|seem)\s+", "", value)
    else:
        obj_text, value = m.group(1), m.group(2)
    obj = _object(obj_text, "object to change", original)
    target = _target(value, obj)
    if re.match(r"^(?:a|an|the|some)\s", value.strip()):
        return _make(original, "replace", obj, _object(target, "new object", original))
    return _make(original, "attribute", obj, _object(target, "new attribute", original))


_RULES: tuple[Rule, ...] = (
    _background, _remove, _switch_state, _replace, _resize, _move, _give_or_wear, _colour_verbs, _add,
    _change_into, _make_attribute,
)


def parse_with_rules(instruction: str) -> ParsedInstruction:
    """Parse ``instruction`` with the rules above; raise :class:`InstructionParseError` if none applies."""
    if not isinstance(instruction, str) or not instruction.strip():
        raise InstructionParseError("the instruction is empty: type what the edit should do, e.g. 'make the cup red'")
    original = re.sub(r"\s+", " ", instruction).strip()
    text = _normalise(original)
    if not text:
        raise InstructionParseError(f"{original!r} contains no words the parser can use")
    if original.endswith("?") or re.match(r"^(?:could|can|is|are|does|do|will|would)\s+(?:it|this|that|they)\b", text):
        raise InstructionParseError(
            f"{original!r} is a question, not an edit instruction; the rules cannot tell what it refers to"
        )
    if re.match(r"^(?:it|this|that|they)\s+(?:could|might|may|should|would|is|was)\b", text):
        raise InstructionParseError(
            f"{original!r} refers to 'it' without naming an object; the parser has no view of the image. "
            "Name the objects, or fill o1 and o2 by hand"
        )
    for rule in _RULES:
        parsed = rule(text, original)
        if parsed is not None:
            return parsed
    raise InstructionParseError(
        f"the rule parser does not recognise {original!r}. Supported forms: {SUPPORTED_FORMS}. "
        "Rephrase, use the LLM parser (--parser llm), or give o1/o2 and the states by hand"
    )
