"""BPM end to end with the tiny random models: bpm_score, the pipeline, the CLI and the panel pictures."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from augclip_demo.bpm import BPMOptions, ParsedInstruction, bpm_score, bpm_score_many
from augclip_demo.bpm.models import BPMModels, bpm_models_status
from augclip_demo.cli import main
from augclip_demo.errors import InputError, InstructionParseError
from augclip_demo.explain.regions import bpm_component_figure, bpm_component_rows, bpm_panel, preserved_view
from augclip_demo.inference.grounding import GroundingDetector, save_random_grounding
from augclip_demo.inference.segmenter import SamSegmenter
from augclip_demo.metrics.pixel import l2_distance
from augclip_demo.pipeline import Attributes, Evaluator
from augclip_demo.report import Report
from tests.support import TINY, draw_scene

# Loading transformers' GroundingDINO code and building the tiny models takes several seconds.
pytestmark = pytest.mark.slow

SOURCE = draw_scene((120, 90), shapes=[("ellipse", (20, 20, 60, 60), "red"), ("rectangle", (70, 40, 110, 80), "green")])
RECOLORED = draw_scene((120, 90), shapes=[("ellipse", (20, 20, 60, 60), "blue"), ("rectangle", (70, 40, 110, 80), "green")])
MOVED = draw_scene((120, 90), shapes=[("ellipse", (0, 20, 40, 60), "red"), ("rectangle", (70, 40, 110, 80), "green")])


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    folder = save_random_grounding(tmp_path_factory.mktemp("gdino"), "tiny")
    sam_path = tmp_path_factory.mktemp("sam") / "sam_tiny.pth"
    torch.save(SamSegmenter("random:tiny", device="cpu").load()._model.state_dict(), sam_path)
    return folder, sam_path


@pytest.fixture(scope="module")
def models(model_files, tiny_encoder):
    folder, sam_path = model_files
    return BPMModels(GroundingDetector(folder, device="cpu"), SamSegmenter("tiny", checkpoint=sam_path, device="cpu"),
                     tiny_encoder).load()


def _check_consistent(result):
    c = result.components
    assert c.bpm == pytest.approx(c.alpha * c.s_semantic + (1 - c.alpha) * c.s_region)
    assert c.s_semantic == pytest.approx((c.s_modify + 1) / 2 + c.s_preserve)
    assert c.s_region == c.s_size + c.s_position and {c.s_size, c.s_position} <= {0, 1}
    assert -1 <= c.s_modify <= 1 and 0 <= c.s_preserve <= 1
    assert result.preserved_mask.shape == (90, 120) and result.preserved_mask.dtype == bool
    for region in (result.origin, result.edit):
        assert region.box is not None and region.mask is not None and region.mask.shape == (90, 120)
    assert set(result.timings) >= {"parse", "detect", "segment", "judge", "model_load"}
    assert result.untrained
    json.dumps(result.to_dict(), allow_nan=False)


@pytest.mark.parametrize("instruction, found_keys", [
    ("make the ball blue", {"o1": True, "o2": True}),
    ("add a hat on the box", {"o1": None, "reference": True}),
    ("remove the ball", {"o2": None}),
    ("move the ball to the left", {"o1": True}),
])
def test_bpm_score_for_each_instruction_form(models, instruction, found_keys):
    result = bpm_score(SOURCE, MOVED, instruction, models=models)
    _check_consistent(result)
    assert result.parsed.instruction == instruction
    for key, value in found_keys.items():
        if value is None:
            assert result.found[key] is None
        else:
            assert isinstance(result.found[key], bool)
    if result.parsed.is_add:
        assert result.s_size == 1  # App. A.4
    if result.parsed.is_remove:
        assert result.s_position == 1


def test_identical_images_with_remove_have_known_components(models):
    result = bpm_score(SOURCE, SOURCE.copy(), "remove the ball", models=models)
    assert result.found["o1"] is True
    assert result.s_modify == 0.0  # the same crop of the same image: no direction
    assert result.s_preserve == 1.0 and result.s_position == 1
    assert result.s_size == (1 if result.origin.area > 0 else 0)
    np.testing.assert_array_equal(result.edit.mask, result.origin.mask)  # Sec. 3.2: edit region = origin region


def test_nothing_found_falls_back_to_the_whole_image(models):
    options = BPMOptions(box_threshold=0.9999999)  # nothing scores above this
    result = bpm_score(SOURCE, RECOLORED, "make the ball blue", models=models, options=options)
    assert result.found == {"o1": False, "o2": False, "reference": None}
    assert result.s_size == 0 and result.s_position == 0
    assert result.preserved_mask.all()
    assert result.s_preserve == pytest.approx(1 - l2_distance(SOURCE, RECOLORED))
    assert any("no object was found" in note for note in result.notes)


def test_batched_edits_equal_one_at_a_time(models):
    many = bpm_score_many(SOURCE, [RECOLORED, MOVED], "make the ball blue", models=models)
    for edit, result in zip([RECOLORED, MOVED], many):
        single = bpm_score(SOURCE, edit, "make the ball blue", models=models)
        assert result.components.bpm == pytest.approx(single.components.bpm, abs=1e-6)
        np.testing.assert_array_equal(result.edit.mask, single.edit.mask)
    assert [r.edit_name for r in many] == ["edit 1", "edit 2"]


def test_edits_of_another_size_are_resized_with_a_note(models):
    small = RECOLORED.resize((60, 60))
    result = bpm_score(SOURCE, small, "make the ball blue", models=models)
    _check_consistent(result)
    assert result.edit_image.size == (120, 90)
    assert any("resized to the source's size" in n for n in result.notes)
    assert any("different aspect ratio" in n for n in result.notes)


def test_description_style_target_with_o1_o2_given(models):
    parsed = ParsedInstruction.from_fields("red ball", "blue ball")
    result = bpm_score(SOURCE, RECOLORED, parsed=parsed, models=models)
    assert result.parsed.parser == "manual" and result.parsed.o2 == "blue ball"
    _check_consistent(result)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"instruction": "add"}, InstructionParseError, "names no object to add"),
    ({"instruction": "make it nicer"}, InstructionParseError, "does not name an object"),
    ({}, InputError, "BPM needs an instruction"),
    ({"parsed": {"o1": None, "o2": None}}, InstructionParseError, "names no object"),
])
def test_bad_inputs(models, kwargs, error, message):
    with pytest.raises(error, match=message):
        bpm_score(SOURCE, RECOLORED, models=models, **kwargs)
    with pytest.raises(InputError, match="alpha must be between 0 and 1"):
        BPMOptions(alpha=2)


# ---------------------------------------------------------------------- pipeline and report
def test_pipeline_adds_bpm_to_the_report(models, tiny_encoder):
    evaluator = Evaluator(encoder=tiny_encoder)
    attributes = Attributes(["red ball"], ["blue ball"])
    report = evaluator.evaluate(SOURCE, [RECOLORED, MOVED], "a blue ball", attributes=attributes)
    evaluator.add_bpm(report, "make the ball blue", models=models)
    assert all(isinstance(e.metrics["bpm"], float) and e.bpm["parse"]["o2"] == "blue ball" for e in report.edits)
    assert len(report.arrays.bpm) == 2 and "BPM" in report.verdict()
    assert any(n.startswith("BPM untrained") and "SAM random" in n for n in report.notes)
    restored = Report.from_json(report.to_json())
    assert restored.edits[0].bpm["bpm"] == pytest.approx(report.edits[0].metrics["bpm"])
    rescored = evaluator.rescore(report, attributes=Attributes(["red ball", "green box"], ["blue ball"]))
    assert rescored.edits[1].metrics["bpm"] == report.edits[1].metrics["bpm"]


def test_panel_pictures_and_rows(models):
    result = bpm_score(SOURCE, RECOLORED, "put a hat on the box", models=models)
    panel = bpm_panel(result)
    for image in (panel.source, panel.edit, panel.preserved):
        assert image.dtype == np.uint8 and image.shape[1] == 120 and image.shape[0] > 90  # the untrained banner
    assert panel.untrained and panel.caption.startswith("untrained")
    assert panel.parse == {"o1": "None", "o2": "hat", "size_state": "unchanged", "position_state": "up",
                           "reference": "box"}
    rows = {row[0]: row[1] for row in bpm_component_rows(result)}
    assert rows["BPM"] == round(result.bpm, 4) and rows["S_size"] == 1
    assert "untrained" in bpm_component_figure(result).axes[0].get_title()


def test_preserved_view_keeps_the_compared_pixels_untouched():
    keep = np.ones((90, 120), dtype=bool)
    keep[20:60, 20:60] = False
    view = np.asarray(preserved_view(SOURCE, keep))
    np.testing.assert_array_equal(view[keep], np.asarray(SOURCE)[keep])
    assert not np.array_equal(view[~keep], np.asarray(SOURCE)[~keep])


# ---------------------------------------------------------------------- command line
@pytest.fixture()
def image_files(tmp_path):
    paths = {}
    for name, image in (("source", SOURCE), ("recoloured", RECOLORED), ("small", Image.new("RGB", (30, 40), "gray"))):
        paths[name] = tmp_path / f"{name}.png"
        image.save(paths[name])
    return paths


def _model_flags(model_files):
    folder, sam_path = model_files
    return ["--gdino-model", str(folder), "--sam-model", "tiny", "--sam-checkpoint", str(sam_path),
            "--clip-model", TINY, "--device", "cpu"]


def test_cli_bpm_json(model_files, image_files, capsys):
    code = main(["bpm", "--source", str(image_files["source"]), "--edited", str(image_files["recoloured"]),
                 str(image_files["small"]), "--instruction", "make the ball blue", "--json", *_model_flags(model_files)])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["untrained"] and data["parse"]["o2"] == "blue ball" and len(data["edits"]) == 2
    assert {"bpm", "s_modify", "s_preserve", "s_size", "s_position", "overall_raw"} <= set(data["edits"][0])
    assert any("resized" in n for n in data["edits"][1]["notes"])


def test_cli_bpm_table_with_hand_filled_parse(model_files, image_files, capsys):
    code = main(["bpm", "--source", str(image_files["source"]), "--edited", str(image_files["recoloured"]),
                 "--o1", "red ball", "--o2", "blue ball", "--alpha", "0.5", *_model_flags(model_files)])
    out = capsys.readouterr().out
    assert code == 0 and "UNTRAINED" in out and "o1=red ball -> o2=blue ball" in out and "alpha 0.5" in out


def test_cli_bpm_bad_instruction_is_one_line_exit_2(model_files, image_files, capsys):
    code = main(["bpm", "--source", str(image_files["source"]), "--edited", str(image_files["recoloured"]),
                 "--instruction", "add", *_model_flags(model_files)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "names no object to add" in err and len(err.splitlines()) == 1


def test_cli_score_includes_bpm_or_says_why_not(model_files, image_files, capsys, tmp_path):
    attrs = tmp_path / "attrs.json"
    attrs.write_text(json.dumps({"source_attributes": ["red ball"], "target_attributes": ["blue ball"]}))
    base = ["score", "--source", str(image_files["source"]), "--edited", str(image_files["recoloured"]),
            "--target", "a blue ball", "--attributes", str(attrs)]
    assert main([*base, *_model_flags(model_files)]) == 0
    out = capsys.readouterr().out
    assert "BPM skipped: it needs an editing instruction" in out
    assert main([*base, "--instruction", "make the ball blue", "--json", *_model_flags(model_files)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data["edits"][0]["metrics"]["bpm"], float) and data["edits"][0]["bpm"]["untrained"]
    # the default GroundingDINO weights are not here (offline): skipped, with the weights message
    assert main([*base, "--instruction", "make the ball blue", "--clip-model", TINY, "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "BPM skipped: the region models are not available" in out and "IDEA-Research/grounding-dino-tiny" in out


def test_models_status_without_weights(tmp_path):
    from augclip_demo.config import Settings

    ok, reason = bpm_models_status(Settings.from_env(cache_dir=str(tmp_path)))
    assert not ok and "could not be loaded" in reason
    ok, reason = bpm_models_status(Settings.from_env(gdino_model="random:tiny", sam_model="random:tiny"))
    assert ok and "untrained" in reason


def test_bpm_regions_give_the_unedited_metrics_their_mask(models, tiny_encoder):
    evaluator = Evaluator(encoder=tiny_encoder)
    attributes = Attributes(["red ball"], ["blue ball"])
    report = evaluator.evaluate(SOURCE, [RECOLORED, MOVED], "a blue ball", attributes=attributes)
    assert report.edits[0].metrics["mse_unedited"] is None  # no mask yet
    evaluator.add_bpm(report, "make the ball blue", models=models)
    source = np.asarray(SOURCE.convert("RGB"), dtype=np.float64) / 255.0
    for edit, image, result in zip(report.edits, [RECOLORED, MOVED], report.arrays.bpm):
        keep = np.asarray(result.preserved_mask, dtype=bool)[..., None]  # BPM's preserved region = 1 - mask
        edited = np.asarray(image.convert("RGB"), dtype=np.float64) / 255.0
        expected = float((((source - edited) * keep) ** 2).mean())  # PIE-Bench: both masked, whole-image mean
        assert edit.metrics["mse_unedited"] == pytest.approx(expected, rel=1e-5, abs=1e-9)
        assert edit.metrics["psnr_unedited"] is not None or expected == 0
    assert any("BPM regions" in note for note in report.notes)
    rescored = evaluator.rescore(report, attributes=Attributes(["red ball", "green box"], ["blue ball"]))
    assert rescored.edits[1].metrics["mse_unedited"] == report.edits[1].metrics["mse_unedited"]
