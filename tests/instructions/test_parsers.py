"""BPM instruction parsing: the rule parser's table of textbook forms, refusals, hand-filled parses.

The labelled set of instructions written the way people type them is in test_labelled_set.py; the
LLM parser in test_llm_parser.py."""

from __future__ import annotations

import re

import pytest

from augclip_demo.bpm import ParsedInstruction, parse_instruction
from augclip_demo.errors import InstructionParseError
from augclip_demo.instructions import HAND_FILL_HELP, try_parse
from augclip_demo.instructions.parsed import clean_phrase

N = None
# instruction -> (o1, o2, size_state, position_state, reference)
PARSES: list[tuple[str, tuple]] = [
    # add / put / place X [REL Y]
    ("Add a bear.", (N, "bear", "unchanged", "unchanged", N)),
    ("add a hat on the dog", (N, "hat", "unchanged", "up", "dog")),
    ("Put a bird on top of the tower", (N, "bird", "unchanged", "up", "tower")),
    ("put a car on the screen of the laptop", (N, "car", "unchanged", "inside", "screen of laptop")),
    ("place a vase on the table", (N, "vase", "unchanged", "up", "table")),  # a table is seen from the side
    ("Add a tree on the left", (N, "tree", "unchanged", "left", N)),
    ("add a boat in the lake", (N, "boat", "unchanged", "inside", "lake")),
    ("add a dog next to the sofa", (N, "dog", "unchanged", "near", "sofa")),
    ("add a lamp to the left of the bed", (N, "lamp", "unchanged", "left", "bed")),
    ("add a cat to the right of the chair", (N, "cat", "unchanged", "right", "chair")),
    ("add a ball under the chair", (N, "ball", "unchanged", "down", "chair")),
    ("insert a cat into the box", (N, "cat", "unchanged", "inside", "box")),
    ("draw a moon above the house", (N, "moon", "unchanged", "up", "house")),
    ("add a bird at the top of the image", (N, "bird", "unchanged", "up", N)),
    ("add some flowers beside the fence", (N, "flowers", "unchanged", "near", "fence")),
    ("give the man a hat", ("man", "man with hat", "unchanged", "unchanged", N)),  # the man changes (o1 = o2)
    ("make the dog wear sunglasses", ("dog", "dog wearing sunglasses", "unchanged", "unchanged", N)),
    ("paint a bird on the wall", (N, "bird", "unchanged", "inside", "wall")),
    # remove
    ("Remove the bike.", ("bike", N, "unchanged", "unchanged", N)),
    ("delete the car from the street", ("car", N, "unchanged", "unchanged", N)),
    ("get rid of the clouds", ("clouds", N, "unchanged", "unchanged", N)),
    ("take away the glasses", ("glasses", N, "unchanged", "unchanged", N)),
    ("Please erase the text in the image", ("text", N, "unchanged", "unchanged", N)),
    # replace
    ("Replace the bike with a bear", ("bike", "bear", "unchanged", "unchanged", N)),
    ("swap the cat for a dog", ("cat", "dog", "unchanged", "unchanged", N)),
    ("substitute a dog for the cat", ("cat", "dog", "unchanged", "unchanged", N)),
    ("a dog instead of the cat", ("cat", "dog", "unchanged", "unchanged", N)),
    ("what if the cat was a dog", ("cat", "dog", "unchanged", "unchanged", N)),
    # change / turn / make X into Y
    ("change the cat into a dog", ("cat", "dog", "unchanged", "unchanged", N)),
    ("turn the man into a statue", ("man", "statue", "unchanged", "unchanged", N)),
    ("make the man a woman", ("man", "woman", "unchanged", "unchanged", N)),
    ("make the dog look like a wolf", ("dog", "wolf", "unchanged", "unchanged", N)),
    ("Make the glass of water a cup of cola", ("glass of water", "cup of cola", "unchanged", "unchanged", N)),
    # make X COLOUR / MATERIAL (and other attributes)
    ("Make the hydrant blue", ("hydrant", "blue hydrant", "unchanged", "unchanged", N)),
    ("make the red car blue", ("red car", "blue car", "unchanged", "unchanged", N)),
    ("make the car black and white", ("car", "black and white car", "unchanged", "unchanged", N)),
    ("make the table wooden", ("table", "wooden table", "unchanged", "unchanged", N)),
    ("make the chair out of gold", ("chair", "gold chair", "unchanged", "unchanged", N)),
    ("make the plate empty", ("plate", "empty plate", "unchanged", "unchanged", N)),
    ("make the sky look cloudy", ("sky", "cloudy sky", "unchanged", "unchanged", N)),
    ("change the color of the car to red", ("car", "red car", "unchanged", "unchanged", N)),
    ("change the car's colour to light blue", ("car", "light blue car", "unchanged", "unchanged", N)),
    ("paint the wall blue", ("wall", "blue wall", "unchanged", "unchanged", N)),
    ("turn the leaves orange", ("leaves", "orange leaves", "unchanged", "unchanged", N)),
    ("change the cup to red", ("cup", "red cup", "unchanged", "unchanged", N)),
    ("the sky should be pink", ("sky", "pink sky", "unchanged", "unchanged", N)),
    # bigger / smaller
    ("Make the vase smaller", ("vase", "vase", "smaller", "unchanged", N)),
    ("make the dog a little bigger", ("dog", "dog", "larger", "unchanged", N)),
    ("enlarge the moon", ("moon", "moon", "larger", "unchanged", N)),
    ("shrink the car", ("car", "car", "smaller", "unchanged", N)),
    ("give the bear bigger claws", ("bear claws", "bear claws", "larger", "unchanged", N)),
    # move
    ("move the cup to the left", ("cup", "cup", "unchanged", "left", N)),
    ("move the cup slightly to the right", ("cup", "cup", "unchanged", "right", N)),
    ("move the cup up", ("cup", "cup", "unchanged", "up", N)),
    ("shift the lamp down", ("lamp", "lamp", "unchanged", "down", N)),
    ("move the cup to the left of the plate", ("cup", "cup", "unchanged", "left", "plate")),
    ("shift the dog next to the sofa", ("dog", "dog", "unchanged", "near", "sofa")),
    ("put the cup on the table", ("cup", "cup", "unchanged", "up", "table")),
    # background
    ("change the background to a beach", ("background", "beach", "unchanged", "unchanged", N)),
    ("make the background blue", ("background", "blue background", "unchanged", "unchanged", N)),
    ("replace the background with snowy mountains", ("background", "snowy mountains", "unchanged", "unchanged", N)),
    # switching state
    ("turn off the computer", ("computer", "computer turned off", "unchanged", "unchanged", N)),
    ("open the door", ("door", "open door", "unchanged", "unchanged", N)),
]

