"""HATIE's edit type from the instruction, the parse, or the user's choice."""

from __future__ import annotations

import pytest

from augclip_demo.errors import InstructionParseError
from augclip_demo.instructions import ParsedInstruction, check_edit_type, classify_edit_type, try_parse


@pytest.mark.parametrize(("instruction", "expected"), [
    ("put a lamp next to the sofa", "add"),
    ("take the bicycle out of the picture", "remove"),
    ("replace the horse with a zebra", "replace"),
    ("make the clock larger", "resize"),
    ("shrink the umbrella", "resize"),
    ("paint the bench blue", "attribute"),
    ("change the background to a desert", "background"),
    ("render the scene as a pencil sketch", "style"),
    ("turn the picture into an oil painting", "style"),
])
def test_types_from_instructions(instruction: str, expected: str) -> None:
    got = classify_edit_type(instruction, try_parse(instruction).parsed)
    assert got.edit_type == expected, got


def test_a_move_is_not_a_hatie_type() -> None:
    got = classify_edit_type("move the cup to the left", try_parse("move the cup to the left").parsed)
    assert got.edit_type is None and "does not score" in got.reason


def test_given_type_wins_and_is_checked() -> None:
    parsed = try_parse("replace the horse with a zebra").parsed
    got = classify_edit_type("replace the horse with a zebra", parsed, given="Object Attribute Change")
    assert (got.edit_type, got.confidence, got.source) == ("attribute", "given", "given")
    assert check_edit_type("object_removal") == "remove"
    with pytest.raises(InstructionParseError, match="unknown edit_type"):
        check_edit_type("rotate")


def test_hand_filled_parse_types_from_fields() -> None:
    assert classify_edit_type(None, ParsedInstruction.from_fields(None, "kite")).edit_type == "add"
    assert classify_edit_type(None, ParsedInstruction.from_fields("kite", None)).edit_type == "remove"
    assert classify_edit_type(None, ParsedInstruction.from_fields("cup", "red cup")).edit_type == "attribute"
    assert classify_edit_type(None, ParsedInstruction.from_fields("cup", "bowl")).edit_type == "replace"
    assert classify_edit_type(None, ParsedInstruction.from_fields("cup", "cup", "larger")).edit_type == "resize"


def test_nothing_to_go_on() -> None:
    got = classify_edit_type(None, None)
    assert got.edit_type is None and "edit_type" in got.reason
