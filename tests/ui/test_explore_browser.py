"""The Explore tab in a real browser: open a constructed run the operator named, filter, sort, open an item,
download the report. Screenshots of every step go to ``test-artifacts/browser/explore-*.png``."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from augclip_demo.batch.agreement_tables import compute_agreement
from tests.explore.constructed import constructed_records, write_jsonl, write_manifest_with_images
from tests.support import ROOT, TINY, free_port
from tests.support.app_process import spawn_app
from tests.ui.test_browser import CHROMIUM
from tests.ui.test_inspection_walk import artifacts_dir

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed; .ci/run installs it")]


@pytest.fixture(scope="module")
def explore_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explore")
    records = constructed_records()
    manifest = write_manifest_with_images(records, folder / "bench")
    results = write_jsonl(records, folder / "runs" / "results.jsonl")
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "AUGCLIP_CLIP_MODEL": TINY,
           "AUGCLIP_DEVICE": "cpu", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(ROOT),
           "AUGCLIP_EXPLORE_FILES": f"{results}={manifest}"}
    app = spawn_app(env, folder / "app.log", port)
    yield {"url": app.url, "results": results, "folder": folder}
    app.stop()


def table(page, selector: str) -> list[list[str]]:
    """The rows of a Gradio dataframe (an ARIA grid), as cell texts."""
    rows = []
    for row in page.locator(f"{selector} [role=row]").all():
        cells = [c.strip() for c in row.locator("[role=gridcell]").all_inner_texts()]
        if cells:
            rows.append(cells)
    return rows


def wait_for_table(page, selector: str, ready, timeout_s: float = 120) -> list[list[str]]:
    """The table's rows once ``ready(rows)`` holds (the page answers asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = table(page, selector)
        if ready(rows) or time.monotonic() > deadline:
            return rows
        page.wait_for_timeout(250)


