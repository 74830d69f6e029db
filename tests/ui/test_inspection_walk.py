"""The researcher's inspection flow in a real browser, on a shipped example, with a screenshot of every view.

Walks: example -> scores -> relevancy maps (two edits) -> interactive hyperplane views (hover, legend
toggle, another edit's fit) -> attribute rankings -> BPM -> comparison grid -> its HTML download ->
figures.zip. (One walk for every view of this example: each walk runs the example with BPM again.)
Checks what a reader needs: the edits' names are distinct everywhere, the texts of the plots that
the page can measure (titles, axis titles, tick labels, legend entries) do not overlap, the hover
names the point with its alpha and signed distance.

Screenshots go to ``test-artifacts/browser/`` at the repository root (``AUGCLIP_TEST_ARTIFACTS``
moves it): .ci/run leaves that folder on disk after the run, for CI to keep as artifacts.
"""

from __future__ import annotations

import io
import json
import re
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.support import artifacts_folder
from tests.ui.test_browser import CHROMIUM, open_page, read_table, wait_for_rows

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed; .ci/run installs it")]

EXAMPLE = "add a blue ball to the left of the red box"

# Every measurable text of a Plotly chart: titles, axis titles, tick labels, legend entries and title.
PLOT_TEXTS_JS = """(selector) => {
  const root = document.querySelector(selector);
  if (!root) return [];
  const nodes = root.querySelectorAll(
    '.gtitle, .xtitle, .ytitle, .xtick text, .ytick text, .legendtext, .legendtitletext');
  return Array.from(nodes).filter(n => n.textContent.trim() && n.getBoundingClientRect().width > 0)
    .map(n => { const r = n.getBoundingClientRect();
                return {text: n.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; });
}"""


def artifacts_dir() -> Path:
    return artifacts_folder("browser")


def overlaps(boxes: list[dict], tolerance: float = 0.5) -> list[tuple[str, str]]:
    found = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if (min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > tolerance
                    and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > tolerance):
                found.append((a["text"], b["text"]))
    return found


def check_plot(page, selector: str) -> list[dict]:
    """The chart is drawn, has a title and axis titles, and none of its measurable texts overlap."""
    page.locator(f"{selector} .js-plotly-plot .scatterlayer .points path").first.wait_for(timeout=120_000)
    boxes = page.evaluate(PLOT_TEXTS_JS, selector)
    texts = [b["text"] for b in boxes]
    assert any("g(x)" in t or "UMAP 1" in t for t in texts), texts
    assert len(boxes) >= 10, texts
    assert overlaps(boxes) == [], overlaps(boxes)
    return boxes


def legend_names(page, selector: str) -> list[str]:
    return page.locator(f"{selector} .legendtext").all_text_contents()


def visible_points(page, selector: str) -> int:
    return page.evaluate("""(s) => Array.from(document.querySelectorAll(s + ' .scatterlayer .trace'))
        .filter(t => getComputedStyle(t).opacity !== '0' && t.style.visibility !== 'hidden')
        .reduce((n, t) => n + t.querySelectorAll('.points path').length, 0)""", selector)


