"""Manifest parsing and validation: every error kind reported at once, path escapes refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from augclip_demo.batch.manifest import (
    iter_manifest,
    load_manifest,
    resolve_inside,
    scan_manifest,
    validate_manifest,
)
from augclip_demo.cli import main
from augclip_demo.errors import InputError, ManifestError
from tests.support import draw_scene


def write_lines(path: Path, lines: list) -> Path:
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    (tmp_path / "img").mkdir()
    for name in ("src", "a", "b", "c"):
        draw_scene().save(tmp_path / "img" / f"{name}.png")
    (tmp_path / "attrs.json").write_text(json.dumps({"source_attributes": ["a ball"], "target_attributes": ["grass"]}))
    return tmp_path


def good(item_id: str = "x", **extra) -> dict:
    return {"id": item_id, "source": "img/src.png", "target_text": "a ball on grass",
            "edits": [{"path": "img/a.png", "name": "m1"}, "img/b.png"], **extra}


def test_valid_items_parse_with_defaults(root):
    path = write_lines(root / "m.jsonl", [
        good("one", attributes={"source": ["a red ball"], "target": ["green grass"]},
             human={"preferred": 1, "scores": [2, None]}, source_text=" a ball ", dataset="toy", meta={"k": 1}),
        "",
        good("two", attributes="attrs.json", instruction="add grass"),
        {"id": 3, "source": "img/src.png", "target_text": "t", "edits": [
            {"path": "img/a.png", "role": "gt"}, {"path": "img/b.png", "role": "ep"}, {"path": "img/c.png", "role": "em"}],
         "attributes": {"source_attributes": ["s"], "target_attributes": ["t"]}},
    ])
    items = load_manifest(path)
    assert [i.id for i in items] == ["one", "two", "3"]
    one, two, three = items
    assert one.line == 1 and two.line == 3
    assert [(e.name, e.role) for e in one.edits] == [("m1", "candidate"), ("b", "candidate")]
    assert one.human.preferred == 1 and one.human.scores == (2.0, None)
    assert one.source_text == "a ball" and one.dataset == "toy" and one.meta == {"k": 1}
    assert one.attributes.source == ["a red ball"] and two.attributes.target == ["grass"]
    assert two.attributes_file == "attrs.json" and two.instruction == "add grass"
    assert [(e.name, e.role) for e in three.edits] == [("gt", "gt"), ("ep", "ep"), ("em", "em")]
    assert one.source_path == (root / "img" / "src.png").resolve()
    # to_dict writes a line that parses back to the same item
    again = write_lines(root / "again.jsonl", [i.to_dict() for i in items])
    assert [i.to_dict() for i in load_manifest(again)] == [i.to_dict() for i in items]


BAD_LINES = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ({**good("u1"), "target": "typo"}, "unknown key 'target' (did you mean 'target_text'?)"),
    ({k: v for k, v in good().items() if k != "id"}, "id is missing"),
    (good("dup"), None),
    (good("dup"), "id 'dup' repeats the id on line 6"),
    ({**good("s1"), "source": None}, "source is missing"),
    ({**good("s2"), "source": "img/none.png"}, "file not found"),
    ({**good("s3"), "source": "img"}, "is a folder, not a file"),
    ({**good("t1"), "target_text": "  "}, "target_text is missing or empty"),
    ({**good("e1"), "edits": []}, "edits must be a non-empty list"),
    ({**good("e2"), "edits": [{"path": "img/a.png", "role": "best"}]}, "edits[0].role 'best' is not one of"),
    ({**good("e3"), "edits": [{"name": "m"}]}, "edits[0].path is missing"),
    ({**good("e4"), "edits": [{"path": "img/a.png", "role": "gt"}, {"path": "img/b.png", "role": "gt"}]},
     "a second edit with role 'gt'"),
    ({**good("e5"), "edits": [{"path": "img/a.png", "colour": "red"}]}, "edits[0]: unknown key 'colour'"),
    ({**good("h1"), "human": {"preferred": 2}}, "human.preferred must be an edit index from 0 to 1"),
    ({**good("h2"), "human": {"scores": [1]}}, "human.scores must be a list with one number"),
    ({**good("h3"), "human": {"scores": [1, "high"]}}, "human.scores[1] must be a finite number"),
    ({**good("h4"), "human": {}}, "human needs 'preferred'"),
    ({**good("a1"), "attributes": {"source": [], "target": ["x"]}}, "no source attributes"),
    ({**good("a2"), "attributes": "missing.json"}, "attributes file 'missing.json': file not found"),
    ({**good("a3"), "attributes": 5}, "attributes must be an object"),
    ({**good("a4"), "attributes": "bad.json"}, "not valid JSON"),
    ({**good("o1"), "source_text": 3}, "source_text must be a string"),
]


def test_every_problem_is_reported_at_once(root):
    (root / "bad.json").write_text("{oops")
    path = write_lines(root / "m.jsonl", [good("fine")] + [line for line, _ in BAD_LINES])
    with pytest.raises(ManifestError) as info:
        validate_manifest(path)
    problems = info.value.problems
    text = str(info.value)
    assert text.startswith(f"manifest {path}: {len(problems)} problem(s)")
    for number, (_, expected) in enumerate(BAD_LINES, start=2):
        if expected is None:
            continue
        hits = [p for p in problems if p.startswith(f"line {number}") and expected in p]
        assert hits, f"line {number}: expected {expected!r} in {problems}"
    assert not any(p.startswith("line 1 ") or p.startswith("line 1:") for p in problems)
    # the valid lines still stream when problems are collected instead of raised
    collected: list[str] = []
    assert [i.id for i in iter_manifest(path, problems=collected)] == ["fine", "dup"]
    assert collected == problems
    assert scan_manifest(path).items == 2


def test_empty_manifest_and_missing_file(root):
    path = write_lines(root / "empty.jsonl", [""])
    with pytest.raises(ManifestError, match="no items"):
        validate_manifest(path)
    with pytest.raises(InputError, match="file not found"):
        validate_manifest(root / "nope.jsonl")


@pytest.mark.parametrize("text, message", [
    ("../outside.png", "contains '..'"),
    ("img/../../outside.png", "contains '..'"),
    ("img\\..\\..\\outside.png", "contains '..'"),
    ("/etc/passwd", "is absolute"),
    ("C:\\images\\a.png", "is absolute"),
    ("\\\\server\\share\\a.png", "is absolute"),
    ("", "is empty"),
])
def test_path_escapes_are_refused(root, text, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        resolve_inside(root.resolve(), text, "source")


def test_symlinks_out_are_refused_per_item_inside_are_fine(root, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    draw_scene().save(outside / "secret.png")
    (outside / "attrs.json").write_text(json.dumps({"source_attributes": ["a"], "target_attributes": ["b"]}))
    os.symlink(outside / "secret.png", root / "img" / "link-out.png")
    os.symlink(outside, root / "linked-folder")
    os.symlink(root / "img" / "a.png", root / "img" / "link-in.png")
    os.symlink(root / "img" / "gone.png", root / "img" / "broken-link.png")
    path = write_lines(root / "m.jsonl", [
        {**good("src-link"), "source": "img/link-out.png"},
        {**good("edit-link"), "edits": ["img/a.png", "linked-folder/secret.png"]},
        {**good("attr-link"), "attributes": "linked-folder/attrs.json"},
        {**good("inside"), "edits": ["img/link-in.png"]},
        {**good("dotdot"), "edits": ["../outside.png"]},
        {**good("broken"), "edits": ["img/broken-link.png"]},
    ])
    with pytest.raises(ManifestError) as info:
        validate_manifest(path)
    problems = info.value.problems
    assert len(problems) == 5
    assert problems[4].startswith("line 6 (id 'broken'): edits[0].path 'img/broken-link.png': file not found (a broken")
    assert problems[0].startswith("line 1 (id 'src-link'): source 'img/link-out.png' is a symlink that points outside")
    assert problems[1].startswith("line 2 (id 'edit-link'): edits[1].path 'linked-folder/secret.png' is under a "
                                  "symlink that points outside")
    assert problems[2].startswith("line 3 (id 'attr-link'): attributes file 'linked-folder/attrs.json' is under a "
                                  "symlink that points outside")
    assert problems[3].startswith("line 5 (id 'dotdot'): edits[0].path '../outside.png' contains '..'")
    assert [i.id for i in iter_manifest(path, problems=[])] == ["inside"]


def test_cli_check_lists_problems_and_exit_codes(root, capsys):
    ok = write_lines(root / "ok.jsonl", [good("a"), good("b")])
    assert main(["manifest", "check", str(ok)]) == 0
    assert "2 valid item(s)" in capsys.readouterr().out
    bad = write_lines(root / "bad.jsonl", [good("a"), {**good("b"), "source": "../x.png"}, "{"])
    assert main(["manifest", "check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "2 problem(s)" in err and "line 2 (id 'b')" in err and "line 3: not valid JSON" in err
