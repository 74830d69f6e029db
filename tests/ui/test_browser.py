"""The app in a real browser: Playwright driving Debian's Chromium headless against ``python app.py``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from augclip_demo.attributes import Attributes
from augclip_demo.pipeline import Evaluator
from tests.support import EXAMPLES, TINY, artifacts_folder

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists() and shutil.which("chromium") is None,
                       reason="Chromium is not installed (apt-get install -y chromium); .ci/run installs it"),
]

FLOWER = EXAMPLES / "flower-pink"
EDITS = [FLOWER / "well_edited.png", FLOWER / "excessively_modified.png"]
SRC_ATTRS = ["dahlia is orange", "round flower head", "dark green background"]
TGT_ATTRS = ["dahlia is pink", "pink petals"]


def open_page(browser, url: str):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(120_000)  # a loaded 2-core machine can take a while to render the app
    page.goto(url)
    page.locator("#aug-evaluate").wait_for()
    return page


def read_table(page) -> dict[str, list[str]]:
    """Gradio 6 renders the dataframe as an ARIA grid of virtual rows with gridcell children; rows by the
    edit's short name (the second cell)."""
    rows = {}
    for row in page.locator("#aug-table [role=row]").all():
        cells = [c.strip() for c in row.locator("[role=gridcell]").all_inner_texts()]
        if len(cells) > 2:
            rows[cells[1]] = cells
    return rows


def name_hovers(page) -> dict[str, str]:
    """Short name -> the full file name its cell shows on hover (the title attribute)."""
    spans = page.locator("#aug-table [role=gridcell] span[title]").all()
    return {span.inner_text().strip(): span.get_attribute("title") for span in spans}


def wait_for_rows(page, count: int, timeout: float = 240_000) -> None:
    page.wait_for_function(
        f"document.querySelectorAll('#aug-table [role=gridcell]').length >= {count * 7}", timeout=timeout)


def wait_for_pictures(page, selector: str, count: int, timeout: float | None = None) -> None:
    """At least ``count`` pictures under ``selector``, each loaded: one still loading has no natural size, and
    the box around it has not taken its final height (``timeout``: the page's default when None)."""
    page.wait_for_function("""([selector, count]) => { const imgs = [...document.querySelectorAll(selector + ' img')];
        return imgs.length >= count && imgs.every(img => img.complete && img.naturalWidth > 0); }""",
                           arg=[selector, count], timeout=timeout)


def test_upload_type_evaluate_and_read_the_table(browser, app_server, tiny_encoder, tmp_path):
    page = open_page(browser, app_server["url"])
    page.locator("#aug-source input[type=file]").set_input_files(str(FLOWER / "source.png"))
    page.locator("#aug-edits input[type=file]").set_input_files([str(p) for p in EDITS])
    page.locator("#aug-target textarea").fill("a pink dahlia flower")
    page.locator("#aug-source-text textarea").fill("an orange dahlia flower")
    page.locator("#aug-src-attrs textarea").fill("\n".join(SRC_ATTRS))
    page.locator("#aug-tgt-attrs textarea").fill("\n".join(TGT_ATTRS))
    page.wait_for_function("document.querySelectorAll('#aug-gallery img').length >= 2", timeout=60_000)
    page.locator("#aug-source img").wait_for(timeout=60_000)  # the source's upload done too
    page.locator("#aug-evaluate").click()
    wait_for_rows(page, 2)
    page.screenshot(path=str(tmp_path / "evaluated-1366x768.png"), full_page=True)

    expected = Evaluator(TINY, device="cpu", encoder=tiny_encoder).evaluate(
        FLOWER / "source.png", EDITS, "a pink dahlia flower", "an orange dahlia flower", Attributes(SRC_ATTRS, TGT_ATTRS))
    rows = read_table(page)
    assert set(rows) == {"well_edited", "excessively_modified"}  # the shared ".png" is dropped
    assert name_hovers(page) == {"well_edited": "well_edited.png", "excessively_modified": "excessively_modified.png"}
    assert [cells[0] for cells in rows.values()] == ["E1", "E2"]
    for edit in expected.edits:
        cells = rows[edit.name.removesuffix(".png")]
        for position, key in ((2, "augclip"), (3, "clip_dir"), (4, "clip_i"), (5, "clip_t"), (6, "l2")):
            assert float(cells[position]) == pytest.approx(edit.metrics[key], abs=6e-5), (edit.name, key)
    verdict = page.locator("#aug-verdict").inner_text()
    assert f"AugCLIP prefers edit E{expected.best('augclip') + 1}" in verdict
    assert "UNTRAINED" in page.content()  # the random-weights warning is on the page

    page.set_viewport_size({"width": 1920, "height": 1080})
    page.screenshot(path=str(tmp_path / "evaluated-1920x1080.png"), full_page=True)
    print(f"\nscreenshots: {tmp_path}")


