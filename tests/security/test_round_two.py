"""Round two of the hardening, in process: bounds, strict types, the fit cap, CSV cells, the disk cap,
zip entries of every kind and the CLI's failed writes. Each bad input is refused with a message that
names it; each check is followed by a good input of the same kind that goes through.

The same families against a running server (every client answered within 1 s meanwhile) are in
``test_attack.py``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import zipfile
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

from augclip_demo.batch.results import export_csv
from augclip_demo.batch.upload import check_manifest_bounds, run_uploaded_batch
from augclip_demo.cli import main as cli_main
from augclip_demo.config import Settings
from augclip_demo.errors import InputError
from augclip_demo.metrics import augclip as augclip_module
from augclip_demo.metrics.augclip import fit_hyperplane
from augclip_demo.pipeline import AugCLIPOptions
from augclip_demo.ui.inputs import bound_inputs, number_input
from augclip_demo.ui.storage import WorkFolders
from tests.security import probes
from tests.support import TINY

FORMULAS = ['=HYPERLINK("http://example.com","click")', "=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\t=1"]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# ------------------------------------------------------------------------------------- strict options
@pytest.mark.parametrize("kwargs, message", [
    ({"C": True}, "C must be a positive number, got True"),
    ({"C": float("inf")}, "C must be a positive number"),
    ({"weighting": "no"}, "weighting must be true or false, got 'no'"),
    ({"include_images": 1}, "include_images must be true or false, got 1"),
])
def test_augclip_options_take_strict_types(kwargs, message):
    with pytest.raises(InputError, match=message):
        AugCLIPOptions(**kwargs)
    assert AugCLIPOptions(C=2, weighting=False, include_images=np.bool_(True)).C == 2


def test_a_fit_that_reaches_the_iteration_cap_is_refused(monkeypatch):
    # Overlapping classes with a huge C: libsvm needs many iterations; with the cap lowered it stops.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 8))
    y = np.where(rng.random(40) < 0.5, -1, 1)
    monkeypatch.setattr(augclip_module, "MAX_FIT_ITERATIONS", 3)
    with pytest.raises(ValueError, match="did not converge within 3 iterations with C = 1e\\+06; use a smaller C"):
        fit_hyperplane(X, y, np.ones(40), C=1e6)
    monkeypatch.setattr(augclip_module, "MAX_FIT_ITERATIONS", 100_000)
    w, b, _ = fit_hyperplane(X, y, np.ones(40), C=1.0)
    assert np.all(np.isfinite(w)) and np.isfinite(b)


# ------------------------------------------------------------------------------------- page inputs
@pytest.fixture()
def page():
    settings = Settings.from_env({}, max_text_chars=50, max_attributes=3, max_attribute_chars=10)
    with gr.Blocks() as demo:
        text = gr.Textbox(label="Target text")
        attrs = gr.Textbox(label="Source attributes", elem_id="aug-src-attrs", lines=3)
        box = gr.Checkbox(True, label="Weight samples")
        group = gr.CheckboxGroup([("AugCLIP", "augclip"), ("L2", "l2")], label="Metrics")
        C = number_input(1.0, label="C (svm / logistic)", minimum=1e-4, maximum=1e6)
    assert bound_inputs(demo, settings) == 3
    return {"text": text, "attrs": attrs, "box": box, "group": group, "C": C}


@pytest.mark.parametrize("field, payload, message", [
    ("text", "x" * 51, "Target text: 51 characters; the limit is 50 (AUGCLIP_MAX_TEXT_CHARS)."),
    ("text", 12, "Target text: must be text, got int."),
    ("attrs", "a\nb\nc\nd", "Source attributes: 4 attributes; the limit is 3 (AUGCLIP_MAX_ATTRIBUTES)."),
    ("attrs", "short\n" + "y" * 11, "Source attributes: an attribute of 11 characters; the limit is 10"),
    ("box", "no", "Weight samples: must be true or false, got 'no'."),
    ("box", 1, "Weight samples: must be true or false, got '1'."),
    ("group", ["augclip", "bleu"], "not in the list of choices"),  # Gradio's own check, kept
    ("C", True, "C (svm / logistic): true is not a number."),
    ("C", 1e30, "C (svm / logistic): must be at most 1e+06, got 1e+30."),
])
def test_page_inputs_are_bounded_and_strict(page, field, payload, message):
    with pytest.raises(gr.Error) as info:
        page[field].preprocess(payload)
    assert message in str(info.value.message), info.value.message


def test_good_page_inputs_pass_and_duplicates_are_dropped(page):
    assert page["text"].preprocess("make it pink") == "make it pink"
    assert page["attrs"].preprocess("a\n\nb\nc\n") == "a\n\nb\nc\n"
    assert page["box"].preprocess(False) is False
    assert page["group"].preprocess(["augclip", "l2"]) == ["augclip", "l2"]
    assert page["C"].preprocess(1e6) == 1e6


# ------------------------------------------------------------------------------------- batch uploads
def _manifest(tmp: Path, **fields) -> Path:
    return probes.write(tmp / "m.jsonl", probes.manifest_line(**fields) + "\n")


@pytest.mark.parametrize("fields, message", [
    ({"edits": [{"path": "edit.png"}] * 17}, "line 1: 17 edits in one item; the limit is 16 (AUGCLIP_MAX_BATCH_EDITS)"),
    ({"instruction": "a bit " * 400}, "line 1: instruction has 2400 characters; the limit is 2000"),
    ({"attributes": {"source": ["x"] * 65, "target": ["y"]}},
     "line 1: attributes.source has 65 attributes; the limit is 64 (AUGCLIP_MAX_ATTRIBUTES)"),
    ({"attributes": {"source": ["x"], "target": ["y" * 201]}},
     "line 1: attributes.target has an attribute of 201 characters; the limit is 200"),
])
def test_manifest_bounds_are_checked_before_any_work(tmp_path, fields, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_manifest_bounds(_manifest(tmp_path, **fields), "m.jsonl", Settings.from_env({}))
    check_manifest_bounds(_manifest(tmp_path), "m.jsonl", Settings.from_env({}))  # the good line passes


def test_manifest_item_count_and_attribute_files_are_bounded(tmp_path):
    settings = Settings.from_env({}, max_batch_items=3)
    many = probes.write(tmp_path / "many.jsonl", "\n".join(probes.manifest_line(id=str(i)) for i in range(4)))
    with pytest.raises(InputError, match="more than 3 items; the limit is 3 per upload"):
        check_manifest_bounds(many, "many.jsonl", settings)
    (tmp_path / "attrs.json").write_text(json.dumps({"source_attributes": ["x"] * 65, "target_attributes": ["y"]}))
    (tmp_path / "huge.json").write_text(json.dumps({"source_attributes": ["x" * 199] * 5000}))
    for name, message in (("attrs.json", "65 attributes"), ("huge.json", "more than bounded attribute lists can take")):
        with pytest.raises(InputError, match=message):
            check_manifest_bounds(_manifest(tmp_path, attributes=name), "m.jsonl", Settings.from_env({}), tmp_path)


def test_a_zip_of_many_folder_entries_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "folders.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(30_000):
            archive.writestr(zipfile.ZipInfo(f"d{i}/"), b"")
    manifest = _manifest(tmp_path)
    with pytest.raises(InputError, match=r"holds more than 20000 entries \(files and folders\)"):
        run_uploaded_batch(manifest, path, settings=Settings.from_env({}, clip_model=TINY, device="cpu"))


# ------------------------------------------------------------------------------------- CSV cells
def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


@pytest.mark.slow  # a small batch and an evaluation with the tiny model (about 10 s)
def test_every_csv_we_write_neutralises_formulas(tmp_path, tiny_encoder):
    folder = probes.manifest_folder(tmp_path / "data")
    lines = [json.dumps({"id": formula, "source": "src.png", "target_text": formula,
                         "edits": [{"path": "edit.png", "name": formula}],
                         "attributes": {"source": ["red ball"], "target": ["blue ball"]}}) for formula in FORMULAS]
    manifest = probes.write(folder / "m.jsonl", "\n".join(lines) + "\n")
    with zipfile.ZipFile(tmp_path / "images.zip", "w") as archive:
        for name in ("src.png", "edit.png"):
            archive.write(folder / name, name)
    result = run_uploaded_batch(manifest, tmp_path / "images.zip", settings=Settings.from_env({}, clip_model=TINY,
                                                                                              device="cpu"),
                                encoder=tiny_encoder, metrics=["augclip", "l2"], provider="manual", n_boot=50)
    written = {"results": result.results_csv.read_text(), "protocol": result.protocol_csv.read_text(),
               "results again": export_csv(result.results_jsonl, tmp_path / "again.csv").read_text()}
    from augclip_demo.ui.evaluate import session as logic

    report, _ = logic.evaluate(Settings.from_env({}, clip_model=TINY, device="cpu"), logic.Session(),
                               source=str(folder / "src.png"), edits=[str(folder / "edit.png")],
                               target_text=FORMULAS[0], source_text="", provider="manual",
                               source_attrs_box="red ball", target_attrs_box="blue ball", options=AugCLIPOptions(),
                               progress=lambda fraction, stage: None)
    report.edits[0].name = FORMULAS[1]
    written["report"] = report.to_csv()
    for name, text in written.items():
        cells = _cells(text)
        numbers = {cell for cell in cells if _is_number(cell)}
        formulas = [cell for cell in cells if cell.startswith(FORMULA_START) and cell not in numbers]
        assert not formulas, (name, formulas)
    results_cells = _cells(written["results"])
    for formula in FORMULAS:  # kept as text: the quote and then the text as the manifest gave it (stripped)
        assert "'" + formula.strip() in results_cells, formula
    assert "'" + FORMULAS[1] in _cells(written["report"])


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------------- disk cap
def test_uploads_count_on_arrival_and_the_cap_refuses_work(tmp_path):
    folders = WorkFolders(tmp_path, max_bytes=3000)
    files = [probes.write(tmp_path / f"up{i}.bin", b"x" * 1000) for i in range(4)]
    folders.arrived(files[:2])
    assert folders.used() == 2000 and folders.room() == 1000
    folders.check_room()  # room left: fine
    folders.arrived(files[2:])  # the third fits exactly, the fourth would pass the cap: deleted on arrival
    assert [f.exists() for f in files] == [True, True, True, False]
    assert str(files[3]) in folders.refused_uploads
    with pytest.raises(InputError, match=r"The batch was refused: the server's space for uploads and results is "
                                         r"full \(0 of 0 MB, AUGCLIP_APP_DISK_MB\)"):
        folders.check_room("The batch")
    folders.max_bytes = 10_000
    folders.sweep(cache_files=files[:3])
    assert folders.used() == 3000
    folders.check_room()


# ------------------------------------------------------------------------------------- the CLI's writes
@pytest.mark.slow  # two CLI runs with the tiny model (about 18 s)
@pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="needs Linux's /proc/version (writes fail with EIO)")
def test_a_failed_write_in_the_cli_is_a_message_not_a_traceback(tmp_path):
    source = probes.good_png(tmp_path / "s.png")
    attributes = probes.write(tmp_path / "a.json", '{"source_attributes": ["red"], "target_attributes": ["blue"]}')
    for argv in (["score", "--source", str(source), "--edited", str(source), "--target", "a red ball",
                  "--attributes", str(attributes), "--clip-model", TINY, "--device", "cpu", "--no-bpm",
                  "--out", "/proc/version"],
                 ["batch", str(_manifest(probes.manifest_folder(tmp_path / "b"))), "--clip-model", TINY,
                  "--device", "cpu", "--metrics", "l2", "--out", "/proc/version"]):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            code = cli_main(argv)
        text = stderr.getvalue()
        assert code == 2 and text.startswith("error: cannot read or write"), text
        assert "Traceback" not in text and "-v shows the details" in text
