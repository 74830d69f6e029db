"""Confidence, notes, compound edits and hand corrections of a parse."""

from __future__ import annotations

import pytest

from augclip_demo.errors import InstructionParseError
from augclip_demo.instructions import (
    ParsedInstruction,
    apply_corrections,
    parse_with_rules,
    resolve_parse,
    try_parse,
)


def test_a_textbook_instruction_is_parsed_with_high_confidence():
    parsed = parse_with_rules("replace the kettle with a teapot")
    assert parsed.confidence == "high" and parsed.notes == () and parsed.other_changes == ()


def test_changes_to_one_object_merge_into_one_parse():
    parsed = parse_with_rules("make the ball smaller and red")
    assert (parsed.o1, parsed.o2, parsed.size_state) == ("ball", "red ball", "smaller")
    assert parsed.other_changes == ()
    parsed = parse_with_rules("could you make the tulip pink and a bit bigger?")  # "a bit" is no new object
    assert (parsed.o1, parsed.o2, parsed.size_state, parsed.other_changes) == ("tulip", "pink tulip", "larger", ())


def test_a_compound_edit_scores_the_first_change_and_reports_the_rest():
    parsed = parse_with_rules("remove the lamp, then add a plant and make the rug blue")
    assert (parsed.o1, parsed.o2) == ("lamp", None)
    assert parsed.other_changes == ("add plant", "rug -> blue rug")
    assert parsed.confidence == "medium"
    assert any("BPM scores the first change" in note for note in parsed.notes)
    assert "also asked, not scored by BPM: add plant" in parsed.explain()


def test_approximated_states_lower_the_confidence_and_say_why():
    corner = parse_with_rules("move the clock to the bottom-left corner")
    assert corner.position_state == "left" and corner.confidence == "medium"
    assert any("horizontal one (left) is kept" in note for note in corner.notes)
    depth = parse_with_rules("bring the horse closer to the camera")
    assert (depth.size_state, depth.position_state, depth.confidence) == ("larger", "unchanged", "medium")
    guess = parse_with_rules("melt the snowman")
    assert guess.confidence == "low" and "not one the rules know" in guess.notes[0]


def test_counts_are_dropped_from_the_object_with_a_note():
    parsed = parse_with_rules("add three lanterns to the porch")
    assert parsed.o2 == "lanterns"
    assert any("count (three)" in note for note in parsed.notes)


def test_corrections_change_only_the_fields_given():
    parsed = parse_with_rules("make the cup red")
    fixed = apply_corrections(parsed, {"o2": "red mug", "size_state": None, "position_state": "unchanged"})
    assert (fixed.o1, fixed.o2, fixed.size_state) == ("cup", "red mug", "unchanged")
    assert fixed.confidence == "given" and fixed.parser == "rules"
    assert fixed.notes[-1] == "corrected by hand: o2"
    assert apply_corrections(parsed, {"o1": "cup", "o2": "Red Cup"}) is parsed  # nothing really changed
    assert apply_corrections(parsed, {"o2": ""}).o2 is None  # an empty field means no object


def test_corrections_are_validated():
    parsed = parse_with_rules("make the cup red")
    with pytest.raises(InstructionParseError, match="unknown parse field"):
        apply_corrections(parsed, {"colour": "red"})
    with pytest.raises(InstructionParseError, match="position state must be one of"):
        apply_corrections(parsed, {"position_state": "behind"})
    with pytest.raises(InstructionParseError, match="must be text"):
        apply_corrections(parsed, {"o1": 3})


def test_resolve_parse_lets_corrections_stand_in_for_a_refused_instruction():
    with pytest.raises(InstructionParseError, match="global or style edit"):
        resolve_parse("make it more cinematic")
    parsed = resolve_parse("make it more cinematic", {"o1": "sky", "o2": "dramatic sky"})
    assert (parsed.o1, parsed.o2, parsed.parser, parsed.confidence) == ("sky", "dramatic sky", "manual", "given")
    assert resolve_parse("move the cup left", {"reference": "plate"}).reference == "plate"
    with pytest.raises(InstructionParseError, match="needs an editing instruction or the objects"):
        resolve_parse(None, {"size_state": "larger"})


def test_parse_round_trips_through_its_dict():
    parsed = parse_with_rules("move the chair to the right and remove the vase")
    again = ParsedInstruction.from_dict(parsed.to_dict())
    assert again == parsed
    outcome = try_parse("move the chair to the right and remove the vase")
    assert outcome.to_dict()["parsed"]["other_changes"] == ["remove vase"] and not outcome.unparsed


_PLACEMENT_WORDS = ["much", "a", "lot", "little", "bit", "slightly", "even", "way", "further", "farther", "more", "all", "the", "to", "towards", "toward", "on", "at", "in", "into", "onto", "over", "up", "down", "very", "far", "left", "right", "top", "upper", "bottom", "lower", "hand", "side", "corner", "edge", "part", "half", "area", "end", "of", "image", "picture", "room", "instead", "closer", "nearer", "camera", "viewer", "us", "front", "foreground", "forward", "forwards", "away", "from", "back", "backwards", "distance", "background", "distant", "middle", "center", "centre", "cat", "dog", "x", "-", "left-hand", "top-left", "upwards"]


def test_end_anchored_placement_patterns_find_what_their_full_pattern_finds():
    """The tail check before each position pattern only skips texts the full pattern cannot match: on texts built
    from the patterns' own words, the gated search gives the same span and groups as the full pattern alone."""
    import random

    from augclip_demo.instructions import rules

    patterns = (rules._FRAME_DIRECTION, rules._DEPTH_NEAR, rules._DEPTH_FAR)
    rng = random.Random(7)
    found = dict.fromkeys(patterns, 0)
    for _ in range(20000):
        joint = rng.choice(("  ", " ", "-"))
        text = rng.choice(("", " ")) + joint.join(rng.choice(_PLACEMENT_WORDS) for _ in range(rng.randint(0, 8)))
        for pattern in patterns:
            gated, full = pattern.search(text), pattern.full.search(text)
            assert (gated and (gated.span(), gated.groupdict())) == (full and (full.span(), full.groupdict())), text
            found[pattern] += full is not None
    assert min(found.values()) > 100, found  # each pattern matched often: the comparison saw both outcomes


def test_clean_phrase_collapses_every_kind_of_whitespace():
    from augclip_demo.instructions.parsed import clean_phrase

    assert clean_phrase("\u00a0The\u2003red \t\ncup.\u00a0") == "red cup"
    assert clean_phrase(" \u3000 ") is None