def test_an_example_runs_with_one_click(browser, app_server, tmp_path):
    page = open_page(browser, app_server["url"])
    page.get_by_text("make it night").first.click()
    wait_for_rows(page, 4)
    rows = read_table(page)
    shorts = ["well_edited", "partial_edit", "excessively_preserved", "excessively_modified"]
    assert set(rows) == set(shorts)
    # One naming rule everywhere: E1..E4 and the same short names in the table, the gallery and the picker.
    assert sorted(cells[0] for cells in rows.values()) == ["E1", "E2", "E3", "E4"]
    labels = [f"{rows[name][0]} {name}" for name in shorts]
    gallery = page.locator("#aug-gallery").inner_text().replace("\u200b", "")  # captions wrap after _ - .
    assert all(label in gallery for label in labels), gallery
    page.locator("#aug-edit-pick").get_by_text(labels[0]).wait_for(timeout=240_000)
    picker = page.locator("#aug-edit-pick").inner_text()
    assert all(label in picker for label in labels), picker
    page.screenshot(path=str(tmp_path / "example.png"), full_page=True)


def test_empty_tables_say_what_to_do(browser, app_server):
    page = open_page(browser, app_server["url"])
    table = page.locator("#aug-table").inner_text()
    assert "No scores yet" in table and "press Evaluate" in table
    headers = [h.strip() for h in page.locator("#aug-table [role=columnheader]").all_inner_texts()]
    assert not any(h in ("1", "2", "3") for h in headers), headers


def test_status_area_names_a_missing_model_and_clears_when_a_working_one_is_picked(browser, app_server, tmp_path):
    """Pick a CLIP model whose weights the server lacks: the status area says so with the command that
    provides them, Evaluate leaves no error toast, and picking a working model clears it."""
    page = open_page(browser, app_server["url"])
    status = page.locator("#aug-status")
    assert "could not be loaded" not in status.inner_text()
    page.get_by_text("Advanced options").click()
    page.locator("#aug-clip-model input").click()
    page.get_by_role("option", name="ViT-B-16/openai").click()
    page.wait_for_function("document.querySelector('#aug-status').innerText.includes('could not be loaded')",
                           timeout=120_000)
    text = status.inner_text()
    assert "augclip-demo download --clip ViT-B-16/openai" in text and "AUGCLIP_CLIP_CHECKPOINT" in text, text
    assert len([line for line in text.splitlines() if line.strip()]) <= 6, text
    page.screenshot(path=str(tmp_path / "status-missing-model.png"), full_page=True)
    # Evaluate with the broken model: nothing scored, no toast, the status area still says why.
    page.locator("#aug-source input[type=file]").set_input_files(str(FLOWER / "source.png"))
    page.locator("#aug-edits input[type=file]").set_input_files([str(p) for p in EDITS])
    page.locator("#aug-target textarea").fill("a pink dahlia flower")
    page.locator("#aug-src-attrs textarea").fill("\n".join(SRC_ATTRS))
    page.locator("#aug-tgt-attrs textarea").fill("\n".join(TGT_ATTRS))
    page.locator("#aug-evaluate").click()
    page.wait_for_timeout(3000)
    assert page.locator(".toast-body").count() == 0 and page.get_by_text("Cannot do that").count() == 0
    assert "could not be loaded" in status.inner_text() and "No scores yet" in page.locator("#aug-table").inner_text()
    assert "Traceback" not in page.content()
    # Back to a model that works: the red panel goes.
    page.locator("#aug-clip-model input").click()
    page.get_by_role("option", name="random:tiny").click()
    page.wait_for_function("!document.querySelector('#aug-status').innerText.includes('could not be loaded')",
                           timeout=120_000)
    assert page.locator("#aug-status .aug-error").count() == 0
    page.locator("#aug-evaluate").click()
    wait_for_rows(page, 2)
    page.screenshot(path=str(tmp_path / "status-cleared.png"), full_page=True)
    print(f"\nscreenshots: {tmp_path}")


