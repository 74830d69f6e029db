"""``score --hatie``: HATIE's per-edit criteria in the report; Image Quality says it needs a set."""

from __future__ import annotations

import json

import pytest

from augclip_demo.cli import main
from tests.support import TINY, draw_scene

pytestmark = pytest.mark.slow


def test_score_with_hatie(tmp_path, monkeypatch, capsys):
    for name, value in {"AUGCLIP_GDINO_MODEL": "random:tiny", "AUGCLIP_SAM_MODEL": "random:tiny",
                        "AUGCLIP_HATIE_DINO": "random:tiny-v2", "AUGCLIP_HATIE_LPIPS": "random:alex",
                        "AUGCLIP_HATIE_CLIP": "random:tiny"}.items():
        monkeypatch.setenv(name, value)
    src, edit = tmp_path / "src.png", tmp_path / "edit.png"
    draw_scene((96, 72), shapes=[("ellipse", (20, 20, 50, 50), "red")]).save(src)
    draw_scene((96, 72), shapes=[("ellipse", (20, 20, 50, 50), "blue")]).save(edit)
    attributes = tmp_path / "attributes.json"
    attributes.write_text(json.dumps({"source_attributes": ["a red ball"], "target_attributes": ["a blue ball"]}))
    code = main(["score", "--source", str(src), "--edited", str(edit), "--target", "a blue ball", "--clip-model", TINY,
                 "--device", "cpu", "--attributes", str(attributes), "--instruction", "make the ball blue",
                 "--no-bpm", "--hatie", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    edit_result = report["edits"][0]
    assert {"hatie", "hatie_of", "hatie_oc", "hatie_bc"} <= set(edit_result["metrics"])
    assert edit_result["metrics"]["hatie_iq"] is None
    assert edit_result["unavailable"]["hatie_iq"].startswith("needs a set")
    assert edit_result["metrics"]["hatie_bf"] is None  # not a criterion of attribute edits
