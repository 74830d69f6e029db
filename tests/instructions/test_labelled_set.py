"""The rule parser against our labelled set of instructions written the way people type them.

tests/data/instructions_labelled.jsonl: 200 instructions in our own words, one category each (add,
remove, replace, from A to B, attributes, resize, relative and absolute positions, depth, poses,
give / wear, compound edits, plurals and numbers, polite and indirect forms, background, on/off
states, and refusals). The goals (issue 18): >= 95 % objects + size right, >= 90 % positions
right, every refusal refused. The per-category table is printed (pytest -s) and kept in
docs/instructions.md; tests/data/instructions_heldout.jsonl was written after the rules were
finished and is reported, not tuned on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from augclip_demo.instructions import POSITION_STATES, SIZE_STATES, parse_with_rules
from augclip_demo.instructions.evaluation import evaluate, load_labelled

DATA = Path(__file__).resolve().parents[1] / "data"
CATEGORIES = {"add", "remove", "replace", "from_to", "attribute", "resize", "position_relative",
              "position_absolute", "depth", "pose", "give_wear", "compound", "plural_number", "polite_indirect",
              "background", "state", "refusal_global", "refusal_pronoun", "refusal_question", "refusal_other"}


@pytest.fixture(scope="module")
def rows():
    return load_labelled(DATA / "instructions_labelled.jsonl")


def test_the_set_is_large_varied_and_well_formed(rows):
    assert len(rows) >= 150
    assert {row["category"] for row in rows} == CATEGORIES
    assert len({row["instruction"].lower() for row in rows}) == len(rows), "duplicate instructions"
    for row in rows:
        if row.get("refuse"):
            assert row["category"].startswith("refusal")
            continue
        assert row["size_state"] in SIZE_STATES and row["position_state"] in POSITION_STATES
        assert row["o1"] or row["o2"]
    parsed = [row for row in rows if not row.get("refuse")]
    assert {row["size_state"] for row in parsed} == set(SIZE_STATES)
    assert {row["position_state"] for row in parsed} == set(POSITION_STATES)
    assert sum(1 for row in rows if row.get("refuse")) >= 15


def test_rule_parser_meets_the_goals_on_the_labelled_set(rows):
    result = evaluate(rows, parse_with_rules)
    print("\n" + result.table())
    rates = result.rates()
    assert rates["objects_size"] >= 0.95, "\n".join(result.mistakes)
    assert rates["position"] >= 0.90, "\n".join(result.mistakes)
    assert rates["refused"] == 1.0, "\n".join(result.mistakes)


def test_heldout_set_is_reported_not_tuned(capsys):
    """The held-out set is only measured and printed (its numbers are in docs/instructions.md)."""
    path = DATA / "instructions_heldout.jsonl"
    result = evaluate(load_labelled(path), parse_with_rules)
    print("\nheld-out:\n" + result.table())
    assert result.overall.total >= 30