def test_a_bad_input_shows_a_message_not_a_traceback(browser, app_server):
    page = open_page(browser, app_server["url"])
    page.locator("#aug-evaluate").click()
    toast = page.get_by_text("Upload a source image first")
    toast.wait_for(timeout=60_000)
    assert "Traceback" not in page.content()


def test_batch_tab_runs_the_shipped_examples(browser, app_server, tmp_path):
    """Batch tab: load the shipped manifest and zip with one button, run, read the tables."""
    page = open_page(browser, app_server["url"])
    page.get_by_role("tab", name="Batch").click()
    page.locator("#aug-batch-example").click()
    # Gradio shows a file's stem and extension in separate elements.
    page.wait_for_function("document.querySelector('#aug-batch-zip').innerText.includes('examples')")
    page.locator("#aug-batch-run").click()
    page.wait_for_function("document.querySelector('#aug-batch-summary').innerText.includes('item(s) scored')",
                           timeout=240_000)
    shipped = len((EXAMPLES / "manifest.jsonl").read_text().splitlines())  # 4 pictures, 3 world scenes
    assert shipped == 7 and f"{shipped} item(s) scored, 0 failed" in page.locator("#aug-batch-summary").inner_text()
    protocol = [row.locator("[role=gridcell]").all_inner_texts() for row in
                page.locator("#aug-batch-protocol [role=row]").all()]
    protocol = [cells for cells in protocol if cells]
    assert [cells[0].strip() for cells in protocol][:2] == ["AugCLIP", "CLIPdir"]
    # Every AccBoth cell is a figure in [0, 1] with its confidence interval.
    for cells in protocol:
        value = float(cells[1].split()[0])
        assert 0.0 <= value <= 1.0 and "[" in cells[1]
    page.wait_for_function("document.querySelector('#aug-batch-files').innerText.includes('examples-protocol')")
    page.screenshot(path=str(tmp_path / "batch-1366x768.png"), full_page=True)


