"""``bpm --parse-only`` and the parse-correction flags (no region models are loaded)."""

from __future__ import annotations

import json

from augclip_demo.cli import main

BASE = ["bpm", "--source", "unused.png", "--edited", "unused.png"]


def test_parse_only_prints_the_parse_with_its_notes(capsys):
    assert main([*BASE, "--instruction", "move the lamp to the top-right corner and remove the rug",
                 "--parse-only"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rules parse (medium confidence): o1=lamp -> o2=lamp, size unchanged, position right")
    assert "horizontal one (right) is kept" in out and "also asked, not scored by BPM: remove rug" in out


def test_flags_correct_single_fields_of_the_parse(capsys):
    assert main([*BASE, "--instruction", "make the cup red", "--o2", "red mug", "--reference", "saucer",
                 "--position-state", "near", "--parse-only", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["o1"], data["o2"], data["position_state"], data["reference"]) == ("cup", "red mug", "near", "saucer")
    assert data["confidence"] == "given" and data["parser"] == "rules"
    assert data["notes"][-1] == "corrected by hand: o2, position_state, reference"


def test_a_refused_instruction_says_how_to_give_the_fields_and_the_flags_stand_in(capsys):
    assert main([*BASE, "--instruction", "make it more cinematic", "--parse-only"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "global or style edit" in err and "--o1 --o2" in err
    assert len(err.splitlines()) == 1
    assert main([*BASE, "--instruction", "make it more cinematic", "--o1", "sky", "--o2", "stormy sky",
                 "--parse-only", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["o1"], data["o2"], data["parser"]) == ("sky", "stormy sky", "manual")
