"""Offline rule parser: editing instructions as people type them -> the parse BPM needs. No model.

How it reads an instruction (each step is a plain function below):

1. **Normalise**: lower case, straight quotes, politeness and hedges dropped ("could you please",
   "I think", "if possible", "thanks").
2. **Indirect forms to commands**: "I want the cup to be red", "the dog ought to be bigger", "it
   would be nice if the car were blue", "would you mind adding a hat" become "make the cup red",
   "make the dog bigger", ... (:func:`_indirect`).
3. **Clauses**: a compound edit is split at "and" / "then" / commas / semicolons, except inside a
   colour pair ("black and white") or a "between A and B". A clause without its own verb
   continues the one before ("make the ball smaller and red" -> "... and make the ball red"); "it"
   in a later clause is the object of the clause before ("move the cup left and make it bigger").
4. **One change per clause**: the forms in :data:`_CLAUSE_RULES`, tried in order (remove, replace,
   resize, move, wear/give, pose, recolour, add, change into, make X Y, and a guarded fallback for
   unknown verbs).
5. **Combine**: changes to the same object merge into one parse (the attribute goes into o2, the
   size and position states are kept): "make the ball smaller and red" is o1 ``ball``, o2 ``red
   ball``, size ``smaller``. Otherwise BPM scores the **first** change (people lead with the
   edit they mean); every other change is listed in ``other_changes`` and lowers the confidence.
6. **Refuse** what has no object: global or style edits ("make it more cinematic", "increase
   the contrast"), pronouns the parser cannot resolve, questions. The message says how to give
   o1 / o2 and the states by hand.

Where the BPM vocabulary (size: larger / smaller / unchanged; position: left / right / up /
down / inside / near / unchanged) cannot say what the instruction asks, the closest state is
used and a note says so (docs/method-notes.md lists each choice): a corner keeps its horizontal
side; "closer to the camera" is ``larger`` and "further away" ``smaller``; next to / beside /
behind / in front of / between / among are ``near``; "on" a flat thing (a wall, a screen) is
``inside``; a pose or attribute change keeps the object (o1 = the object, o2 = the object with
the change).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import InstructionParseError
from .lexicon import (
    COLOR_MODIFIERS,
    COLORS,
    DOUBLING,
    FLAT_SURFACES,
    GLOBAL_NOUNS,
    GLOBAL_VERBS,
    LARGER,
    MATERIALS,
    NUMBER_WORDS,
    POSE_VERBS,
    QUANTITY_NOUNS,
    SMALLER,
    STYLE_WORDS,
    VERB_ATTRIBUTES,
    word_set,
)
from .parsed import ParsedInstruction, clean_phrase, is_pronoun

HAND_FILL_HELP = (
    "Give the parse by hand instead: o1 (the object in the source image; None when one is added), o2 (the object "
    "in the edited image; None when one is removed), the size state (larger / smaller / unchanged) and the position "
    "state (left / right / up / down / inside / near / unchanged, with an optional reference object). In the app: "
    "the fields under 'Parse' in the BPM tab; on the command line: --o1 --o2 --size-state --position-state "
    "--reference; in a batch manifest: a \"parse\" object on the item's line."
)
_SUPPORTED_FORMS = (
    "add X [on/under/left of/next to Y]; remove X; replace X with Y; turn X into Y; make X red / bigger / sit; "
    "move X left / to the top-right corner / next to Y / closer; give X a Y; change the background to Y"
)

#: Words for the picture itself ("the picture needs a bird" adds a bird).
_FRAME_WORDS = word_set("image picture photo photograph pic scene shot")
#: Pronouns that may stand for an object ("make it red") rather than the whole picture.
_TRUE_PRONOUNS = word_set("it its them they this that these those him her he she one")
_TIME_WORDS = word_set(
    "night day daytime nighttime sunset sunrise dusk dawn winter summer autumn spring evening morning noon "
    "midnight twilight"
)
_SIZE_WORD = "|".join(sorted(LARGER | SMALLER, key=len, reverse=True))
_DEGREE = (r"(?:(?:much|a lot|a little|a little bit|a bit|slightly|even|way|far|very|somewhat|quite|significantly|"
           r"considerably|noticeably|twice as|three times as|two times|three times|so much|really|more|too)\s+)*")
_ARTICLE = re.compile(r"^(?:a|an|the|some|one|two|three|four|five|\d+)\s")
_INDEFINITE = re.compile(r"^(?:a|an|some|any|one|two|three|four|five|six|seven|eight|nine|ten|several|many|few|"
                         r"a few|a couple of|a pair of|another|more|extra|\d+)\s")

# ------------------------------------------------------------------------------------- normalising
_PREFIX = re.compile(
    r"^(?:(?:please|pls|plz|kindly|can you|could you|would you|will you|can u|could u|can we|could we|shall we|"
    r"let's|let us|i want you to|i would like you to|i'd like you to|i need you to|i'd love you to|"
    r"i want to|i would like to|i'd like to|i'd love to|i would love to|we need to|we should|you should|"
    r"you could|we could|is it possible to|would it be possible to|are you able to|try to|try and|now|just|"
    r"then|and|also|go ahead and|help me|maybe|perhaps|i think|i guess|i believe|ideally|ok|okay|hey|hi|hello|so|"
    r"first|firstly|finally|lastly|additionally|in this image|in the image|in this picture|in this photo|"
    r"for this image|for this picture|simply|quickly|carefully|gently|next)[,:]?\s+)+"
)
#: One politeness / degree word at the end (stripped one at a time from the end: see _strip_suffixes).
_SUFFIX = re.compile(
    r"[\s,]+(?:please|pls|now|instead|for me|as well|too|thanks|thank you|thx|if possible|if you can|"
    r"if you could|if you don't mind|in (?:the|this) (?:image|picture|photo|photograph|scene|painting|drawing|"
    r"frame|shot)|from (?:the|this) (?:image|picture|photo|photograph|scene|shot)|completely|entirely|"
    r"altogether|a bit|a little|slightly|a little bit|please\?)$"
)
#: Characters of the end searched for one suffix: the longest (", if you don't mind") with spare separators.
_SUFFIX_WINDOW = 64
#: Words the rule parser reads: an editing instruction is a sentence or two; beyond this the parse is refused
#: at once (its iteration cap: every clause rule is at most quadratic in its clause, so parsing time is bounded).
MAX_INSTRUCTION_WORDS = 200


def _strip_suffixes(text: str) -> str:
    """``text`` without its trailing run of suffix words ("... please thanks"), in time linear in the run:
    each step searches only the last :data:`_SUFFIX_WINDOW` characters (one regex over the whole text
    ending in ``$`` is tried from every position: "a bit " x 1700 took 0.5 s)."""
    end = len(text)
    while (m := _SUFFIX.search(text, max(0, end - _SUFFIX_WINDOW), end)) is not None:
        end = m.start()
    return text[:end]


def _normalize(text: str) -> str:
    text = (text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
            .replace("\u2013", "-").replace("\u2014", "-").lower())
    text = text.replace("->", " into ").replace("=>", " into ")
    text = re.sub(r"[\"`]", "", text)
    text = re.sub(r"\s+", " ", text).strip().strip(" .!?;,:'")
    for _ in range(3):
        text = _PREFIX.sub("", text)
        text = _strip_suffixes(text).strip(" .!?;,:")
    return text


# ------------------------------------------------------------------------------ verbs and gerunds
_CLAUSE_VERBS = word_set(
    "add insert draw include create generate attach stick hang plant introduce paint sketch put place set "
    "position remove delete erase eliminate get take cut wipe clear throw hide drop lose ditch replace swap "
    "switch exchange substitute trade change turn transform convert morph make modify alter move shift slide "
    "drag push relocate reposition bring pull raise lower lift enlarge expand grow magnify upscale scale blow "
    "shrink reduce decrease increase double halve miniaturize miniaturise give dress cover fill decorate wrap "
    "coat sprinkle colour color recolor recolour dye tint spray open close shut keep leave preserve show have "
    "let rotate flip mirror brighten darken sharpen blur desaturate saturate colorize colourise colorise "
    "enhance improve fix denoise restore stylize stylise retouch zoom crop filter lighten soften see use "
    "apply"
)
_IRREGULAR_PARTICIPLES = {
    "break": "broken", "freeze": "frozen", "tear": "torn", "bend": "bent", "light": "lit", "shake": "shaken",
    "hide": "hidden", "split": "split", "cut": "cut", "shut": "shut", "grow": "grown", "burn": "burnt",
    "wet": "wet", "spin": "spun", "hang": "hung", "sink": "sunk", "shrink": "shrunk", "draw": "drawn",
    "write": "written", "fly": "flown", "swell": "swollen", "melt": "melted", "rot": "rotten", "dry": "dried",
}


def gerund(verb: str) -> str:
    """sit -> sitting, smile -> smiling, lie -> lying, look -> looking (enough for the pose verbs)."""
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return verb[:-1] + "ing"
    if verb in DOUBLING:
        return verb + verb[-1] + "ing"
    return verb + "ing"


def _base_of_gerund(word: str) -> str | None:
    """making -> make, putting -> put, adding -> add; None when no known verb fits."""
    if not word.endswith("ing") or len(word) < 5:
        return None
    stem = word[:-3]
    known = _CLAUSE_VERBS | POSE_VERBS
    candidates = [stem, stem + "e"]
    if len(stem) > 2 and stem[-1] == stem[-2]:
        candidates.insert(0, stem[:-1])
    if stem.endswith("y"):
        candidates.append(stem[:-1] + "ie")
    return next((c for c in candidates if c in known), None)


def _participle(verb: str) -> str:
    if verb in _IRREGULAR_PARTICIPLES:
        return _IRREGULAR_PARTICIPLES[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    if verb in DOUBLING:
        return verb + verb[-1] + "ed"
    return verb + "ed"


def _pose_verb(word: str) -> str | None:
    """The pose verb behind ``word`` (sit, sitting, sits), or None."""
    if word in POSE_VERBS:
        return word
    base = _base_of_gerund(word)
    if base in POSE_VERBS:
        return base
    if word.endswith("s") and word[:-1] in POSE_VERBS:
        return word[:-1]
    if word.endswith("es") and word[:-2] in POSE_VERBS:
        return word[:-2]
    return None


# ------------------------------------------------------------------------------ indirect forms
_WANT = re.compile(
    r"^(?:i|we)\s*(?:really\s+|also\s+|just\s+)?(?:want|need|would like|'d like|wish|would love|'d love|would prefer|"
    r"'d prefer|prefer|would rather have|'d rather have|would like to see|'d like to see|want to see|"
    r"would love to see|'d love to see|like)\s+(.*)$"
)
_NICE = re.compile(r"^(?:it|that)\s+(?:would|'d|will|might|could)\s+(?:be|look)\s+(?:\w+\s+)?(?:nice|great|good|better|"
                   r"cool|lovely|awesome|fun|best|ideal|interesting|perfect)\s+(?:if|to|when)\s+(.*)$")
_HOW_ABOUT = re.compile(r"^(?:how about|what about|why not|would you mind|do you mind|mind|consider|try)\s+(.*)$")
_MODAL = (r"should|ought to|needs to|need to|has to|have to|must|is supposed to|are supposed to|is meant to|"
          r"are meant to|could|would|will|shall|can|might|may|has got to|have got to|gotta")
_STATEMENT = re.compile(rf"^(.+?)\s+(?:{_MODAL})\s+(.*)$")
_STATEMENT_COPULA = re.compile(
    r"^(.+?)\s+(?:was|were|is|are|becomes|become|turns into|turn into|looks|look|appears|appear|gets|get|is now|"
    r"are now|now looks|goes|go|belongs|belong)\s+(.*)$")
_NO_X = re.compile(r"^(?:no more|no|without|without the|without any|lose the|minus the)\s+(.*)$")
_DONT_WANT = re.compile(r"^(?:i|we)\s+(?:do not|don't|dont)\s+(?:want|need|like)\s+(?:the\s+|any\s+|a\s+|an\s+)?(.*?)"
                        r"(?:\s+(?:there|here|anymore|any more|in it))?$")


def _starts_with_verb(text: str) -> bool:
    first = text.split(" ", 1)[0]
    return first in _CLAUSE_VERBS or first == "there" or first == "what" or first == "let"


def _indirect(text: str) -> str:
    """Rewrite wishes, modal statements and gerund suggestions into commands (see the module doc)."""
    for _ in range(3):
        before = text
        m = _HOW_ABOUT.match(text)
        if m:
            rest = m.group(1)
            first, _, tail = rest.partition(" ")
            base = _base_of_gerund(first)
            text = f"{base} {tail}".strip() if base else rest
        m = _NICE.match(text)
        if m:
            text = m.group(1)
            text = re.sub(r"^(?:you|we)\s+(?:could\s+|can\s+|would\s+)?", "", text)
        m = _DONT_WANT.match(text)
        if m:
            text = f"remove the {m.group(1)}"
        m = _WANT.match(text)
        if m:
            text = _wish(m.group(1))
        m = _NO_X.match(text)
        if m and not _starts_with_verb(text):
            text = f"remove {m.group(1)}"
        text = _PREFIX.sub("", text)
        if text == before:
            break
    text = re.sub(r"^(?:can|could|may|might|should|would|will|shall)\s+there\s+be\s+", "add ", text)
    text = re.sub(r"^(?:have|let|make)\s+there\s+be\s+", "add ", text)
    text = re.sub(r"^(?:it|this|that|there)\s+(?:should|could|would|must|ought to|needs to|has to)\s+be\s+"
                  r"(?=.*\binstead of\b)", "use ", text)
    text = re.sub(r"^make\s+(?:it\s+)?so(?:\s+that)?\s+", "", text)
    m = re.match(r"^(.+?)\s+(?:has|have|had|has got|have got)\s+(?!to\s|been\s)(.+)$", text)
    if m and not _starts_with_verb(m.group(1)) and m.group(1) not in ("i", "we", "you", "it", "they")\
            and not re.search(rf"\b(?:{_MODAL}|not|n't)$", m.group(1)):
        text = f"make {m.group(1)} have {m.group(2)}"
    text = re.sub(r"^there\s+(?:should|must|shall|may|can|could|would)\s*(?:not|n't)\s+be\s+(?:any\s+)?", "remove ",
                  text)
    text = re.sub(r"^there\s+(?:shouldn't|mustn't|can't|cannot|won't|wouldn't)\s+be\s+(?:any\s+)?", "remove ", text)
    m = re.match(r"^(?:can|could|should|would|will|may|might|shall)\s+(.+?)\s+(be|become|look|get|appear|have|has)"
                 r"\s+(.*)$", text)
    if m and m.group(2) in ("have", "has"):
        text = f"make {m.group(1)} have {m.group(3)}"
        m = None
    if m and m.group(1) not in ("you", "u", "we", "i") and not _starts_with_verb(m.group(1)):
        text = f"make {m.group(1)} {m.group(3)}"
    m = re.match(r"^(.+?)\s+(?:needs|need|wants|want|should have|could have|must have|gets|get|deserves|has to have|"
                 r"could use|should get|ought to have|needs to have)\s+(?!to\s|be\s)(.+)$", text)
    if m and not _starts_with_verb(m.group(1)) and m.group(1) not in ("i", "we", "you"):
        subject = clean_phrase(m.group(1))
        frame = subject is not None and _is_global_phrase(subject) and subject.split()[-1] in _FRAME_WORDS
        text = f"add {m.group(2)}" if frame else f"give {m.group(1)} {m.group(2)}"
    if not _starts_with_verb(text):
        m = _STATEMENT.match(text) or _STATEMENT_COPULA.match(text)
        if m and not _starts_with_verb(m.group(1)) and not re.match(r"^(?:it|this|that|they)$", m.group(1)):
            subject, value = m.group(1), m.group(2)
            value = re.sub(r"^(?:be|become|look|appear|get|turn|go)\s+(?=\S)", "", value)
            value = re.sub(r"^be\s+", "", value)
            value = re.sub(r"^(?:better|nicer|best|good|great)\s+(?:in|as|if|when)?\s*", "", value)
            text = f"make {subject} {value}"
        elif m and re.match(r"^(?:it|this|that|they)$", m.group(1)):
            value = re.sub(r"^(?:be|become|look|appear|get)\s+", "", m.group(2))
            text = f"make {m.group(1)} {value}"
    return text


def _wish(rest: str) -> str:
    """The command behind "I want <rest>"."""
    if rest.startswith("to "):
        return rest[3:]
    if re.match(r"^(?:there to be|there)\s", rest):
        return "add " + re.sub(r"^(?:there to be|there)\s+", "", rest)
    if _INDEFINITE.match(rest + " ") and not re.match(r"^(?:a|an)\s+(?:bigger|larger|smaller)", rest):
        return "add " + rest
    m = re.match(r"^(.*?)\s+to\s+be\s+(.*)$", rest)
    if m:
        return f"make {m.group(1)} {m.group(2)}"
    m = re.match(r"^(.*?)\s+to\s+(\S+)(.*)$", rest)
    if m:
        subject, verb, tail = m.group(1), m.group(2), m.group(3)
        if verb in ("disappear", "vanish", "go") and tail.strip() in ("", "away"):
            return f"remove {subject}"
        if verb in ("grow",):
            return f"make {subject} bigger{tail}"
        if verb in ("shrink",):
            return f"make {subject} smaller{tail}"
        if verb in ("move", "go", "shift", "slide"):
            return f"move {subject}{tail}"
        if verb in ("become", "look", "turn", "get", "appear"):
            return f"make {subject}{tail}"
        return f"make {subject} {verb}{tail}"
    m = re.match(r"^(.*?)\s+(?:gone|removed|deleted|erased|out|away|taken out)$", rest)
    if m:
        return f"remove {m.group(1)}"
    return "make " + rest


# ------------------------------------------------------------------------------ clauses
_SPLIT = re.compile(r"\s*(?:;|,\s*and then|,\s*then|,\s*and|\band then\b|\bthen\b|,|\band also\b|\band\b|\bplus\b|"
                    r"\bwhile\b|\bbut\b|\balso\b)\s*")


def _split_clauses(text: str) -> list[str]:
    """Split at clause joints, keeping colour pairs ("black and white") and "between A and B" whole."""
    pieces: list[str] = []
    position = 0
    current = ""
    for m in _SPLIT.finditer(text):
        left = text[position:m.start()]
        right = text[m.end():]
        joint = m.group(0).strip()
        prev_word = (current + left).split()[-1:] if (current + left).split() else []
        next_word = right.split()[:1]
        adjectival = lambda w: bool(w) and (w[0] in COLORS or w[0] in COLOR_MODIFIERS)  # noqa: E731
        keep = (joint in ("and", ",") and adjectival(prev_word) and adjectival(next_word)
                and not _starts_with_verb(right))
        so_far = current + left
        keep = keep or (joint == "and" and (
            re.search(r"\b(?:between|(?:positions?|places|spots|sides) of)\s+[^,;]*$", so_far) is not None
            or re.match(r"^(?:swap|switch|exchange|trade)\s+(?!.*\b(?:with|for|by|into|to)\b)", so_far) is not None))
        if keep:
            current += left + m.group(0)
        else:
            pieces.append(current + left)
            current = ""
        position = m.end()
    pieces.append(current + text[position:])
    return [p.strip(" ,.;") for p in pieces if p.strip(" ,.;")]


@dataclass
class Change:
    """One change an instruction asks for (a clause's parse, before combining)."""

    kind: str
    o1: str | None
    o2: str | None
    size: str = "unchanged"
    position: str = "unchanged"
    reference: str | None = None
    notes: list[str] = field(default_factory=list)
    confidence: str = "high"
    base: str | None = None  # the object the change is made to (for merging)
    prefix: str = ""  # attribute words put in front of the object ("red")
    suffix: str = ""  # words put after it ("with a beard", "sitting")
    clause: str = ""

    @property
    def subject(self) -> str | None:
        return self.base or self.o1 or self.o2

    def describe(self) -> str:
        if self.kind == "add":
            where = f", {self.position}" + (f" of {self.reference}" if self.reference else "")\
                if self.position != "unchanged" else ""
            return f"add {self.o2}{where}"
        if self.kind == "remove":
            return f"remove {self.o1}"
        parts = [f"{self.o1} -> {self.o2}"] if self.o1 != self.o2 else [str(self.o1)]
        if self.size != "unchanged":
            parts.append(f"size {self.size}")
        if self.position != "unchanged":
            parts.append(f"position {self.position}" + (f" of {self.reference}" if self.reference else ""))
        return ", ".join(parts)


def _global_refusal(original: str, why: str) -> InstructionParseError:
    return InstructionParseError(
        f"{original!r} is a global or style edit ({why}): it changes the whole picture and names no object BPM "
        f"could locate, so the rules give no parse. {HAND_FILL_HELP}"
    )


class _PronounRefusal(InstructionParseError):
    """The instruction points at its object with a pronoun ("make it red")."""


def _pronoun_refusal(original: str, word: str) -> InstructionParseError:
    return _PronounRefusal(
        f"{original!r} refers to {word!r}, which does not name an object (the parser does not see the image). Name "
        f"the object, e.g. 'make the cup red'. {HAND_FILL_HELP}"
    )


_DESCRIPTOR = re.compile(
    r"\s+(?:that is|that's|which is|who is|sitting|standing|lying|located|placed)?\s*"
    r"(?:on|at|in|to)\s+(?:the\s+)?(?:far\s+)?(?:left|right|top|bottom|middle|center|centre|front|back|foreground|"
    r"background|corner|top[\s-]left|top[\s-]right|bottom[\s-]left|bottom[\s-]right|upper left|upper right|"
    r"lower left|lower right)(?:[\s-]+(?:side|corner|edge|hand side))?(?:\s+of\s+(?:the\s+)?(?:image|picture|photo|"
    r"frame|scene))?$"
)


class _Ctx:
    """The instruction being parsed, for messages."""

    def __init__(self, original: str):
        self.original = original


def _object(text: str | None, role: str, ctx: _Ctx, *, notes: list[str] | None = None,
            strip_descriptor: bool = False) -> str:
    """A cleaned object phrase: articles, numbers and quantities dropped; refusals for pronouns / nothing."""
    phrase = clean_phrase(text)
    if phrase is None:
        raise InstructionParseError(
            f"{ctx.original!r} names no {role}; say which object, e.g. 'make the cup red'. {HAND_FILL_HELP}")
    words = phrase.split()
    count: list[str] = []
    while words:
        if words[0] in NUMBER_WORDS or words[0].isdigit():
            count.append(words.pop(0))
            if words[:1] == ["of"]:
                words.pop(0)
        elif words[0] in ("a", "an") or words[0] in QUANTITY_NOUNS and words[1:2] == ["of"]:
            if words[0] in QUANTITY_NOUNS:
                count.append(words.pop(0))
                words.pop(0)
            else:
                words.pop(0)
        elif words[0] in ("more", "extra", "additional", "another", "other", "the", "of", "some", "any", "these",
                          "those", "this", "that", "its", "their", "his", "her", "my", "your", "our"):
            words.pop(0)
        else:
            break
    if count and notes is not None:
        notes.append(f"the count ({' '.join(count)}) is not checked by BPM; it looks for {' '.join(words) or '?'}")
    phrase = " ".join(words)
    if strip_descriptor:
        stripped = _DESCRIPTOR.sub("", phrase)
        if stripped and stripped != phrase:
            if notes is not None:
                notes.append(f"'{phrase[len(stripped):].strip()}' tells which {stripped} is meant; BPM looks for "
                             f"{stripped!r}")
            phrase = stripped
    phrase = phrase.strip()
    if not phrase:
        raise InstructionParseError(
            f"{ctx.original!r} names no {role}; say which object, e.g. 'make the cup red'. {HAND_FILL_HELP}")
    if is_pronoun(phrase):
        raise _pronoun_refusal(ctx.original, phrase)
    return phrase


def _is_global_phrase(phrase: str | None) -> bool:
    """"image", "whole photo", "overall lighting", "colours": the whole picture or a global quality."""
    if not phrase:
        return False
    words = phrase.replace("-", " ").split()
    if not words or len(words) > 3 or {"of", "on", "in", "with", "at", "near"} & set(words):
        return False
    if not (words[-1] in GLOBAL_NOUNS or words[-1] in _TIME_WORDS):
        return False
    return all(w in GLOBAL_NOUNS or w in _TIME_WORDS or w in _GLOBAL_MODIFIERS or w in STYLE_WORDS for w in words[:-1])


_GLOBAL_MODIFIERS = word_set(
    "whole entire overall general full complete current total background foreground natural ambient"
)


def _is_adjectival(words: str) -> bool:
    """Every word a colour, material, colour modifier or 'and' ("light blue", "black and white")."""
    tokens = words.replace("-", " ").split()
    return bool(tokens) and all(t in COLORS or t in MATERIALS or t in COLOR_MODIFIERS or t == "and" for t in tokens)


def _with_attribute(attribute: str, obj: str) -> str:
    """o2 of "make OBJ ATTRIBUTE": the attribute in front; a new colour drops the old colour words."""
    attribute = clean_phrase(attribute) or attribute
    words = obj.split()
    if any(w in COLORS for w in attribute.split()) and len(words) > 1:
        kept = [w for i, w in enumerate(words) if w not in COLORS and not (
            w in COLOR_MODIFIERS and i + 1 < len(words) and words[i + 1] in COLORS)]
        words = kept or words
    return f"{attribute} {' '.join(words)}"


# ------------------------------------------------------------------------------ positions
_DIRECTION = (r"(?:top|upper|bottom|lower)[\s-]?(?:left|right)(?:[\s-]hand)?|(?:left|right)[\s-]?(?:top|upper|bottom|lower)|"
              r"left|right|top|bottom|up|down|upwards?|downwards?|leftwards?|rightwards?|upper (?:part|half)|"
              r"lower (?:part|half)|top half|bottom half|higher|lower|cent(?:er|re)|middle")


class _EndAnchored:
    r"""``(^|\s+)(MODIFIER\s+)*TAIL$``, searched only where ``TAIL$`` occurs. On its own the full pattern rescans a
    run of modifier words from each word of the run when the run is not followed by the tail ("much much ...
    bigger"): quadratic in the run. The tail alone is found or ruled out in one pass, and the full pattern
    cannot match without it, so the answer is the same."""

    def __init__(self, modifiers: str, tail: str):
        self.tail = re.compile(rf"(?:{tail})$")
        self.full = re.compile(rf"(?:^|\s+)(?:(?:{modifiers})\s+)*(?:{tail})$")

    def search(self, text: str) -> re.Match[str] | None:
        return self.full.search(text) if self.tail.search(text) else None


_FRAME_DIRECTION = _EndAnchored(
    r"a little|a little bit|a bit|slightly|further|farther|more|much|all the way|way|over|far",
    r"(?:(?:to|towards|toward|on|at|in|into|onto|over to|up to|down to)\s+(?:the\s+)?(?:very\s+)?(?:far\s+)?)?"
    rf"(?P<dir>{_DIRECTION})"
    r"(?:[\s-]+(?:side|corner|edge|part|half|hand side|area|portion|section|end))?"
    r"(?:\s+(?:of|in)\s+(?:the\s+)?(?:image|picture|photo|frame|scene|canvas|shot|photograph|room))?"
    r"(?:\s+(?:a little|a bit|slightly|instead))?")
_DEPTH_MODIFIERS = r"much|a lot|a little|a bit|slightly|even|way"
_DEPTH_NEAR = _EndAnchored(
    _DEPTH_MODIFIERS,
    r"(?:closer|nearer)(?:\s+(?:to|towards)\s+(?:the\s+)?(?:camera|viewer|us|me|lens|front|foreground|photographer|"
    r"observer|screen))?|forward|forwards|(?:to|into)\s+the\s+(?:front|foreground)|in the foreground")
_DEPTH_FAR = _EndAnchored(
    _DEPTH_MODIFIERS,
    r"(?:(?:further|farther|more)\s+)?"
    r"(?:away(?:\s+from\s+(?:the\s+)?(?:camera|viewer|us|me|lens|photographer))?|back(?:wards)?|"
    r"(?:in|into|to)\s+the\s+(?:distance|background|back)|(?:further|farther)(?:\s+back)?|more distant|distant)")


_RELATIONS: dict[str, str] = {
    **{f"{p}{side}{s}": side for side in ("left", "right")
       for p in ("to the ", "on the ", "at the ", "")
       for s in (" of", " side of", " hand side of", "-hand side of")},
    "on top of": "up", "at the top of": "up", "on the top of": "up", "above": "up", "over": "up",
    "onto": "up", "on to": "up", "upon": "up", "on": "up", "atop": "up", "up on": "up",
    "underneath": "down", "beneath": "down", "below": "down", "under": "down", "at the bottom of": "down",
    "at the foot of": "down", "at the base of": "down",
    "inside of": "inside", "inside": "inside", "into": "inside", "within": "inside",
    "in the middle of": "inside", "in the center of": "inside", "in the centre of": "inside", "in": "inside",
    "to": "inside", "across": "inside", "all over": "inside", "throughout": "inside",
    "in front of": "near", "behind": "near", "in back of": "near", "next to": "near", "beside": "near",
    "besides": "near", "near": "near", "nearby": "near", "close to": "near", "by": "near", "alongside": "near",
    "around": "near", "at": "near", "closer to": "near", "nearer to": "near", "nearer": "near", "towards": "near",
    "toward": "near", "against": "near", "along": "near", "between": "near", "among": "near", "amongst": "near",
    "across from": "near", "opposite": "near", "opposite to": "near", "adjacent to": "near", "right by": "near",
    "right next to": "near", "just behind": "near", "just in front of": "near", "on the other side of": "near",
    "on the far side of": "near", "at the side of": "near", "on either side of": "near",
}
_APPROXIMATED = {
    "behind": "behind is not a BPM state; the closest is near (the boxes touch or overlap little)",
    "in front of": "in front of is not a BPM state; the closest is near",
    "between": "between A and B is not a BPM state; near the first object is used",
    "among": "among is not a BPM state; near is used", "amongst": "among is not a BPM state; near is used",
    "around": "around is not a BPM state; near is used",
    "towards": "towards is not a BPM state; near is used", "toward": "towards is not a BPM state; near is used",
}
_RELATION_RE = re.compile(
    r"\s(" + "|".join(re.escape(k) for k in sorted(_RELATIONS, key=len, reverse=True)) + r")\s+(.+)$"
)
_FAR_FROM = re.compile(r"\s+(?:(?:further|farther)\s+)?(?:away from|far from|far away from|apart from)\s+(.+)$")
_FROM = re.compile(r"\s+from\s+(?:the\s+)?[^,;]+?(?=\s+(?:to|towards|toward|into|onto|over to)\s)")


@dataclass
class _Placement:
    """Where an instruction puts something: a position state, a reference, a size change by depth."""

    state: str | None = None
    reference: str | None = None
    size: str | None = None
    notes: list[str] = field(default_factory=list)
    confidence: str = "high"


def _direction_state(word: str, notes: list[str]) -> tuple[str | None, str]:
    """(state, confidence) for a frame direction: corners keep their horizontal side."""
    word = word.replace("-", " ")
    corner = re.match(r"^(top|upper|bottom|lower)\s?(left|right)|^(left|right)\s?(top|upper|bottom|lower)", word)
    if corner:
        side = corner.group(2) or corner.group(3)
        notes.append(f"a corner ({word}) has two directions and BPM checks one; the horizontal one ({side}) is kept")
        return side, "medium"
    if word in ("center", "centre", "middle"):
        return None, "low"
    if word.startswith(("left", "leftward")):
        return "left", "high"
    if word.startswith(("right", "rightward")):
        return "right", "high"
    if word.startswith(("top", "up", "upper", "higher")):
        return "up", "high"
    return "down", "high"


def _placement(rest: str, ctx: _Ctx, *, depth: bool) -> tuple[str, _Placement]:
    """Split ``rest`` ("the cup to the left of the plate") into the object text and where it goes."""
    rest = " " + rest.strip()
    rest = _FROM.sub("", rest)  # "from A to B": only the destination matters
    rest = re.sub(r"\s+(?:a little bit|a bit|a little|slightly|a lot|much|far|way|even|up|down|out|over|back)"
                  r"(?=\s+(?:to|on|onto|at|in|into|inside|towards|toward|closer|nearer|next|behind|under|below|"
                  r"above|over|beside|by|near)\s)", "", rest)
    if depth:
        m = _DEPTH_NEAR.search(rest)
        if m and m.start() > 0:
            return rest[: m.start()], _Placement(size="larger", notes=[
                "closer to the camera has no BPM position state; an object nearer the viewer looks bigger, so "
                "size larger is checked"], confidence="medium")
        m = _DEPTH_FAR.search(rest)
        if m and m.start() > 0:
            return rest[: m.start()], _Placement(size="smaller", notes=[
                "further away has no BPM position state; an object further from the viewer looks smaller, so "
                "size smaller is checked"], confidence="medium")
    m = _FAR_FROM.search(rest)
    if m:
        return rest[: m.start()], _Placement(state="unchanged", reference=None, notes=[
            "'away from' has no BPM position state (near is its opposite); position left unchanged: correct it "
            "if you know the direction"], confidence="low")
    frame = _FRAME_DIRECTION.search(rest)
    match = _RELATION_RE.search(rest)
    if frame and (match is None or frame.start() <= match.start()):
        notes: list[str] = []
        state, confidence = _direction_state(frame.group("dir"), notes)
        if state is None:
            notes.append("the middle of the picture has no BPM position state")
        return rest[: frame.start()], _Placement(state=state, notes=notes, confidence=confidence)
    if match is None:
        return rest, _Placement()
    keyword, reference = match.group(1), match.group(2)
    state = _RELATIONS[keyword]
    part = re.match(r"^(?:the\s+)?(?:middle|center|centre|edge|side|far side|near side|corner)\s+of\s+(.+)$", reference)
    if part:  # "to the middle of the lake": the lake is the reference
        reference = part.group(1)
    notes = [_APPROXIMATED[keyword]] if keyword in _APPROXIMATED else []
    if keyword == "between":
        reference = re.split(r"\s+and\s+", reference)[0]
    if re.match(r"^(?:the\s+)?(?:corner|middle|center|centre)$", reference.strip()):
        return rest[: match.start()], _Placement(notes=[f"'{keyword} {reference}' names no side of the picture"],
                                                confidence="low")
    head = reference.split(" of ")[0].split()
    if keyword in ("on", "onto", "on to", "upon", "up on") and head and head[-1] in FLAT_SURFACES:
        state = "inside"
        notes.append(f"on a flat thing ({head[-1]}) means within its box: position inside")
    ref = _object(reference, "reference object", ctx, notes=notes, strip_descriptor=True)
    if _is_global_phrase(ref) and ref.split()[-1] in ("image", "picture", "photo", "frame", "scene", "photograph"):
        ref = None  # "in the picture": the frame itself, no reference object
        state = "unchanged" if keyword in ("in", "to", "into", "inside", "within") else state
    return rest[: match.start()], _Placement(state=state, reference=ref, notes=notes,
                                            confidence="medium" if keyword in _APPROXIMATED else "high")


# ------------------------------------------------------------------------------ clause rules
Rule = Callable[[str, _Ctx], "Change | None"]


def _keep(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^(?:keep|leave|preserve|don't change|do not change|don't touch|do not touch|don't move|"
                 r"do not move|don't alter|do not alter)\s+(.*)$", text)
    if not m:
        return None
    return Change("keep", None, None, clause=text, notes=[f"'{text}' asks to keep something: BPM's preservation "
                                                          "score covers everything outside the edit"])


def _global_verbs(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^(\w+)(?:\s+(?:in|out|up|down))?(?:\s+(?:on\s+)?(.*))?$", text)
    if not m or m.group(1) not in GLOBAL_VERBS:
        return None
    verb, rest = m.group(1), (m.group(2) or "").strip()
    target = clean_phrase(rest)
    if target:
        target = re.sub(r"\s+(?:a lot|a little|a bit|slightly|more|up|down)$", "", target)
    if not target or _is_global_phrase(target) or verb in ("zoom", "crop", "rotate", "flip", "mirror", "upscale",
                                                           "enhance", "improve", "fix", "restore", "retouch",
                                                           "denoise", "filter", "stylize", "stylise"):
        if target and not _is_global_phrase(target) and verb in ("rotate", "flip", "mirror"):
            obj = _object(target, "object to turn", ctx)
            return Change("pose", obj, f"{_participle(verb)} {obj}", clause=text, base=obj, prefix=_participle(verb))
        raise _global_refusal(ctx.original, f"'{verb}' {('the ' + target) if target else 'the picture'}")
    if verb not in VERB_ATTRIBUTES:
        raise _global_refusal(ctx.original, f"'{verb}'")
    obj = _object(target, "object to change", ctx)
    attribute = VERB_ATTRIBUTES[verb]
    return Change("attribute", obj, f"{attribute} {obj}", clause=text, base=obj, prefix=attribute)


def _background(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^(?:change|replace|turn|set|switch|swap|transform|convert|alter|make|modify)\s+(?:the\s+)?"
                 r"(?:background|backdrop|scenery|setting)\s+(?:to|into|with|by|for|as|in|to be|to look like|"
                 r"so it shows|so that it shows)\s+(.*)$", text)
    if m:
        value = m.group(1).strip()
        if _is_adjectival(value) or not _ARTICLE.match(value + " ") and len(value.split()) == 1 and\
                value in STYLE_WORDS:
            return Change("attribute", "background", f"{value} background", clause=text)
        return Change("background", "background", _object(value, "new background", ctx), clause=text)
    m = re.match(r"^make\s+(?:the\s+)?(?:background|backdrop)\s+(.*)$", text)
    if m:
        value = m.group(1).strip()
        value = re.sub(r"^(?:look\s+like|into)\s+", "", value)
        o2 = value if _ARTICLE.match(value + " ") else f"{value} background"
        return Change("background", "background", _object(o2, "new background", ctx), clause=text)
    return None


_REMOVE_VERBS = (r"remove|delete|erase|eliminate|get rid of|take away|take out|take off|cut out|wipe out|wipe away|"
                 r"clear away|throw away|throw out|hide|lose|ditch|drop|crop out|edit out|paint out|remove all|"
                 r"get the|clear out|cut")


def _remove(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(rf"^(?:{_REMOVE_VERBS})(?:\s+(.*))?$", text)
    if m and text.startswith("get the"):
        m2 = re.match(r"^get\s+(.*?)\s+out(?:\s+of\s+.*)?$", text)
        if not m2:
            return None
        m = m2
    if not m:
        m = re.match(r"^(?:take|get|pull|lift)\s+(.*?)\s+(?:off|out|away)(?:\s+(?:of|from)?\s*.*)?$", text)
    if not m:
        m = re.match(r"^(?:there should be|let there be|show|have|make there be) no\s+(.*)$", text)
    if not m:
        m = re.match(r"^make\s+(.*?)\s+(?:disappear|vanish|go away|invisible|gone|removed|deleted|erased|go)$", text)
    if not m:
        m = re.match(r"^make\s+(.*?)\s+(?:be\s+)?(?:removed|deleted|erased|taken out|taken away|gone)$", text)
    if not m:
        return None
    target = re.sub(r"\s+(?:from|out of|off of|off)\s+.*$", "", m.group(1) or "")
    target = re.sub(r"\s+(?:out|away|off)$", "", target)
    notes: list[str] = []
    obj = _object(target, "object to remove", ctx, notes=notes, strip_descriptor=True)
    return Change("remove", obj, None, clause=text, notes=notes, base=obj)


def _replace(text: str, ctx: _Ctx) -> Change | None:
    pairs = [
        (r"^substitute\s+(.*?)\s+for\s+(.*)$", 2, 1),
        (r"^(?:have|let|make)\s+(.*?)\s+(?:replace|take the place of|take over from)\s+(.*)$", 2, 1),
        (r"^(?:put|place|draw|add|use|show)\s+(.*?)\s+(?:in place of|where|in the place of|in the spot of)\s+(.*?)"
         r"(?:\s+(?:is|are|was|were|used to be|stands))?$", 2, 1),
        (r"^(?:replace|swap|switch|exchange|substitute|trade|swap out|switch out)(?:\s+(.*?))?\s+"
         r"(?:with|by|for|to|into|and put|and use)\s+(.*)$", 1, 2),
        (r"^make\s+(.*?)\s+(?:replaced|swapped|substituted|exchanged)\s+(?:with|by|for)\s+(.*)$", 1, 2),
        (r"^(?:(?:put|show|have|use|draw|add|make)\s+)?(.*?)\s+instead of\s+(.*)$", 2, 1),
    ]
    for pattern, old, new in pairs:
        m = re.match(pattern, text)
        if m:
            notes: list[str] = []
            o1 = _object(m.group(old), "object to replace", ctx, notes=notes, strip_descriptor=True)
            o2 = _object(m.group(new), "new object", ctx, notes=notes)
            if _is_adjectival(o2) and not _ARTICLE.match(m.group(new).strip() + " "):
                return Change("attribute", o1, _with_attribute(o2, o1), clause=text, notes=notes, base=o1, prefix=o2)
            return Change("replace", o1, o2, clause=text, notes=notes, base=o2)
    m = re.match(r"^(?:swap|switch|exchange|trade|flip)\s+(?:the\s+)?(?:positions?|places?|spots?|locations?|sides?)"
                 r"\s+of\s+(.*?)\s+and\s+(.*)$", text) or re.match(
        r"^(?:have|let|make)\s+(.*?)\s+and\s+(.*?)\s+(?:swap|switch|trade|exchange)\s+(?:places|positions|spots)$", text)
    if m:
        first = _object(m.group(1), "object to move", ctx)
        second = _object(m.group(2), "object to move", ctx)
        return Change("move", first, first, clause=text, base=first, confidence="low", notes=[
            f"{first} and {second} trade places: BPM scores one object and one direction; the direction depends on "
            f"where they stand, so set the position state by hand"])
    m = re.match(r"^(?:replace|swap|switch|exchange|substitute)(?:\s+(.*))?$", text)
    if m:
        target = m.group(1) or ""
        pair = re.match(r"^(.*?)\s+and\s+(.*)$", target)
        if pair:  # "swap the cat and the dog": they trade places
            o1 = _object(pair.group(1), "object to swap", ctx)
            o2 = _object(pair.group(2), "object to swap", ctx)
            return Change("replace", o1, o2, clause=text, confidence="low", base=o2, notes=[
                f"swapping {o1} and {o2} moves both; BPM scores one object: {o1} in the source against {o2} in the "
                "edit, position unchanged"])
        _object(target, "object to replace", ctx)
        raise InstructionParseError(f"{ctx.original!r} does not say what to put instead; write 'replace X with Y'. "
                                    f"{HAND_FILL_HELP}")
    return None


def _switch_state(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^(?:turn|switch|shut)\s+(on|off)\s+(.*)$", text) or re.match(
        r"^(?:turn|switch|shut)\s+(.*?)\s+(on|off)$", text)
    if m:
        state, obj = (m.group(1), m.group(2)) if m.group(1) in ("on", "off") else (m.group(2), m.group(1))
        o1 = _object(obj, "object to switch", ctx)
        return Change("state", o1, f"{o1} turned {state}", clause=text, base=o1, suffix=f"turned {state}")
    m = re.match(r"^(open|close|shut)\s+(.*)$", text)
    if m:
        o1 = _object(m.group(2), "object to open or close", ctx)
        word = "open" if m.group(1) == "open" else "closed"
        return Change("state", o1, f"{word} {o1}", clause=text, base=o1, prefix=word)
    return None


def _size_state(word: str) -> str:
    return "larger" if word in LARGER else "smaller"


def _resize(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^(enlarge|expand|grow|magnify|scale up|blow up|increase the size of|double the size of|"
                 r"triple the size of|shrink|reduce the size of|decrease the size of|scale down|miniaturize|"
                 r"miniaturise|halve the size of|increase|decrease|reduce|upsize|downsize|make bigger|make smaller)"
                 r"(?:\s+(.*?))?(?:'s size|s' size)?(?:\s+(?:in size|by\s+.*|a lot|a little|a bit|slightly|"
                 r"significantly|considerably|twofold|up|down))*$", text)
    if m:
        verb = m.group(1)
        if verb in ("increase", "decrease", "reduce") and not re.search(r"\bsize\b", text):
            return None
        obj = _object(re.sub(r"\s+size$", "", m.group(2) or ""), "object to resize", ctx)
        grow = verb in ("enlarge", "expand", "grow", "magnify", "scale up", "blow up", "increase the size of",
                        "double the size of", "triple the size of", "increase", "upsize", "make bigger")
        return Change("resize", obj, obj, "larger" if grow else "smaller", clause=text, base=obj)
    m = re.match(r"^(scale)\s+(.*?)\s+(up|down)$", text)
    if m:
        obj = _object(m.group(2), "object to resize", ctx)
        return Change("resize", obj, obj, "larger" if m.group(3) == "up" else "smaller", clause=text, base=obj)
    m = re.match(rf"^give\s+(.*?)\s+{_DEGREE}({_SIZE_WORD})\s+(.*)$", text)
    if m:  # "give the cat longer whiskers": the part grows
        obj = _object(f"{m.group(1)} {m.group(3)}", "object to resize", ctx)
        return Change("resize", obj, obj, _size_state(m.group(2)), clause=text, base=obj)
    return None


_MOVE_VERBS = r"move|shift|slide|drag|push|relocate|reposition|bring|pull|nudge|scoot|transfer|carry|take"


def _move(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(rf"^(?:{_MOVE_VERBS})\s+(.*)$", text)
    definite_put = re.match(r"^(?:put|place|set|position|stand|hang|sit|lay)\s+((?:the|my|his|her|their|its|this|that|"
                            r"these|those|both|all)\s+.*)$", text)
    lift = re.match(r"^(raise|lift|lower|drop)\s+(.*?)(?:\s+(?:a little|a bit|slightly|higher|lower|up|down))?$", text)
    if lift and not m and not definite_put:
        obj = _object(lift.group(2), "object to move", ctx)
        state = "up" if lift.group(1) in ("raise", "lift") else "down"
        if lift.group(1) == "drop" and not re.search(r"\b(?:lower|down)\b", text):
            return None
        return Change("move", obj, obj, position=state, clause=text, base=obj)
    if not m and not definite_put:
        return None
    rest = (m or definite_put).group(1)
    rest = re.sub(r"\s+so(?: that)?\s+(?:it|they|he|she)(?:'s|'re|\s+is|\s+are|\s+sits|\s+stands|\s+ends up|\s+will be)?"
                  r"(?=\s)", "", rest)
    if m:
        rest = re.sub(r"^(?:over|back|up|down)\s+(?=(?:the|a|an|my)\s)", "", rest)
    obj_text, place = _placement(rest, ctx, depth=True)
    if place.state is None and place.size is None:
        if definite_put:
            return None
        if place.confidence == "low":  # "move the cup to the middle"
            obj = _object(obj_text, "object to move", ctx)
            return Change("move", obj, obj, clause=text, base=obj, confidence="low", notes=place.notes + [
                "position left unchanged: correct it if you know the direction"])
        raise InstructionParseError(
            f"{ctx.original!r} does not say where to move the object; write e.g. 'move the cup to the left' or "
            f"'move the cup next to the plate'. {HAND_FILL_HELP}")
    obj = _object(obj_text, "object to move", ctx, notes=place.notes)
    return Change("move", obj, obj, place.size or "unchanged", place.state or "unchanged", place.reference,
                  notes=place.notes, confidence=place.confidence, clause=text, base=obj)


_WEAR = r"wear|wearing|wears|put on|hold|holding|holds|carry|carrying|carries|have on|has on|don|sport|sporting"


def _give_or_wear(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^give\s+(.*?)\s+((?:a|an|some|one|two|three|four|five|\d+|more|longer|shorter|\w+er)\s+.*)$", text)\
        or re.match(r"^give\s+((?:the|my|his|her|their|this|that|our|your)\s+\S+)\s+(\S+.*)$", text)\
        or re.match(r"^give\s+(\S+(?:'s?)?)\s+(\S+.*)$", text)
    if m:
        raw = m.group(1).strip()
        if raw in _TRUE_PRONOUNS or raw in ("him", "her", "them", "me", "us"):
            if _styleish(m.group(2)):
                raise _global_refusal(ctx.original, f"it gives the picture {m.group(2)!r}")
            raise _pronoun_refusal(ctx.original, raw)
        receiver = clean_phrase(m.group(1))
        if receiver is None or is_pronoun(receiver) or _is_global_phrase(receiver):
            if receiver and _is_global_phrase(receiver) or (receiver and is_pronoun(receiver)
                                                              and _styleish(m.group(2))):
                raise _global_refusal(ctx.original, f"it gives the picture {m.group(2)!r}")
            _object(m.group(1), "object that receives it", ctx)
        obj = _object(m.group(1), "object that receives it", ctx)
        held = re.match(r"^(.*?)\s+to\s+(hold|wear|carry|play with|read|eat)$", m.group(2))
        if held:
            obj = _object(m.group(1), "object that receives it", ctx)
            thing = _object(held.group(1), "thing to give", ctx)
            action = "holding" if held.group(2) in ("hold", "carry") else gerund(held.group(2).split()[0]) + (
                " with" if held.group(2) == "play with" else "")
            return Change("attribute", obj, f"{obj} {action} {thing}", clause=text, base=obj,
                          suffix=f"{action} {thing}")
        thing = _object(m.group(2), "thing to give", ctx)
        return Change("attribute", obj, f"{obj} with {thing}", clause=text, base=obj, suffix=f"with {thing}", notes=[
            f"giving {obj} {thing} changes {obj} (o1 = o2 = {obj}, o2 described with the change); to score "
            f"{thing} as a new object instead, write 'add {thing} to {obj}'"])
    m = re.match(rf"^(?:make|have|let|get)\s+(.*?)\s+(?:to\s+|be\s+)?({_WEAR})\s+(.*)$", text) or re.match(
        r"^dress\s+(.*?)\s+(in)\s+(.*)$", text)
    if m:
        obj = _object(m.group(1), "person or animal", ctx)
        thing = _object(m.group(3), "thing worn or held", ctx)
        verb = m.group(2)
        action = "holding" if verb.startswith(("hold", "carr")) else "wearing"
        return Change("attribute", obj, f"{obj} {action} {thing}", clause=text, base=obj, suffix=f"{action} {thing}")
    m = re.match(r"^(?:show|depict|draw|picture|portray)\s+((?:the|my|his|her|their|this|that)\s+.*?)\s+"
                 r"(with|wearing|holding|in)\s+(.*)$", text)
    if m:
        obj = _object(m.group(1), "object to change", ctx)
        thing = _object(m.group(3), "what it gets", ctx)
        link = "with" if m.group(2) in ("with", "in") else m.group(2)
        return Change("attribute", obj, f"{obj} {link} {thing}", clause=text, base=obj, suffix=f"{link} {thing}")
    m = re.match(r"^(cover|fill|decorate|wrap|coat|sprinkle|surround|top|garnish|stuff|load)\s+(.*?)\s+with\s+(.*)$",
                 text)
    if m:
        obj = _object(m.group(2), "object to change", ctx)
        thing = _object(m.group(3), "what it gets", ctx)
        done = _participle(m.group(1))
        return Change("attribute", obj, f"{obj} {done} with {thing}", clause=text, base=obj,
                      suffix=f"{done} with {thing}")
    if re.match(r"^give\s", text):
        raise InstructionParseError(f"{ctx.original!r}: the rules cannot tell the object from its receiver; write "
                                    f"'give the cat a hat' or 'add a hat to the cat'. {HAND_FILL_HELP}")
    return None


def _styleish(text: str) -> bool:
    words = set(re.findall(r"[a-z]+", text))
    return bool(words & (STYLE_WORDS | _TIME_WORDS | {"look", "feel", "vibe", "style", "filter", "effect", "tone",
                                                     "aesthetic", "mood", "atmosphere"}))


_GAZE_VERBS = frozenset({"look", "face", "turn", "stare", "gaze", "point", "lean"})
_GAZE_NEXT = word_set(
    "left right up down at to towards toward away back around over into out forward forwards sideways upward "
    "upwards downward downwards straight"
)


#: Words after which no pose verb is looked for ("make it look like a painting").
_SCAN_STOP = word_set("like into a an with of from as than have has had")


def _is_pose_at(words: list[str], i: int) -> bool:
    """Is ``words[i]`` a pose verb here? ("look" only with a direction: "look autumnal" is an attribute)."""
    verb = _pose_verb(words[i])
    if verb is None or words[i] in COLORS or words[i] in MATERIALS:
        return False
    following = words[i + 1:i + 2]
    if verb == "look" and following and following[0] not in _GAZE_NEXT:
        return False
    return not (verb in ("open", "close") and not following)


def _pose(obj_text: str, words: list[str], ctx: _Ctx, text: str) -> Change:
    verb = _pose_verb(words[0]) or words[0]
    tail = " ".join(words[1:])
    if _INDEFINITE.match(obj_text.strip() + " "):  # "have a parrot sit on the shoulder": something new appears
        change = _add(f"add {obj_text} {tail}".strip(), ctx)
        if change is not None:
            change.notes.append(f"the new {change.o2} should be {gerund(verb)}; BPM checks where it is, not its pose")
            return change
    tail = re.sub(r"^(?:to\s+)?(?:the\s+)?", "", tail) if re.match(r"^(?:to\s+)?(?:the\s+)?(?:left|right|up|down|"
                                                                   r"camera|sky|ground|front|back)\b", tail) else tail
    obj = _object(obj_text, "object that changes pose", ctx)
    if verb in ("open", "close") and not tail:
        word = "open" if verb == "open" else "closed"
        return Change("attribute", obj, f"{word} {obj}", clause=text, base=obj, prefix=word)
    action = gerund(verb) + (f" {tail}" if tail else "")
    return Change("pose", obj, f"{obj} {action}", clause=text, base=obj, suffix=action, notes=[
        f"a pose or action of {obj}: o1 = o2 = {obj}, described with the change; size and position unchanged"])


def _pose_rule(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^(?:make|have|let|get)\s+(.*)$", text)
    if not m:
        return None
    words = m.group(1).split()
    for i in range(1, len(words)):
        word = words[i]
        if word in _SCAN_STOP:
            break
        if words[i - 1] in ("a", "an", "the", "some", "my", "his", "her", "its", "their", "to") and word != "to":
            continue
        if _is_pose_at(words, i):
            if word in ("turn", "paint", "cook", "play", "cross", "roll", "type", "write", "fly") and i + 1 < len(
                    words) and words[i + 1] in ("into", "to"):
                return None
            return _pose(" ".join(words[:i]), words[i:], ctx, text)
        if word == "to" and i + 1 < len(words) and _pose_verb(words[i + 1]):
            return _pose(" ".join(words[:i]), words[i + 1:], ctx, text)
    return None


_COLOR_WORD = "|".join(sorted(COLORS | MATERIALS, key=len, reverse=True))


def _color_verbs(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^(?:change|switch|alter|make|set|turn)\s+(?:the\s+)?(?:colou?r|material|texture|pattern|shade|hue)"
                 r"\s+of\s+(.*?)\s+(?:to|into|in|from\s+\S+(?:\s+\S+)?\s+to)\s+(.*)$", text)\
        or re.match(r"^(?:change|switch|alter|make|set|turn)\s+(.*?)(?:'s|s')?\s+(?:colou?r|material|shade)\s+(?:to|into)"
                    r"\s+(.*)$", text)
    if m:
        obj = _object(m.group(1), "object to recolour", ctx, strip_descriptor=True)
        value = _object(m.group(2), "new colour", ctx)
        return Change("attribute", obj, _with_attribute(value, obj), clause=text, base=obj, prefix=value)
    m = re.match(r"^(?:paint|colou?r|recolou?r|dye|tint|spray|spray-paint|spraypaint)\s+(.*?)\s+(?:in\s+|to\s+|with\s+)?"
                 r"((?:(?:" + "|".join(sorted(COLOR_MODIFIERS)) + r")\s+)?(?:" + _COLOR_WORD +
                 r")(?:\s+and\s+\S+)?)$", text)
    if m:
        obj = _object(m.group(1), "object to recolour", ctx, strip_descriptor=True)
        return Change("attribute", obj, _with_attribute(m.group(2), obj), clause=text, base=obj, prefix=m.group(2))
    return None


_ADD_VERBS = (r"add|insert|draw|include|create|generate|attach|stick|hang|plant|introduce|paint|sketch|put|place|set|"
              r"position|drop|throw in|bring in|add in|spawn|show|have|see|display|depict|install|build|grow|pop|"
              r"sprinkle|scatter|lay|stand|seat|park|perch")


def _add(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(rf"^(?:{_ADD_VERBS})(?:\s+(.*))?$", text) or re.match(
        r"^(?:let there be|there should be|there is|there are|there must be|make there be|there)\s+(.*)$", text)
    if not m:
        return None
    rest = m.group(1) or ""
    verb = text.split(" ", 1)[0]
    if verb in ("paint", "show", "have", "see", "display", "grow", "drop", "set", "stand", "lay", "pop", "hang",
                "seat", "park", "perch") and rest and not _INDEFINITE.match(rest + " "):
        return None  # "paint the wall blue" recolours, "have the dog sit" is a pose
    notes: list[str] = []
    far = re.search(r"\s+(?:far away|far off|in the (?:far )?distance)\b", rest)
    if far:
        rest = rest[:far.start()] + rest[far.end():]
        notes.append("'far away' is not checked for an added object (BPM gives an added object full size score)")
    obj_text, place = _placement(rest, ctx, depth=False)
    notes.extend(place.notes)
    obj = _object(obj_text, "object to add", ctx, notes=notes)
    state = place.state
    confidence = place.confidence
    if state is None and place.confidence == "low":  # "in the middle of the picture": within the frame
        state, confidence = "inside", "medium"
        notes[:] = [n for n in notes if "middle" not in n] + ["the middle of the picture: inside the frame"]
    return Change("add", None, obj, "unchanged", state or "unchanged", place.reference, notes=notes,
                  confidence=confidence, clause=text, base=obj)


def _from_to(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^(?:change|turn|transform|convert|morph|make|modify|alter|switch|recolou?r|paint|colou?r)\s+"
                 r"(.*?)\s+from\s+(.*?)\s+(?:to|into)\s+(.*)$", text)
    if m:
        obj_text, old, new = m.group(1), m.group(2).strip(), m.group(3).strip()
        if re.search(r"\b(?:position|place|location|spot|side)$", obj_text):
            thing = re.sub(r"(?:'s)?\s*(?:position|place|location|spot|side)$", "", obj_text)
            return _move(f"move {thing} to {new}", ctx)
        if _is_global_phrase(clean_phrase(obj_text)):
            raise _global_refusal(ctx.original, f"it changes {clean_phrase(obj_text)!r}")
        obj = _object(obj_text, "object to change", ctx)
        if _ARTICLE.match(old + " ") or _ARTICLE.match(new + " "):
            o1, o2 = _object(old, "object to change", ctx), _object(new, "new object", ctx)
            return Change("replace", o1, o2, clause=text, base=o2,
                          notes=[f"'{obj}' names the kind of thing; BPM looks for {o1!r} and {o2!r}"])
        old_c, new_c = clean_phrase(old) or old, clean_phrase(new) or new
        return Change("attribute", f"{old_c} {obj}", _with_attribute(new_c, obj), clause=text, base=obj, prefix=new_c)
    return None


def _change_into(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^(?:change|alter|adjust|modify|set)\s+(.*?)(?:'s|s')?\s+(?:pose|posture|stance|position)\s+"
                 r"(?:so(?: that)? (?:it|he|she|they)(?:'s|'re| is| are)?|to|into|so it looks)\s+(.*)$", text)
    if m:
        return _make_value(m.group(1), m.group(2), ctx, text)
    m = re.match(r"^(change|turn|transform|convert|morph|make|modify|alter|rotate|spin)(?:\s+(.*?))?\s+"
                 r"(into|to be|to look like|to|so it looks like|so that it looks like|so it becomes|around|round)"
                 r"(?:\s+(.*))?$", text)
    if not m or (m.group(1) == "make" and m.group(3) in ("to", "around", "round")):
        return None  # "make the chair next to the desk" is a place, not a change into something
    m = re.match(r"^\S+(?:\s+(.*?))?\s+(?:into|to be|to look like|to|so it looks like|so that it looks like|"
                 r"so it becomes|around|round)(?:\s+(.*))?$", text)
    if _is_global_phrase(clean_phrase(m.group(1))):
        raise _global_refusal(ctx.original, f"it turns {clean_phrase(m.group(1))!r} into something else")
    obj = _object(m.group(1), "object to change", ctx, strip_descriptor=True)
    value = (m.group(2) or "").strip()
    direction = re.match(rf"^(?:the\s+)?(?:{_DIRECTION}|around|the other way|sideways|away|towards? the camera)$",
                         value) or not value
    if direction:  # "turn the dog's head to the left": a pose, the object stays where it is
        way = value.replace("the ", "") or "around"
        return Change("pose", obj, f"{obj} turned {way}", clause=text, base=obj, suffix=f"turned {way}", notes=[
            f"turning {obj} {way} changes its pose, not its place: position unchanged"])
    if _is_adjectival(value):
        return Change("attribute", obj, _with_attribute(value, obj), clause=text, base=obj, prefix=value)
    notes: list[str] = []
    o2 = _object(value, "new object", ctx, notes=notes)
    if _styleish(value) and re.search(r"\b(?:painting|sketch|drawing|cartoon|style|watercolou?r|illustration)\b",
                                      value) and obj in ("everything",):
        raise _global_refusal(ctx.original, "a change of style")
    return Change("replace", obj, o2, clause=text, notes=notes, base=o2)


_STATE_WORDS = {"removed", "gone", "deleted", "erased", "invisible", "missing", "absent"}


def _make_value(obj_text: str, value: str, ctx: _Ctx, text: str) -> Change:
    """"make OBJ VALUE" for every kind of VALUE: size, place, pose, new object, attribute."""
    value = value.strip()
    obj_phrase = clean_phrase(obj_text)
    if obj_phrase is None or is_pronoun(obj_phrase) or _is_global_phrase(obj_phrase):
        if obj_phrase and obj_phrase not in _TRUE_PRONOUNS:
            raise _global_refusal(ctx.original, f"it changes {obj_phrase!r}")
        if obj_phrase and (_styleish(value) or re.sub(r"^(?:look|seem|appear|feel)\s+(?:like\s+)?", "", value) in (
                STYLE_WORDS | _TIME_WORDS) or re.search(r"\b(?:painting|sketch|drawing|style|photo|movie|film|"
                                                       r"cartoon|era|century|\d{4}s)\b", value)):
            raise _global_refusal(ctx.original, f"'{obj_phrase}' with no object is the whole picture")
        _object(obj_text, "object to change", ctx)
    value = re.sub(r"^(?:look|appear|seem)\s+(?!like\b)", "", value)
    m = re.match(r"^(?:turned\s+|switched\s+)?(on|off)$", value)
    if m:
        obj = _object(obj_text, "object to switch", ctx)
        return Change("state", obj, f"{obj} turned {m.group(1)}", clause=text, base=obj, suffix=f"turned {m.group(1)}")
    if value in _STATE_WORDS or re.match(r"^(?:removed|deleted|erased|taken (?:out|away))\b", value):
        obj = _object(obj_text, "object to remove", ctx, strip_descriptor=True)
        return Change("remove", obj, None, clause=text, base=obj)
    m = re.match(r"^(?:replaced|swapped|substituted|exchanged|switched)\s+(?:with|by|for)\s+(.*)$", value)
    if m:
        obj = _object(obj_text, "object to replace", ctx, strip_descriptor=True)
        return Change("replace", obj, _object(m.group(1), "new object", ctx), clause=text, base=m.group(1))
    m = re.match(r"^(?:into|turned into|changed into|transformed into|converted into)\s+(.*)$", value)
    if m:
        return _change_into(f"turn {obj_text} into {m.group(1)}", ctx) or _make_value(obj_text, m.group(1), ctx, text)
    m = re.match(rf"^{_DEGREE}({_SIZE_WORD})(?:\s+(?:than\s+.*|in size|sized|in scale|overall|again|now))?$", value)\
        or re.match(r"^(?:twice|double|three times|triple|\d+\s*(?:x|times))\s+(?:as\s+)?(big|large|the size|its size|"
                    r"bigger|larger|tall|long)(?:\s+.*)?$", value)
    if m:
        obj = _object(obj_text, "object to resize", ctx)
        word = m.group(1)
        size = _size_state(word) if word in LARGER | SMALLER else "larger"
        return Change("resize", obj, obj, size, clause=text, base=obj)
    if re.match(r"^(?:half|a third|a quarter|one half)\s+(?:as\s+)?(?:big|large|the size|its size|its current size)"
                r"(?:\s+.*)?$", value):
        obj = _object(obj_text, "object to resize", ctx)
        return Change("resize", obj, obj, "smaller", clause=text, base=obj)
    # a place: "the cup should be on the right", "make the dog closer"
    head, place = _placement(f"x {value}", ctx, depth=True)
    loose = place.state == "near" and re.match(r"^(?:at|by|around|in)\s", value) is not None
    if not loose and (place.state is not None or place.size is not None) and head.strip() == "x":
        obj = _object(obj_text, "object to move", ctx)
        return Change("move", obj, obj, place.size or "unchanged", place.state or "unchanged", place.reference,
                      notes=place.notes, confidence=place.confidence, clause=text, base=obj)
    words = value.split()
    if words and _is_pose_at(words, 0):
        return _pose(obj_text, words, ctx, text)
    m = re.match(r"^(?:look|appear|seem)\s+like\s+(.*)$", value)
    if m:
        obj = _object(obj_text, "object to change", ctx)
        target = m.group(1)
        if _is_adjectival(target) or not _ARTICLE.match(target + " ") and len(target.split()) == 1:
            return Change("attribute", obj, f"{clean_phrase(target)} {obj}", clause=text, base=obj,
                          prefix=clean_phrase(target) or target, confidence="medium",
                          notes=[f"'look like {target}' taken as an attribute of {obj}"])
        return Change("replace", obj, _object(target, "new object", ctx), clause=text, base=target)
    obj = _object(obj_text, "object to change", ctx, strip_descriptor=True)
    if re.match(r"^(?:a|an)\s", value):
        o2 = _object(value, "new object", ctx)
        return Change("replace", obj, o2, clause=text, base=o2)
    m = re.match(r"^(?:made of|made from|made out of|out of|of)\s+(.*)$", value)
    if m:
        material = _object(m.group(1), "material", ctx)
        return Change("attribute", obj, _with_attribute(material, obj), clause=text, base=obj, prefix=material)
    m = re.match(r"^(?:with|have|has)\s+(.*)$", value)
    if m:
        thing = _object(re.sub(r"^(?:more|extra|less)\s+", "", m.group(1)), "what it gets", ctx)
        return Change("attribute", obj, f"{obj} with {thing}", clause=text, base=obj, suffix=f"with {thing}")
    value = re.sub(r"^(?:more|very|really|much|even|a lot more|a bit|a little|slightly|so|less)\s+", "", value)
    if re.match(r"^(?:at|in|during|under|for)\s", value):  # "make the sky at sunset"
        suffix = clean_phrase(value) or value
        return Change("attribute", obj, f"{obj} {suffix}", clause=text, base=obj, suffix=suffix, confidence="medium",
                      notes=[f"'{value}' taken as a new look of {obj}; check o2"])
    if (len(value.split()) == 1 and value.endswith("s") and not value.endswith(("ss", "ous")) and obj.endswith("s")
            and not _is_adjectival(value)):  # "the apples should be oranges": new objects
        return Change("replace", obj, value, clause=text, base=value, confidence="medium",
                      notes=[f"{value!r} taken as new objects in place of the {obj}; check o2"])
    known = all(w in COLORS or w in MATERIALS or w in COLOR_MODIFIERS or w in STYLE_WORDS or w == "and"
                or w.endswith(("y", "ed", "ful", "ous", "ish", "ic", "al", "er", "less", "en", "ive", "ble"))
                for w in value.replace("-", " ").split())
    attribute = clean_phrase(value) or value
    change = Change("attribute", obj, _with_attribute(attribute, obj), clause=text, base=obj, prefix=attribute)
    if not known:
        change.confidence = "medium"
        change.notes.append(f"{value!r} taken as a new attribute of {obj}; check o2")
    return change


#: A verb of being somewhere before a relation ("parked next to", "to hang above"): only the place counts.
_PLACEMENT_VERB = re.compile(
    r"\s+(?:to\s+)?(?:be\s+)?(?:parked|placed|put|positioned|located|moved|set|kept|stored|hang|hanging|hung|"
    r"stand|standing|lie|lying|rest|resting|stay|staying|sit|sitting|go|be)\s+(?=(?:next to|beside|behind|"
    r"in front of|on|onto|under|above|below|near|inside|into|over|at|by|between|to the)\s)")


def _make_attribute(text: str, ctx: _Ctx) -> Change | None:
    m = re.match(r"^what if\s+(.*?)\s+(?:had|has|got)\s+(.*)$", text)
    if m:
        return _make_value(m.group(1), f"with {m.group(2)}", ctx, text)
    m = re.match(r"^what if\s+(.*?)\s+(?:was|were|is|are|became|looked)\s+(.*)$", text)\
        or re.match(r"^(?:let|have)\s+(.*?)\s+be\s+(.*)$", text)
    if m:
        return _make_value(m.group(1), m.group(2), ctx, text)
    m = re.match(r"^(?:make|turn|render|get|see|let|have)\s+(.*)$", text)
    if not m:
        return None
    body = re.sub(_PLACEMENT_VERB, " ", " " + m.group(1)).strip()
    words = body.split()
    # a place at the end: "make the cup on the left" is a move
    head, place = _placement(body, ctx, depth=True)
    ref_tail = (place.reference or "").split()[-1:]
    loose = place.state == "near" and re.search(r"\s(?:at|by|around|in)\s", body) is not None
    movable = ("left", "right", "up", "down", "near", "inside")
    loose = loose or _is_global_phrase(clean_phrase(head)) or re.search(r"\b(?:like|look|looks|was|were|is|are)\b",
                                                                        head) is not None
    if not loose and (place.size is not None or place.state in movable) and clean_phrase(head)\
            and not re.search(r"\b(?:a|an)\s", head) and not (ref_tail and ref_tail[0] in COLORS | MATERIALS | LARGER
                                                              | SMALLER):
        obj = _object(head, "object to move", ctx)
        return Change("move", obj, obj, place.size or "unchanged", place.state or "unchanged", place.reference,
                      notes=place.notes, confidence=place.confidence, clause=text, base=obj)
    # a size word anywhere after the object: "make the dog a lot bigger than the cat"
    m = re.match(rf"^(.*?)\s+({_DEGREE}(?:{_SIZE_WORD})(?:\s+.*)?)$", body)
    if m and clean_phrase(m.group(1)) and re.match(rf"^{_DEGREE}(?:{_SIZE_WORD})(?:\s+(?:than\s+.*|in size|sized|"
                                                   r"in scale|overall|again|now))?$", m.group(2)):
        return _make_value(m.group(1), m.group(2), ctx, text)
    m = re.match(r"^(.*?)\s+((?:twice|double|three times|triple|half|a third|a quarter)\s+.*)$", body)
    if m:
        return _make_value(m.group(1), m.group(2), ctx, text)
    m = re.match(r"^(.*?)\s+((?:look|appear|seem)\s+like\s+.*|(?:made of|made from|made out of|out of)\s+.*|"
                 r"(?:turned|switched)\s+(?:on|off)|"
                 r"(?:have|has|with)\s+.*|"
                 r"(?:replaced|swapped|substituted)\s+(?:with|by|for)\s+.*)$", body)
    if m and not re.search(r"\s(?:a|an)\s", f" {m.group(1)} "[1:]):
        return _make_value(m.group(1), m.group(2), ctx, text)
    if len(words) < 2 or not (clean_phrase(body) or "").split()[1:]:
        if words and (is_pronoun(words[0]) or _is_global_phrase(words[0])):
            return _make_value(words[0], " ".join(words[1:]), ctx, text)
        _object(body, "object to change", ctx)
        raise InstructionParseError(f"{ctx.original!r} says what to change but not into what; write e.g. "
                                    f"'make the cup red'. {HAND_FILL_HELP}")
    # pose: "make the dog sit", "make the man raise his hand"
    for i in range(1, len(words)):
        if words[i] in _SCAN_STOP:
            break
        if words[i - 1] in ("a", "an", "the", "some", "my", "his", "her", "its", "their"):
            continue
        if _is_pose_at(words, i):
            return _make_value(" ".join(words[:i]), " ".join(words[i:]), ctx, text)
    article = next((i for i, w in enumerate(words) if i > 0 and w in ("a", "an")), None)
    if article is not None:
        return _make_value(" ".join(words[:article]), " ".join(words[article:]), ctx, text)
    start = len(words) - 1
    while start > 1 and clean_phrase(" ".join(words[:start - 1])):
        prev = words[start - 1]
        if ((prev in COLOR_MODIFIERS and words[start] in COLORS) or prev == "and"
                or prev in ("at", "during", "under")
                or prev in ("very", "more", "less", "look", "appear", "seem", "much", "really", "so", "even", "all",
                            "completely", "totally", "fully", "bit", "little", "slightly")
                or ((prev in COLORS or prev in MATERIALS) and words[start] == "and")
                or (prev in COLORS | MATERIALS and words[start] in COLORS | MATERIALS)):
            start -= 1
        else:
            break
    obj_text, value = " ".join(words[:start]), " ".join(words[start:])
    value = re.sub(r"^(?:a little|a bit|bit|little|slightly)\s+", "", value)
    return _make_value(obj_text, value, ctx, text)


def _unknown_verb(text: str, ctx: _Ctx) -> Change | None:
    """A verb the rules do not know, on a named object ("melt the ice cream"): a low-confidence guess."""
    m = re.match(r"^([a-z]+)\s+((?:the|my|his|her|their|its|this|that|these|those)\s+.+)$", text)
    if not m or m.group(1) in ("is", "are", "was", "were", "do", "does", "did", "can", "could", "it"):
        return None
    verb = m.group(1)
    if verb in _TIME_WORDS or verb in STYLE_WORDS or verb in _CLAUSE_VERBS:
        return None
    obj = _object(m.group(2), "object to change", ctx, strip_descriptor=True)
    done = _participle(verb)
    return Change("attribute", obj, f"{done} {obj}", clause=text, base=obj, prefix=done, confidence="low", notes=[
        f"the verb {verb!r} is not one the rules know; taken as a change of {obj}'s look (o2 = {done} {obj}): check "
        "the fields"])


_CLAUSE_RULES: tuple[Rule, ...] = (
    _keep, _global_verbs, _background, _remove, _switch_state, _move, _from_to, _replace, _resize, _give_or_wear,
    _pose_rule, _color_verbs, _add, _change_into, _make_attribute, _unknown_verb,
)


def _parse_clause(text: str, ctx: _Ctx) -> Change | None:
    text = _indirect(text)
    for rule in _CLAUSE_RULES:
        change = rule(text, ctx)
        if change is not None:
            return change
    return None


# ------------------------------------------------------------------------------ combining
_PRONOUN_IN_CLAUSE = re.compile(r"\b(it|them|they|this one|that one|its)\b")


def _continue(piece: str, previous: Change) -> list[str]:
    """Ways to read a verbless piece as a continuation of the previous clause."""
    subject = previous.subject or ""
    verb = previous.clause.split(" ", 1)[0] if previous.clause else "make"
    if previous.kind in ("add", "remove"):
        return [f"{previous.kind} {piece}", f"make {subject} {piece}"]
    if re.match(r"^(?:the|a|an|my|his|her|their|its|this|that|these|those|some)\s", piece) and not re.match(
            r"^(?:a (?:bit|little|lot|tad|touch)|a little bit|some more)\b", piece):
        return [f"{verb} {piece}", f"make {subject} {piece}"]  # "... and the vase blue": a new object
    return [f"make {subject} {piece}", f"{verb} {piece}"]


def _resolve_pronouns(piece: str, previous: Change) -> str:
    subject = previous.subject
    if not subject:
        return piece
    return _PRONOUN_IN_CLAUSE.sub(lambda m: f"the {subject}'s" if m.group(1) == "its" else f"the {subject}", piece)


def _merge(first: Change, other: Change) -> bool:
    """Fold ``other`` into ``first`` when both change the same object; returns whether it did."""
    if other.kind in ("keep",):
        first.notes.extend(other.notes)
        return True
    same = other.o1 is not None and other.o1 in (first.o1, first.o2, first.base) or (
        other.base is not None and other.base in (first.o2, first.base) and other.kind != "add")
    if not same or first.kind == "remove" or other.kind in ("add", "remove", "replace", "background"):
        if same and first.kind == "add" and other.kind in ("attribute", "pose", "resize", "move", "state"):
            pass  # "add a cat and make it black": describe the added object
        else:
            return False
    if other.prefix:
        first.prefix = f"{other.prefix} {first.prefix}".strip()
    if other.suffix:
        first.suffix = f"{first.suffix} {other.suffix}".strip()
    if first.kind == "add":
        if other.kind in ("attribute", "pose", "state"):
            first.o2 = _decorate(first.o2 or "", other)
        if other.kind == "move" and first.position == "unchanged":
            first.position, first.reference = other.position, other.reference
        first.notes.extend(other.notes)
        first.confidence = _lower(first.confidence, other.confidence)
        return True
    if other.kind in ("attribute", "pose", "state"):
        first.o2 = _decorate(first.o2 or "", other)
        if first.kind in ("resize", "move"):
            first.kind = other.kind
    if other.size != "unchanged":
        if first.size not in ("unchanged", other.size):
            first.notes.append(f"asked both {first.size} and {other.size}; BPM checks the first ({first.size})")
            first.confidence = _lower(first.confidence, "medium")
        elif first.size == "unchanged":
            first.size = other.size
    if other.position != "unchanged":
        if first.position == "unchanged":
            first.position, first.reference = other.position, other.reference
        elif first.position != other.position:
            keep = first.position if first.position in ("left", "right") or other.position not in ("left", "right")\
                else other.position
            dropped = other.position if keep == first.position else first.position
            if keep != first.position:
                first.position, first.reference = other.position, other.reference
            first.notes.append(f"two directions asked ({keep} and {dropped}); BPM checks one, the horizontal one is "
                               f"kept ({keep})")
            first.confidence = _lower(first.confidence, "medium")
    first.notes.extend(other.notes)
    first.confidence = _lower(first.confidence, other.confidence)
    return True


def _decorate(o2: str, change: Change) -> str:
    """o2 with another change's attribute words ("ball" + "red" -> "red ball")."""
    if change.prefix and change.prefix not in o2.split():
        o2 = _with_attribute(change.prefix, o2)
    if change.suffix and change.suffix not in o2:
        o2 = f"{o2} {change.suffix}"
    return o2


_ORDER = {"high": 0, "medium": 1, "low": 2}


def _lower(a: str, b: str) -> str:
    return a if _ORDER[a] >= _ORDER[b] else b


def parse_with_rules(instruction: str) -> ParsedInstruction:
    """Parse ``instruction`` with the rules (see the module doc); raise :class:`InstructionParseError` with the
    reason and the hand-fill instructions when there is nothing to parse."""
    if not isinstance(instruction, str) or not instruction.strip():
        raise InstructionParseError("the instruction is empty: type what the edit should do, e.g. 'make the cup red'")
    original = " ".join(instruction.split())
    words = original.count(" ") + 1
    if words > MAX_INSTRUCTION_WORDS:
        raise InstructionParseError(f"the instruction has {words} words; the rule parser reads at most "
                                    f"{MAX_INSTRUCTION_WORDS} (an editing instruction is a sentence or two). Shorten "
                                    f"it, or: {HAND_FILL_HELP}")
    try:
        return _parse(original)
    except _PronounRefusal as exc:
        hint = _understood_without_object(original)
        raise _PronounRefusal(f"{exc}{hint}") from None


_PLACEHOLDER = "qqobject"


def _understood_without_object(original: str) -> str:
    """" What was understood apart from the object" for a pronoun refusal ("move it to the left")."""
    swapped = re.sub(r"\b(?:it|them|this|that|these|those)\b", f"the {_PLACEHOLDER}", original, flags=re.I)
    try:
        parsed = _parse(swapped)
    except InstructionParseError:
        return ""
    if _PLACEHOLDER not in f"{parsed.o1} {parsed.o2}":
        return ""
    return (f" Apart from the object, the rules read: size {parsed.size_state}, position {parsed.position_state}"
            + (f" of {parsed.reference}" if parsed.reference else "") + "; type those with the object's name.")


def _parse(original: str) -> ParsedInstruction:
    ctx = _Ctx(original)
    text = _normalize(original)
    if not text:
        raise InstructionParseError(f"{original!r} contains no words the parser can use. {HAND_FILL_HELP}")
    if re.match(r"^(?:could|can|might|may|would|will|is|are|does|do|was)\s+(?:it|this|that|they)\s+(?:be|is|are|"
                r"just|really|look)\b", text):
        raise InstructionParseError(
            f"{original!r} is a question about 'it', not an edit instruction; the parser cannot tell what it refers "
            f"to. {HAND_FILL_HELP}")
    if re.match(r"^(?:it|this|that|they)\s+(?:could|might|may|would|is|was|are|were)\s+(?:be|just|really|probably)\b",
                text) and not re.search(r"\b(?:nice|great|good|better|cool)\s+(?:if|to)\b", text):
        raise InstructionParseError(
            f"{original!r} refers to 'it' without naming an object; the parser has no view of the image. "
            f"{HAND_FILL_HELP}")
    changes: list[Change] = []
    for piece in _split_clauses(_indirect(text)):
        piece = _normalize(piece)
        if not piece:
            continue
        if changes:
            piece = _resolve_pronouns(piece, changes[-1])
        change = _try_clause(piece, ctx, changes[-1] if changes else None)
        if change is None:
            raise InstructionParseError(
                f"the rule parser does not recognise {piece!r} in {original!r}. Forms it knows: {_SUPPORTED_FORMS}. "
                f"Rephrase it, use the LLM parser, or: {HAND_FILL_HELP}")
        changes.append(change)
    return _combine(changes, ctx)


def _try_clause(piece: str, ctx: _Ctx, previous: Change | None) -> Change | None:
    first_word = piece.split(" ", 1)[0]
    if previous is not None and not _starts_with_verb(_indirect(piece)) and first_word not in ("i", "we", "there"):
        for candidate in _continue(piece, previous):
            try:
                change = _parse_clause(candidate, ctx)
            except InstructionParseError:
                continue
            if change is not None and change.confidence != "low":
                return change
    return _parse_clause(piece, ctx)


def _combine(changes: list[Change], ctx: _Ctx) -> ParsedInstruction:
    real = [c for c in changes if c.kind != "keep"]
    if not real:
        raise InstructionParseError(f"{ctx.original!r} asks to keep things as they are; there is no edit to score. "
                                    f"{HAND_FILL_HELP}")
    first = real[0]
    notes = [n for c in changes if c.kind == "keep" for n in c.notes]
    others: list[Change] = []
    for other in real[1:]:
        if not _merge(first, other):
            others.append(other)
    for obj in (first.o1, first.o2):
        framed = first.kind in ("move", "resize", "remove") and obj in ("picture", "photo", "photograph", "painting")
        if _is_global_phrase(obj) and not framed:  # "move the picture up": a picture on a wall
            raise _global_refusal(ctx.original, f"its object is {obj!r}")
    confidence = first.confidence
    if others:
        confidence = _lower(confidence, "medium")
        notes.append(f"compound edit: BPM scores the first change ({first.describe()}); the other "
                     f"{'change is' if len(others) == 1 else f'{len(others)} changes are'} listed, not scored")
    size = first.size
    if first.kind == "add" and size != "unchanged":
        size = "unchanged"
    return ParsedInstruction(
        o1=first.o1, o2=first.o2, size_state=size, position_state=first.position, reference=first.reference,
        edit_type=first.kind, parser="rules", instruction=ctx.original, confidence=confidence,
        notes=tuple(dict.fromkeys([*first.notes, *notes])), other_changes=tuple(o.describe() for o in others),
    )