def test_the_whole_inspection_flow_reads_well(browser, app_server):
    shots = artifacts_dir()
    page = open_page(browser, app_server["url"])
    page.set_viewport_size({"width": 1440, "height": 900})
    page.get_by_text("Advanced options").click()
    page.locator("#aug-bpm-on input[type=checkbox]").check()
    page.get_by_text(EXAMPLE).first.click()
    wait_for_rows(page, 4)
    page.screenshot(path=str(shots / "01-scores.png"), full_page=True)
    rows = read_table(page)
    assert len(rows) == 4

    # Relevancy maps of the best edit, then of another one; the picker's names are distinct and numbered
    page.get_by_role("tab", name="Relevancy maps").click()
    for element in ("#aug-map-augclip img", "#aug-map-clip-t img", "#aug-map-clip-dir img"):
        page.locator(element).wait_for(timeout=240_000)
    picks = [t.strip() for t in page.locator("#aug-edit-pick label").all_inner_texts() if t.strip()]
    assert len(picks) == 4 and len(set(picks)) == 4, picks
    assert [p.split()[0] for p in picks] == ["E1", "E2", "E3", "E4"], picks
    page.screenshot(path=str(shots / "02-relevancy-best.png"), full_page=True)
    shown = page.locator("#aug-map-augclip img").get_attribute("src")
    page.locator("#aug-edit-pick").get_by_text("E4 excessively_modified").click()
    page.wait_for_function(f"document.querySelector('#aug-map-augclip img').src != {shown!r}")
    page.screenshot(path=str(shots / "03-relevancy-E4.png"), full_page=True)

    # Interactive hyperplane views: drawn, labels apart, hover and legend work
    page.get_by_role("tab", name="Hyperplane views").click()
    # the view follows the pick: redrawn for E4 (until then it may still show the best edit's fit)
    page.wait_for_function("(document.querySelector('#aug-exact .gtitle')?.textContent || '').includes('fit of E4')",
                           timeout=240_000)
    check_plot(page, "#aug-exact")
    # the UMAP view comes after numba's first compile, which a busy 2-core machine can take minutes to finish
    page.locator("#aug-umap .js-plotly-plot .scatterlayer .points path").first.wait_for(timeout=900_000)
    check_plot(page, "#aug-umap")
    title = page.locator("#aug-exact .gtitle").text_content()
    assert "fit of E4" in title, title
    legend = legend_names(page, "#aug-exact")
    edits_in_legend = [name for name in legend if re.match(r"E\d ", name)]
    assert len(edits_in_legend) == 4 and len(set(edits_in_legend)) == 4, legend
    page.locator("#aug-exact").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "04-hyperplane-exact.png"), full_page=True)
    # hover the source attributes' markers: the hover names the attribute, its alpha and signed distance
    text = ""
    markers = page.locator("#aug-exact .scatterlayer .trace").first.locator(".points path")
    for k in range(markers.count()):
        page.mouse.move(0, 0)  # the last marker's label gone first, so the wait below reads this marker's
        page.wait_for_function("!(document.querySelector('#aug-exact .hoverlayer')?.textContent || '')")
        box = markers.nth(k).bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_function("document.querySelector('#aug-exact .hoverlayer').textContent.includes('distance')")
        text = page.locator("#aug-exact .hoverlayer").text_content()
        if "alpha (Eq. 6)" in text:
            break
    assert re.match(r"S\d", text) and "alpha (Eq. 6)" in text and "signed distance g(x)/|w|" in text, text
    page.locator("#aug-exact").screenshot(path=str(shots / "05-hyperplane-exact-hover.png"))
    # a legend click hides the source attributes
    before = visible_points(page, "#aug-exact")
    page.locator("#aug-exact .legend .traces", has_text="source attributes (S)").locator(".legendtoggle").click()
    page.wait_for_function(f"""() => {{
        const t = Array.from(document.querySelectorAll('#aug-exact .scatterlayer .trace'));
        return t.reduce((n, x) => n + x.querySelectorAll('.points path').length, 0) < {before}; }}""")
    page.locator("#aug-exact").screenshot(path=str(shots / "06-hyperplane-exact-toggled.png"))
    page.locator("#aug-umap").scroll_into_view_if_needed()
    page.locator("#aug-umap").screenshot(path=str(shots / "07-hyperplane-umap.png"))

    # Attribute rankings
    page.get_by_role("tab", name="Attribute rankings").click()
    for element in ("#aug-rank-source img", "#aug-rank-target img", "#aug-alpha img"):
        page.locator(element).wait_for(timeout=120_000)
    page.screenshot(path=str(shots / "08-rankings.png"), full_page=True)

    # BPM (random region models: labelled untrained)
    page.get_by_role("tab", name="BPM").click()
    page.wait_for_function("document.querySelectorAll('#aug-bpm-gallery img').length >= 12", timeout=240_000)
    headers = page.locator("#aug-table [role=columnheader]").all_inner_texts()
    assert any(h.strip() == "BPM" for h in headers), headers
    assert page.locator("#aug-bpm-o2 textarea, #aug-bpm-o2 input").first.input_value() == "blue ball"
    assert "UNTRAINED" in page.locator("#aug-bpm-info").inner_text().upper()
    page.screenshot(path=str(shots / "09-bpm.png"), full_page=True)

    # Comparison grid: every edit side by side, names distinct, BPM regions and maps in it
    page.get_by_role("tab", name="Comparison").click()
    page.wait_for_function("document.querySelectorAll('#aug-comparison .col').length >= 5", timeout=120_000)
    labels = page.locator("#aug-comparison .col h2").all_inner_texts()
    assert labels[0] == "source" and len(set(labels[1:])) == 4, labels
    assert page.locator("#aug-comparison .verdict").inner_text().startswith("Verdict:")
    assert page.locator("#aug-comparison .tile").count() >= 4 * 6  # 3 maps + 3 BPM pictures per edit
    page.screenshot(path=str(shots / "10-comparison.png"), full_page=True)
    with page.expect_download(timeout=60_000) as download:
        page.locator("#aug-comparison-download").click()
    html_text = Path(download.value.path()).read_text(encoding="utf-8")
    assert "<!DOCTYPE html>" in html_text and not re.search(r"https?://|<script", html_text)
    (shots / "comparison.html").write_text(html_text, encoding="utf-8")

    # figures.zip is written once, after the last stage: it holds the figures and the report with BPM.
    link = page.locator("#aug-downloads a[href*='figures.zip']")
    link.wait_for(timeout=240_000)
    href = link.get_attribute("href")
    archive = zipfile.ZipFile(io.BytesIO(urllib.request.urlopen(urllib.parse.urljoin(app_server["url"], href)).read()))
    names = archive.namelist()
    assert "figures/E1_relevancy_augclip.png" in names and "figures/hyperplane_exact.png" in names, names
    report = json.loads(archive.read("report.json"))
    assert all(edit["metrics"].get("bpm") is not None for edit in report["edits"])
    print(f"\nscreenshots: {shots}")