def test_batch_stop_keeps_what_is_scored_and_run_goes_on_from_there(browser, app_server, tmp_path):
    """Batch tab: Stop shows while a run goes and goes after a refusal; it stops the run with a notice, and Run on
    the same files resumes (the summary counts the kept items, and kept + newly scored = the whole manifest)."""
    import json
    import re
    import zipfile

    # about 35 s of scoring on a quiet 2-core machine: Stop lands within a second of the first progress (below),
    # and the resumed run scores the rest, so fewer items keep the test short
    items = 4000
    attrs = {"source": ["orange dahlia"], "target": ["pink dahlia"]}
    manifest = tmp_path / "long.jsonl"
    manifest.write_text("".join(json.dumps({"id": f"i{n}", "source": "src.png", "target_text": "a pink dahlia",
                                            "attributes": attrs, "edits": [{"path": "edit.png"}]}) + "\n"
                                for n in range(items)))
    with zipfile.ZipFile(tmp_path / "images.zip", "w") as archive:
        archive.write(FLOWER / "source.png", "src.png")
        archive.write(FLOWER / "well_edited.png", "edit.png")
    page = open_page(browser, app_server["url"])
    page.get_by_role("tab", name="Batch").click()
    page.locator("#aug-batch-run").click()  # nothing uploaded: refused, and Stop goes again
    page.get_by_text("Upload a manifest first").first.wait_for()
    page.locator("#aug-batch-stop").wait_for(state="hidden")
    # An earlier, finished run (the shipped examples): after Stop, none of its results may stay on the page.
    page.locator("#aug-batch-example").click()
    page.wait_for_function("document.querySelector('#aug-batch-zip').innerText.includes('examples')")
    page.locator("#aug-batch-run").click()
    page.wait_for_function("document.querySelector('#aug-batch-files').innerText.includes('examples-protocol')",
                           timeout=300_000)
    for upload in ("#aug-batch-manifest", "#aug-batch-zip"):  # the examples' files out of both uploads
        page.locator(upload).get_by_role("button", name=re.compile("clear", re.IGNORECASE)).first.click()
        page.locator(f"{upload} input[type=file]").wait_for(state="attached")
    page.locator("#aug-batch-manifest input[type=file]").set_input_files(str(manifest))
    page.locator("#aug-batch-zip input[type=file]").set_input_files(str(tmp_path / "images.zip"))
    # both uploads done (Run during an upload reads no file): each box shows its file's name
    page.wait_for_function("document.querySelector('#aug-batch-manifest').innerText.includes('long')"
                           " && document.querySelector('#aug-batch-zip').innerText.includes('images')")
    stop = page.locator("#aug-batch-stop")
    stop.wait_for(state="hidden")  # nothing runs now (the examples' run has ended)
    page.locator("#aug-batch-run").click()
    stop.wait_for(state="visible")
    # Stop is pressed in the page's own script the moment the progress text says items are scored (not while the
    # zip is unpacked). A Playwright click waits for the button to be stable first, and on a busy 2-core machine
    # (the run, the other test worker, the browser) that wait once outlasted a whole 10,000-item run (90 s): the
    # click then found the run ended, and nothing was stopped.
    page.wait_for_function("""() => {
        if (!/\\d+\\/\\d+ items scored/.test(document.querySelector('#aug-batch-summary').innerText)) return false;
        const stop = document.querySelector('#aug-batch-stop');
        if (!stop || stop.offsetParent === null) return false;  // shown only while the run goes
        stop.click();
        return true;
    }""", polling=100, timeout=120_000)
    # The stopped run's kept items: its summary, its rows and its downloads (none of the examples' run).
    page.wait_for_function("document.querySelector('#aug-batch-summary').innerText.includes('Stopped:')",
                           timeout=180_000)
    stop.wait_for(state="hidden")
    shown = page.locator("#aug-batch-summary").inner_text()
    stopped_at = int(re.search(r"Stopped: (\d+) item\(s\) scored", shown).group(1))
    assert 0 < stopped_at < items and "again on this page to go on" in shown, shown
    page.wait_for_function("document.querySelector('#aug-batch-files').innerText.includes('long-results')")
    assert "examples" not in page.locator("#aug-batch-files").inner_text()
    ids = {c.strip() for c in page.locator("#aug-batch-scores [role=gridcell]").all_inner_texts()}
    assert "i0" in ids and not ids & {"flower-pink", "world-recolour"}, ids
    page.screenshot(path=str(tmp_path / "batch-stopped.png"), full_page=True)
    shutil.copyfile(tmp_path / "batch-stopped.png", artifacts_folder("batch") / "batch-stopped.png")
    page.locator("#aug-batch-run").click()  # the same files and choices: goes on from where it stopped
    page.wait_for_function("document.querySelector('#aug-batch-summary').innerText.includes('Resumed:')",
                           timeout=600_000)  # (the stopped run's summary also says "item(s) scored")
    summary = page.locator("#aug-batch-summary").inner_text()
    kept = int(re.search(r"Resumed: (\d+) item", summary).group(1))
    scored = int(re.search(r"(\d+) item\(s\) scored, 0 failed", summary).group(1))
    assert kept == stopped_at and kept + scored == items, summary  # the kept items the page showed
    stop.wait_for(state="hidden")
    page.screenshot(path=str(tmp_path / "batch-resumed.png"), full_page=True)
    print(f"\nscreenshots: {tmp_path}")
