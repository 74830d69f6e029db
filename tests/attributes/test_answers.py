"""Parsing model answers into attribute lists, cleaning them, and merging samples."""

from __future__ import annotations

import pytest

from augclip_demo.attributes.answers import (
    clean_attributes,
    merge_samples,
    normalize_key,
    parse_attribute_list,
)

EXPECTED = ["A dog is large", "A dog is brown", "A grass is green"]


@pytest.mark.parametrize("answer", [
    # the Python list the prompt asks for
    "['A dog is large', 'A dog is brown', 'A grass is green']",
    # a JSON array
    '["A dog is large", "A dog is brown", "A grass is green"]',
    # the curly quotes of the paper's own transcript
    "[\u201cA dog is large\u201d, \u201cA dog is brown\u201d, \u201cA grass is green\u201d]",
    # a code fence with a language tag, with prose around it
    "Sure! Here is the list:\n```python\n['A dog is large', 'A dog is brown', 'A grass is green']\n```\nHope it helps.",
    # a fence holding plain lines
    "```\nA dog is large\nA dog is brown\nA grass is green\n```",
    # numbered lines with stray prose
    "Here are the attributes:\n1. A dog is large\n2) A dog is brown\n3. A grass is green\nLet me know if you need more.",
    # bulleted lines with markdown bold and trailing periods
    "- **A dog is large**.\n* A dog is brown;\n\u2022 A grass is green",
    # a JSON object wrapping the array
    '{"attributes": ["A dog is large", "A dog is brown", "A grass is green"]}',
    # a placeholder in prose before the real list
    'Format "X is [ATTRIBUTE]": ["A dog is large", "A dog is brown", "A grass is green"]',
    # unquoted items in brackets
    "[A dog is large, A dog is brown, A grass is green]",
])
def test_every_answer_shape_gives_the_same_list(answer):
    assert clean_attributes(parse_attribute_list(answer)) == EXPECTED


def test_unescaped_apostrophe_in_single_quotes():
    items = clean_attributes(parse_attribute_list("['He's sitting on a ledge', 'He has a gray cap']"))
    assert items == ["He's sitting on a ledge", "He has a gray cap"]


@pytest.mark.parametrize("answer", ["", "   ", "I cannot describe this image.",
                                    "The image shows a dog. It is brown and large.", "see reference [1]"])
def test_answers_without_a_list_give_nothing(answer):
    assert clean_attributes(parse_attribute_list(answer)) == []


def test_nested_lists_are_flattened():
    assert parse_attribute_list('[["a red car", "a road"], ["blue sky"]]') == ["a red car", "a road", "blue sky"]


def test_cleaning_dedupes_case_and_punctuation_insensitively_and_caps():
    items = ["A red car", "a red car.", "A RED CAR!", "  ", "'a road'", "a road", "", "x" * 300, "sky"]
    assert clean_attributes(items) == ["A red car", "a road", "sky"]  # first spelling wins, overlong dropped
    assert clean_attributes([f"item {i}" for i in range(50)], max_items=5) == [f"item {i}" for i in range(5)]
    assert normalize_key("A dog's  tail!") == normalize_key("a dog s tail")


def test_merge_orders_by_frequency_and_records_counts():
    samples = [["a zebra", "black stripes", "a horse shape"],
               ["Black stripes.", "a zebra", "a savanna"],
               ["a zebra", "white stripes", "black stripes"]]
    merged = merge_samples(samples)
    assert merged.items == ["a zebra", "black stripes", "a horse shape", "a savanna", "white stripes"]
    assert merged.counts == [3, 3, 1, 1, 1]
    capped = merge_samples(samples, max_items=2)
    assert capped.items == ["a zebra", "black stripes"]  # the least frequent go first


def test_a_sample_votes_once_per_attribute():
    merged = merge_samples([["a cat", "A cat"], ["a dog"]])
    assert merged.items == ["a cat", "a dog"] and merged.counts == [1, 1]
