"""The rule parser's worst cases (the issue's families and more) stay fast at 10 KB.

Each family repeats a pattern that made one of the parser's regular expressions backtrack (a trailing
run of suffix words, degree words before a value, clause joints, long single words, punctuation
runs, a run of degree words before a placement's tail), in the forms :func:`forms` makes. The bound
is the issue's: under 50 ms per parse, counted in the CPU time of the parsing thread, so the tests
running beside it on the same cores do not count. ``python benchmarks/parser_bench.py --families`` prints
every case's CPU and wall-clock figures (docs/security.md gives the slowest).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import pytest

from augclip_demo.errors import InstructionParseError
from augclip_demo.instructions.rules import MAX_INSTRUCTION_WORDS, parse_with_rules

SIZE = 10 * 1024
BOUND_S = 0.050

FAMILIES = {
    "a bit (the issue's)": ("", "a bit ", "x"),
    "very before a value": ("make the cat very ", "very ", "red"),
    "and-joined clauses": ("", "add a cat and ", ""),
    "comma clauses": ("", "add a cat, ", ""),
    "please suffix run": ("make the cup red ", "please ", ""),
    "of chains": ("change the color of ", "the cup of ", "x"),
    "replace with chains": ("replace the ", "cat with the ", "dog"),
    "from chains": ("change ", "from the cat ", "to red"),
    "into chains": ("", "turn the cat into ", "a dog"),
    "between and": ("put a vase between ", "the cup and ", "the plate"),
    "hyphen words": ("make the ", "a-", "cup red"),
    "quotes": ("make the '", "cup '", "red"),
    "bigger chains": ("make the dog ", "much ", "bigger than the cat"),
    "bigger chains, depth word last": ("make the dog ", "much ", "bigger than the cat closer"),
    "slightly left": ("move the cup ", "slightly ", "left"),
    "what if": ("what if the cat ", "was ", "red"),
    "pronouns": ("make ", "it and ", "red"),
}


def family(head: str, unit: str, tail: str, *, size: int = SIZE, max_words: int | None = None) -> str:
    """``head + unit * n + tail`` of about ``size`` characters; with ``max_words``, cut to that many words
    and every word of the repeated part stretched (its letters repeated) so the text still fills ``size``."""
    text = head + unit * max(1, (size - len(head) - len(tail)) // max(1, len(unit))) + tail
    if max_words is None:
        return text[:size]
    words = text.split()[:max_words - len(tail.split())] + tail.split()
    stretch = max(1, size // max(1, len(" ".join(words))))
    return " ".join(w if i < len(head.split()) else w * stretch for i, w in enumerate(words))[:size]


def forms(name: str) -> dict[str, str]:
    """The family's texts: 10 KB as written (over the word cap, refused at once), cut to the word cap with its
    words stretched to 10 KB, cut to the word cap with short words (the most rule work), and the same with its
    tail kept (so a pattern anchored at the end meets the tail after the whole run)."""
    head, unit, tail = FAMILIES[name]
    raw = family(head, unit, tail)
    words = raw.split()
    return {"raw": raw, "stretched": family(head, unit, tail, max_words=MAX_INSTRUCTION_WORDS),
            "dense": " ".join(words[:MAX_INSTRUCTION_WORDS]),
            "dense, tail kept": " ".join(words[:MAX_INSTRUCTION_WORDS - len(tail.split())] + tail.split())}


def fastest(text: str, clock: Callable[[], float] = time.thread_time, runs: int = 5) -> float:
    """The fastest of ``runs`` parses (or refusals) of ``text`` in ``clock``'s seconds."""
    best = float("inf")
    for _ in range(runs):
        start = clock()
        with contextlib.suppress(InstructionParseError):
            parse_with_rules(text)
        best = min(best, clock() - start)
    return best


@pytest.mark.parametrize("name", list(FAMILIES))
def test_worst_case_families_parse_within_the_bound(name):
    texts = forms(name)
    assert len(texts["raw"]) > 9 * 1024 and len(texts["stretched"]) > 5 * 1024, {k: len(v) for k, v in texts.items()}
    assert all(len(texts[form].split()) <= MAX_INSTRUCTION_WORDS for form in ("stretched", "dense", "dense, tail kept"))
    assert texts["dense, tail kept"].endswith(FAMILIES[name][2].strip())
    for form, text in texts.items():
        seconds = fastest(text)
        assert seconds < BOUND_S, f"{name} ({form}): {len(text)} characters parsed in {seconds * 1000:.1f} ms"


def test_over_the_word_cap_is_refused_with_its_message():
    with pytest.raises(InstructionParseError, match=rf"has 3401 words; the rule parser reads at most "
                                                    rf"{MAX_INSTRUCTION_WORDS}"):
        parse_with_rules("a bit " * 1700 + "x")


def test_a_long_but_ordinary_instruction_still_parses():
    parsed = parse_with_rules("please make the ceramic coffee cup on the wooden table bright red, thanks")
    assert parsed.o1 == "ceramic coffee cup" or "cup" in (parsed.o1 or ""), parsed