def pick(page, selector: str, option: str) -> None:
    page.locator(f"{selector} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def test_open_filter_sort_inspect_and_download_the_report(browser, explore_server, tmp_path):
    shots = artifacts_dir()
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(120_000)
    page.goto(explore_server["url"])
    page.get_by_role("tab", name="Explore", exact=True).click()
    assert str(explore_server["folder"]) not in page.content()  # the operator's paths never reach the page
    page.locator("#aug-explore-open").click()
    page.wait_for_function("document.querySelector('#aug-explore-board').innerText.includes('Kendall')")
    page.screenshot(path=str(shots / "explore-1-opened.png"), full_page=True)
    board = {row[1]: row for row in table(page, "#aug-explore-board")}
    assert {"A [untrained]", "B [untrained]", "C [untrained]"} <= set(board)
    assert "(#1)" in board["A [untrained]"][4]  # A has the highest mean AugCLIP in the constructed run
    page.locator("#aug-explore-save").click()  # the whole run, kept as slice "all" (compared with below)
    page.wait_for_function("document.querySelector('#aug-explore-saved input')?.value === 'all'")

    # a cell of the agreement matrix lists the items behind it: AugCLIP x L2 -> where their winners differ
    page.get_by_role("tab", name="Agreement", exact=True).click()
    matrix = page.locator("#aug-explore-matrix [role=row]").filter(has_text="AugCLIP").last
    matrix.locator("[role=gridcell]").nth(2).click()
    found = wait_for_table(page, "#aug-explore-found", lambda rows: any(row[0] == "toy-0" for row in rows))
    assert {"toy-0", "toy-1"} <= {row[0] for row in found} and "toy-2" not in {row[0] for row in found}
    page.screenshot(path=str(shots / "explore-1b-cell-items.png"), full_page=True)

    # below the metric-human table, `augclip-demo agreement`'s table of the whole run, as the command computes it
    page.get_by_role("tab", name="Agreement", exact=True).click()
    sets = wait_for_table(page, "#aug-explore-sets", lambda rows: any(row[0] == "all sets" for row in rows))
    report = compute_agreement([explore_server["results"]])
    assert sets == [[name, *row] for name in ("toy", "all sets") for row in report.table(name)[1]]
    assert "Best two by" in page.locator("#aug-explore-sets-notes").inner_text()
    page.screenshot(path=str(shots / "explore-1c-human-sets.png"), full_page=True)

    # filter: the toy dataset, AugCLIP >= 0.5
    pick(page, "#aug-explore-datasets", "toy")
    pick(page, "#aug-explore-range-metric", "augclip")
    page.locator("#aug-explore-low input").fill("0.5")
    page.locator("#aug-explore-name textarea, #aug-explore-name input").first.fill("toy, AugCLIP >= 0.5")
    page.locator("#aug-explore-apply").click()
    page.wait_for_function("document.querySelector('#aug-explore-slice-info').innerText.includes('0.5 <= augclip')")
    records = [r for r in constructed_records() if r["dataset"] == "toy" and r["status"] == "ok"]
    kept = [(r, e) for r in records for e in r["edits"] if e["metrics"]["augclip"] >= 0.5]
    assert f"({len(kept)} edits in the slice)" in page.locator("#aug-explore-slice-info").inner_text()
    page.screenshot(path=str(shots / "explore-2-filtered.png"), full_page=True)

    # the whole run beside the slice, in the leaderboard, the agreement tables and the grid
    pick(page, "#aug-explore-compare", "all")
    page.get_by_role("tab", name="Leaderboard", exact=True).click()
    board2 = wait_for_table(page, "#aug-explore-board2", lambda rows: any(r[1] == "m-gt [untrained]" for r in rows))
    assert {"A [untrained]", "m-gt [untrained]"} <= {row[1] for row in board2}  # trip's models: only the whole run
    assert "m-gt [untrained]" not in {row[1] for row in table(page, "#aug-explore-board")}
    page.screenshot(path=str(shots / "explore-2a-compared-leaderboard.png"), full_page=True)
    page.get_by_role("tab", name="Agreement", exact=True).click()
    matrix2 = wait_for_table(page, "#aug-explore-matrix2", lambda rows: [r[0] for r in rows] == ["AugCLIP", "L2"])
    matrix1 = table(page, "#aug-explore-matrix")
    assert [r[0] for r in matrix1] == ["AugCLIP", "L2"] and matrix1[0][2] != matrix2[0][2]  # other edits, other rho
    page.screenshot(path=str(shots / "explore-2b-compared-agreement.png"), full_page=True)

    # sort the grid by L2, lowest first
    page.get_by_role("tab", name="Items", exact=True).click()
    pick(page, "#aug-explore-sort", "L2")
    lowest = min(e["metrics"]["l2"] for _, e in kept)
    rows = wait_for_table(page, "#aug-explore-rows", lambda rows: rows and float(rows[0][5]) == round(lowest, 4))
    l2 = [float(row[5]) for row in rows]
    assert l2 == sorted(l2) and l2[0] == round(lowest, 4)
    rows2 = wait_for_table(page, "#aug-explore-rows2", lambda rows: len(rows) > 0)
    assert "trip" in {row[1] for row in rows2}  # the compared grid pages the whole run in the same order
    page.screenshot(path=str(shots / "explore-3-sorted.png"), full_page=True)

    # open the first item: its numbers are the record's, exactly
    first_id = rows[0][0]
    page.locator("#aug-explore-rows [role=gridcell]").first.click()
    try:
        page.wait_for_function(f"document.querySelector('#aug-explore-item-info')?.innerText.includes('{first_id}')",
                               timeout=60_000)
    finally:
        page.screenshot(path=str(shots / "explore-4-item.png"), full_page=True)
    record = next(r for r in records if r["id"] == first_id)
    shown = table(page, "#aug-explore-item-scores")
    assert [[float(row[3]), float(row[4])] for row in shown] == [
        [e["metrics"]["augclip"], e["metrics"]["l2"]] for e in record["edits"]]
    assert page.locator("#aug-explore-item-images img").count() == 4  # the source and three edits
    page.screenshot(path=str(shots / "explore-4-item.png"), full_page=True)

    # explain it in the Evaluate tab, with the run's model and options: new work there, the record stays as is
    page.locator("#aug-explore-to-evaluate").click()
    try:
        page.wait_for_function("document.querySelectorAll('#aug-gallery img').length >= 3", timeout=240_000)
    finally:
        page.screenshot(path=str(shots / "explore-5-evaluate.png"), full_page=True)
    assert page.locator("#aug-target textarea").input_value() == record["target_text"]
    assert page.locator("#aug-src-attrs textarea").input_value().splitlines() == \
        record["attributes"]["source_attributes"]
    page.locator("#aug-evaluate").click()
    page.wait_for_function("document.querySelectorAll('#aug-table [role=gridcell]').length >= 21", timeout=240_000)
    page.screenshot(path=str(shots / "explore-5-evaluate.png"), full_page=True)
    page.get_by_role("tab", name="Explore", exact=True).click()

    # the report of the slice, downloaded
    page.get_by_role("tab", name="Share", exact=True).click()
    page.locator("#aug-explore-report-btn").click()
    link = page.locator("#aug-explore-report a").first
    link.wait_for()
    with page.expect_download() as download:
        link.click()
    saved = tmp_path / "report.html"
    download.value.save_as(saved)
    text = saved.read_text(encoding="utf-8")
    assert "toy, AugCLIP &gt;= 0.5" in text and "Leaderboard" in text and "Kendall tau vs human ranks" in text
    assert "data:image/jpeg;base64," in text and "<script" not in text
    assert str(explore_server["folder"]) not in text
    page.screenshot(path=str(shots / "explore-6-share.png"), full_page=True)
    page.goto(saved.as_uri())  # the report alone, as a reader opens it
    page.screenshot(path=str(shots / "explore-7-report.png"), full_page=True)
