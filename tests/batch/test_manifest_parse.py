"""Manifest and CSV parse corrections ("parse" object / o1..reference columns) for BPM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from augclip_demo.batch.loaders import load_csv_pairs
from augclip_demo.batch.manifest import load_manifest, scan_manifest
from augclip_demo.errors import ManifestError
from augclip_demo.instructions import resolve_parse
from tests.support import draw_scene


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    (tmp_path / "img").mkdir()
    for name in ("src", "a"):
        draw_scene().save(tmp_path / "img" / f"{name}.png")
    return tmp_path


def item(item_id: str, **extra) -> dict:
    return {"id": item_id, "source": "img/src.png", "target_text": "a ball", "edits": ["img/a.png"], **extra}


def test_parse_corrections_are_read_kept_and_applied(root):
    path = root / "m.jsonl"
    lines = [item("fix", instruction="make the ball red", parse={"o2": "red ball on grass", "size_state": "Larger"}),
             item("hand", instruction="make it more cinematic", parse={"o1": "sky", "o2": "dramatic sky",
                                                                      "reference": None}),
             item("none", instruction="make the ball red")]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    fix, hand, none = load_manifest(path)
    assert fix.parse == {"o2": "red ball on grass", "size_state": "larger"} and none.parse is None
    assert hand.parse == {"o1": "sky", "o2": "dramatic sky", "reference": "None"}
    assert fix.to_dict()["parse"] == fix.parse and "parse" not in none.to_dict()
    parsed = resolve_parse(fix.instruction, fix.parse)
    assert (parsed.o1, parsed.o2, parsed.size_state, parsed.confidence) == ("ball", "red ball on grass", "larger",
                                                                            "given")
    manual = resolve_parse(hand.instruction, hand.parse)  # the rules refuse it; the corrections stand in
    assert (manual.o1, manual.o2, manual.reference, manual.parser) == ("sky", "dramatic sky", None, "manual")


def test_bad_parse_corrections_are_all_reported(root):
    path = root / "bad.jsonl"
    lines = [item("a", parse="o1=cup"), item("b", parse={"o1": 3, "size_state": "huge", "colour": "red"}),
             item("c", parse={"position_state": None})]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    problems = "\n".join(scan_manifest(path).problems)
    assert "parse must be an object" in problems
    assert "parse.o1 must be a string or null, got int" in problems
    assert "parse.size_state must be one of larger, smaller, unchanged, got 'huge'" in problems
    assert "parse.colour is not a parse field" in problems
    assert "parse.position_state must be one of" in problems
    with pytest.raises(ManifestError):
        load_manifest(path)


def test_csv_parse_columns_become_the_parse_object(root):
    csv_path = root / "pairs.csv"
    csv_path.write_text("id,source,edit,target_text,instruction,o2,position_state\n"
                        "x,img/src.png,img/a.png,a ball,move the ball,ball,left\n"
                        "y,img/src.png,img/a.png,a ball,make the ball red,,\n")
    x, y = load_manifest(load_csv_pairs(csv_path).manifest)
    assert x.parse == {"o2": "ball", "position_state": "left"} and y.parse is None
    assert resolve_parse(x.instruction, {**x.parse, "o1": "ball"}).position_state == "left"
