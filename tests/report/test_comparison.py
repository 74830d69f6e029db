"""The comparison grid and its HTML export: numbers, ranks and verdicts against hand-worked values,
one self-contained file (every picture inside it, nothing fetched)."""

from __future__ import annotations

import base64
import io
import json
import re
from types import SimpleNamespace

import pytest
from PIL import Image

from augclip_demo.attributes.base import Attributes
from augclip_demo.cli import main
from augclip_demo.report import EditResult, Report
from augclip_demo.report.comparison import Tile, comparison_grid
from tests.support import draw_scene

NAMES = ["tedbench_output_image_ours_seed0.png", "tedbench_output_image_sdedit_seed0.png",
         "tedbench_output_image_p2p_seed0.png"]
# augclip: E2 best; clip_dir: E1 best; l2 (lower is better): E3 best; bpm missing for E3
METRICS = [{"augclip": 0.81, "clip_dir": 0.30, "l2": 0.20, "bpm": 1.10},
           {"augclip": 0.93, "clip_dir": 0.10, "l2": 0.30, "bpm": 1.40},
           {"augclip": 0.70, "clip_dir": 0.20, "l2": 0.05, "bpm": None}]


def made_report(untrained: bool = True) -> Report:
    images = [draw_scene(shapes=[("ellipse", (10 + 10 * i, 20, 60, 70), "red")]) for i in range(3)]
    edits = [EditResult(index=i, name=name, image_sha256=f"{i}", metrics=dict(m),
                        unavailable={"bpm": "no instruction given"} if m["bpm"] is None else {})
             for i, (name, m) in enumerate(zip(NAMES, METRICS))]
    report = Report(source_name="source: tedbench_input.png", source_sha256="s", target_text="a pink dahlia",
                    source_text="an orange dahlia", attributes=Attributes(["orange"], ["pink"]),
                    model={"spec": "random:tiny"}, untrained=untrained, options={}, edits=edits, timings={})
    report.arrays = SimpleNamespace(source=SimpleNamespace(image=draw_scene()),
                                    edits=[SimpleNamespace(image=im) for im in images])
    return report


def test_numbers_ranks_and_verdicts_follow_the_metric_table():
    grid = comparison_grid(made_report())
    assert [c.label for c in grid.columns] == ["E1 ours", "E2 sdedit", "E3 p2p"]
    assert grid.verdict == "AugCLIP prefers E2 sdedit; CLIPdir prefers E1 ours; BPM prefers E2 sdedit"
    cells = {c.label: {m.key: m for m in c.metrics} for c in grid.columns}
    assert [m.key for m in grid.columns[0].metrics] == ["augclip", "clip_dir", "l2", "bpm"]  # the table's order
    assert (cells["E1 ours"]["augclip"].rank, cells["E2 sdedit"]["augclip"].rank, cells["E3 p2p"]["augclip"].rank) == (2, 1, 3)
    assert (cells["E1 ours"]["l2"].rank, cells["E3 p2p"]["l2"].rank) == (2, 1)  # lower is better
    assert cells["E3 p2p"]["l2"].best and not cells["E1 ours"]["l2"].best
    assert cells["E3 p2p"]["bpm"].shown == "n/a" and cells["E3 p2p"]["bpm"].rank is None
    assert cells["E3 p2p"]["bpm"].reason == "no instruction given"
    assert [c.verdict for c in grid.columns] == ["best under CLIPdir", "best under AugCLIP, BPM",
                                                 "ranks: AugCLIP 3/3, CLIPdir 2/3"]


def test_the_html_file_is_self_contained_and_shows_everything(tmp_path):
    report = made_report()
    tile = Tile("AugCLIP map (toward the ideal edit)", Image.new("RGB", (640, 480), (250, 0, 0)), "a caption")
    path = comparison_grid(report, {1: [tile]}).save(tmp_path / "out" / "comparison.html")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    # nothing to fetch: no script, no stylesheet link, no remote URL; every picture a data URI
    assert not re.search(r"<script|<link|@import|url\(|https?://", text, re.I)
    images = dict((alt, src) for src, alt in re.findall(r'<img src="([^"]+)" alt="([^"]*)"', text))
    assert text.count("<img") == len(images) == 1 + 3 + 1  # the source, three edits, one tile
    assert all(src.startswith("data:image/png;base64,") for src in images.values())
    tile_png = Image.open(io.BytesIO(base64.b64decode(images[tile.title].split(",", 1)[1])))
    assert tile_png.size == (320, 240) and tile_png.getpixel((5, 5)) == (250, 0, 0)  # shrunk, colours kept
    for name in NAMES:
        assert name in text  # the full name beside the short label
    assert "0.9300 (1)" in text and "0.8100 (2)" in text and "n/a" in text
    assert "untrained" in text.lower() and "Verdict: AugCLIP prefers E2 sdedit" in text
    assert "AugCLIP map (toward the ideal edit)" in text and "a caption" in text


def test_names_are_escaped():
    report = made_report(untrained=False)
    report.edits[0].name = "<b>evil</b>.png"
    text = comparison_grid(report).to_html()
    assert "<b>evil</b>" not in text and "&lt;b&gt;evil&lt;/b&gt;" in text
    assert "untrained: computed" not in text


@pytest.mark.slow  # loads torch and a CLIP model in-process
def test_score_writes_the_html_grid(scene_files, tmp_path, capsys):
    attrs = tmp_path / "attrs.json"
    attrs.write_text(json.dumps({"source_attributes": ["a red ball"], "target_attributes": ["green grass"]}))
    out = tmp_path / "grid.html"
    code = main(["score", "--source", str(scene_files["source"]), "--edited", str(scene_files["faithful"]),
                 str(scene_files["replaced"]), "--target", "a red ball on grass", "--attributes", str(attrs),
                 "--clip-model", "random:tiny", "--device", "cpu", "--json", "--html", str(out)])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    text = out.read_text(encoding="utf-8")
    assert text.count('<img src="data:image/png;base64,') == 3  # source and two edits
    for edit in printed["edits"]:
        assert f"{edit['metrics']['augclip']:.4f}" in text