REFUSALS: list[tuple[str, str]] = [
    ("", "empty"),
    ("   ", "empty"),
    ("add", "names no object to add"),
    ("remove the", "names no object to remove"),
    ("replace with a dog", "names no object to replace"),
    ("replace the cat", "does not say what to put instead"),
    ("make it better", "'it', which does not name an object"),
    ("move it to the left", "'it', which does not name an object"),
    ("give it a hat", "refers to 'it', which does not name an object"),
    ("make the image brighter", "is a global or style edit"),
    ("make it more cinematic", "is a global or style edit"),
    ("Could it be a muffin?", "is a question"),
    ("It might be just a shadow.", "refers to 'it' without naming an object"),
    ("move the cup", "does not say where to move"),
    ("improve the lighting", "is a global or style edit"),
    ("frobnicate", "does not recognise"),
    ("make the cup", "not into what"),
]


def _fields(parsed: ParsedInstruction) -> tuple:
    return (parsed.o1, parsed.o2, parsed.size_state, parsed.position_state, parsed.reference)


def test_the_table_is_large_and_covers_every_state():
    assert len(PARSES) + len(REFUSALS) >= 40
    assert {p[1][2] for p in PARSES} == {"larger", "smaller", "unchanged"}
    assert {p[1][3] for p in PARSES} == {"left", "right", "up", "down", "inside", "near", "unchanged"}


@pytest.mark.parametrize("instruction, expected", PARSES, ids=[p[0] for p in PARSES])
def test_rule_parser(instruction, expected):
    parsed = parse_instruction(instruction)
    assert _fields(parsed) == expected
    assert parsed.parser == "rules" and parsed.instruction == instruction.strip()
    assert parsed.is_add == (expected[0] is None) and parsed.is_remove == (expected[1] is None)


@pytest.mark.parametrize("instruction, message", REFUSALS, ids=[r[0] or "<empty>" for r in REFUSALS])
def test_rule_parser_refuses_with_the_reason(instruction, message):
    with pytest.raises(InstructionParseError, match=re.escape(message)):
        parse_instruction(instruction)


def test_unknown_parser_is_refused():
    with pytest.raises(InstructionParseError, match="unknown instruction parser 'magic'"):
        parse_instruction("make the cup red", parser="magic")


@pytest.mark.parametrize("raw, clean", [
    ("The red cup.", "red cup"), ("  A  Dog ", "dog"), ("screen of the laptop", "screen of laptop"),
    ("None", None), ("", None), ("her hair", "hair"), ("some flowers", "flowers"), ("an apple", "apple"),
])
def test_phrases_are_lower_case_without_articles(raw, clean):
    assert clean_phrase(raw) == clean


def test_hand_filled_parse_for_description_style_targets():
    parsed = ParsedInstruction.from_fields("The Red Cup", "none", "Unchanged", "UNCHANGED", "")
    assert _fields(parsed) == ("red cup", None, "unchanged", "unchanged", None)
    assert parsed.parser == "manual" and parsed.is_remove
    assert ParsedInstruction.from_dict(parsed.to_dict()) == parsed
    with pytest.raises(InstructionParseError, match="names no object"):
        ParsedInstruction.from_fields("None", "")
    with pytest.raises(InstructionParseError, match="size state must be one of"):
        ParsedInstruction.from_fields("cup", "mug", size_state="huge")
    with pytest.raises(InstructionParseError, match="position state must be one of"):
        ParsedInstruction.from_fields("cup", "mug", position_state="behind")
    with pytest.raises(InstructionParseError, match="o1 is 'it'"):
        ParsedInstruction.from_fields("it", "mug")




@pytest.mark.parametrize("instruction", ["make it more cinematic", "increase the contrast", "make it red",
                                         "frobnicate", "keep everything as it is"])
def test_every_refusal_says_how_to_give_the_fields_by_hand(instruction):
    outcome = try_parse(instruction)
    assert outcome.unparsed and outcome.parsed is None
    assert HAND_FILL_HELP in outcome.refusal
    assert "--o1" in outcome.refusal and "BPM tab" in outcome.refusal and '"parse"' in outcome.refusal


def test_a_pronoun_refusal_reports_what_was_understood():
    outcome = try_parse("move it from the left to the right")
    assert outcome.unparsed
    assert "Apart from the object, the rules read: size unchanged, position right" in outcome.refusal
