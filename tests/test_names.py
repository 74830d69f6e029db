"""The one rule that shortens edit names for every view and export (augclip_demo.report.short_edit_names)."""

from __future__ import annotations

import pytest

from augclip_demo.report import EditName, edit_names, edit_tag, short_edit_names


def test_benchmark_outputs_keep_only_the_part_that_differs():
    names = [f"tedbench_output_image_017_{m}.png" for m in ("ours", "base", "sdedit", "imagic", "p2p", "ddim")]
    assert short_edit_names(names) == ["ours", "base", "sdedit", "imagic", "p2p", "ddim"]


def test_shared_parts_are_cut_at_separators_so_numbers_stay_whole():
    assert short_edit_names(["img_10.png", "img_11.png"]) == ["10", "11"]
    assert short_edit_names(["run-a/edit.jpg", "run-b/edit.jpg"]) == ["a", "b"]
    # no separator inside the shared start: nothing is cut there
    assert short_edit_names(["ours.png", "oursv2.png"]) == ["ours", "oursv2"]


def test_a_name_that_is_all_shared_parts_keeps_enough_to_be_seen():
    assert short_edit_names(["a_edit.png", "a_edit_v2.png"]) == ["edit", "edit_v2"]
    assert short_edit_names(["x.png", "x_2.png"]) == ["x", "x_2"]
    assert all(short_edit_names(["cat", "cat_cat", "cat_cat_cat"]))


def test_single_and_equal_names():
    assert short_edit_names(["faithful.png"]) == ["faithful"]
    assert short_edit_names(["same.png", "same.png"]) == ["same", "same"]
    assert short_edit_names([]) == []
    # the extension stays when not every name is an image file name
    assert short_edit_names(["a.png", "b"]) == ["a.png", "b"]


def test_long_names_are_cut_in_the_middle_and_stay_distinct():
    names = ["x" * 40 + "_1_final.png", "x" * 40 + "_2_final.png", "y" * 50 + ".png"]
    # the shared suffix "_final.png" does not hold for the third name, so only ".png" goes
    short = short_edit_names(names, limit=20)
    assert len(set(short)) == 3 and all(len(s) <= 20 for s in short)
    assert short[0].endswith("_1_final") and short[1].endswith("_2_final") and "…" in short[0]
    # distinct names that agree in their start and end widen until they differ
    names = ["p" * 30 + "AAA" + "q" * 30, "p" * 30 + "BBB" + "q" * 30]
    short = short_edit_names([n + "_x" for n in names] + ["z_x"], limit=10)
    assert len(set(short)) == 3


@pytest.mark.parametrize("names", [["a.png", "b.png", "c.png"], ["f/g_1.jpg", "f/g_22.jpg", "h/g_3.jpg"]])
def test_distinct_names_stay_distinct(names):
    assert len(set(short_edit_names(names))) == len(names)


def test_edit_names_number_in_order_and_keep_the_full_name():
    named = edit_names(["t_out_ours.png", "t_out_base.png"])
    assert named == [EditName(1, "ours", "t_out_ours.png"), EditName(2, "base", "t_out_base.png")]
    assert [n.label for n in named] == ["E1 ours", "E2 base"] and named[1].tag == edit_tag(1) == "E2"


@pytest.mark.slow
def test_every_view_of_a_report_uses_the_same_labels(tiny_encoder):
    """CLI table, CSV, the app's table / picker, the verdict: E1..En and the short names; full names kept."""
    import csv
    import io

    from augclip_demo.attributes import Attributes
    from augclip_demo.cli.report_table import format_report
    from augclip_demo.pipeline import Evaluator
    from augclip_demo.ui.evaluate import views
    from tests.support import draw_scene

    names = [f"tedbench_output_image_017_{m}.png" for m in ("ours", "base", "sdedit")]
    edits = [draw_scene(background=color) for color in ("green", "white", "blue")]
    report = Evaluator(encoder=tiny_encoder).evaluate(
        draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")]), edits, "a red ball on grass",
        attributes=Attributes(["white background"], ["green grass"]), names=names)
    table = format_report(report)
    rows = [line.split() for line in table.splitlines() if line.startswith("E")]
    assert [row[:2] for row in rows[:3]] == [["E1", "ours"], ["E2", "base"], ["E3", "sdedit"]]
    assert "tedbench_output_ima" not in "\n".join(" ".join(r) for r in rows[:3])
    assert all(f"E{i + 1} = {name}" in table for i, name in enumerate(names))  # the full names, once each
    best = report.best("augclip")
    assert f"AugCLIP prefers edit E{best + 1} ({['ours', 'base', 'sdedit'][best]})" in report.verdict()
    csv_rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert [(r["edit"], r["name"], r["tag"], r["short_name"]) for r in csv_rows] == [
        (str(i + 1), name, f"E{i + 1}", short) for i, (name, short) in enumerate(zip(names, ["ours", "base", "sdedit"]))]
    choices = views.edit_choices(report)
    assert choices == ["E1 ours", "E2 base", "E3 sdedit"]
    assert [views.picked_index(choice) for choice in choices] == [0, 1, 2] and views.picked_index("3. x") is None
    frame = views.score_frame(report)
    assert list(frame["#"]) == ["E1", "E2", "E3"]
    assert frame["edit"][0] == f'<span title="{names[0]}">ours</span>'
    assert len(views.SCORE_DATATYPES) >= len(frame.columns)
