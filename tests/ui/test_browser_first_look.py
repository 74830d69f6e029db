"""What a first look shows (issue 41, points 5, 7 and 9), in a real browser against ``python app.py`` started as
a newcomer starts it (no weights, no hub: :func:`tests.ui.test_first_contact.bare_app`), then in the demo.

One page load per test, several checks each. Screenshots go to ``test-artifacts/first-look/``.
"""

from __future__ import annotations

import re

import pytest

from tests.support import artifacts_folder
from tests.ui.test_browser import (
    pytestmark,  # noqa: F401 - browser and slow, skipped without Chromium
    wait_for_pictures,
)
from tests.ui.test_first_contact import bare_app  # noqa: F401 - the newcomer's server, shared by this module

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def shots():
    return artifacts_folder("first-look")


def _page(browser, url: str, viewport: dict[str, int], **options):
    page = browser.new_page(viewport=viewport, **options)
    page.set_default_timeout(240_000)  # a loaded 2-core machine
    page.goto(url)
    page.locator("#aug-evaluate").wait_for()
    return page


def _demo(page) -> None:
    """Press the demo button and wait for its scores (five edits of the world example)."""
    page.locator("#aug-demo").click()
    page.wait_for_function("document.querySelectorAll('#aug-table [role=gridcell]').length >= 5 * 7")


def _box(page, selector: str) -> dict[str, float]:
    return page.locator(selector).first.bounding_box()


def test_a_phone_sees_the_demo_button_and_one_panel_that_holds_its_text(browser, bare_app, shots):  # noqa: F811
    page = _page(browser, bare_app["url"], PHONE, is_mobile=True, has_touch=True)
    page.locator("#aug-status-error").wait_for()
    page.wait_for_function("document.querySelector('#aug-note-scores-evaluate')?.innerText.includes('No weights')")
    page.screenshot(path=str(shots / "phone-first-screen.png"))
    page.screenshot(path=str(shots / "phone-no-weights.png"), full_page=True)
    button = _box(page, "#aug-demo")
    assert button["y"] + button["height"] <= PHONE["height"], button  # on the first screen
    # the panel's text stays inside its border: nothing in it reaches past its right edge
    overflow = page.evaluate("""() => { const panel = document.querySelector('#aug-status-error');
        const edge = panel.getBoundingClientRect().right;
        return [...panel.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > edge + 0.5)
                                               .map(e => e.textContent.slice(0, 40)); }""")
    assert overflow == [], overflow
    # the warning once in the panel and once beside Evaluate, not beside every control
    shown = page.evaluate("""() => [...document.querySelectorAll('.aug-needs, #aug-status-error')]
        .filter(e => e.offsetParent !== null && /no (usable )?weights/i.test(e.innerText)).length""")
    assert shown == 2, shown

    _demo(page)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "phone-demo-first-screen.png"))
    warnings = page.evaluate("""() => [...document.querySelectorAll('.aug-untrained, .aug-demo-on')]
        .filter(e => e.offsetParent !== null).map(e => e.getBoundingClientRect().height)""")
    assert len(warnings) == 1 and warnings[0] < 120, warnings  # one banner, a few lines, opened for more
    assert "TOY DEMO" in page.locator("#aug-demo-on").inner_text()
    # the score table is wider than the phone: it says it scrolls
    hint = page.evaluate("getComputedStyle(document.querySelector('#aug-table'), '::before').content")
    assert "Swipe the table sideways" in hint, hint
    page.locator("#aug-table").scroll_into_view_if_needed()
    page.locator("#aug-table").screenshot(path=str(shots / "phone-score-table.png"))
    page.close()


def _header_lines(page, table: str) -> dict[str, int]:
    """Each header of ``table``: how many lines it takes."""
    return page.evaluate(f"""() => Object.fromEntries([...document.querySelectorAll('{table} th .header')].map(e =>
        [e.innerText.trim(), Math.round(e.getBoundingClientRect().height
                                        / parseFloat(getComputedStyle(e).lineHeight))]))""")


def test_the_results_say_what_they_show(browser, bare_app, shots):  # noqa: F811
    page = _page(browser, bare_app["url"], {"width": 1366, "height": 900})
    # Study tab without AUGCLIP_STUDY_OPERATOR_TOKEN: it explains the CLI, no control shows
    page.get_by_role("tab", name="Study").click()
    page.locator("#study-off").wait_for()
    off = page.locator("#study-off").inner_text()
    assert "AUGCLIP_STUDY_OPERATOR_TOKEN is not set" in off and "study create" in off, off
    assert not page.locator("#study-operator-token").is_visible() and not page.locator("#study-show").is_visible()
    page.screenshot(path=str(shots / "study-tab-no-token.png"), full_page=True)
    page.get_by_role("tab", name="Evaluate").first.click()
    # HATIE's components before a run: a sentence, not Gradio's "1 2 3" headers
    page.get_by_role("tab", name="HATIE").click()
    assert "No components yet" in page.locator("#aug-hatie-components").inner_text()
    assert _header_lines(page, "#aug-hatie-components").keys() <= {""}
    # the edit mask's label stays above its upload prompt
    page.get_by_text("Advanced options (AugCLIP changes").click()
    label = _box(page, "#aug-edit-mask label")
    for part in ("[data-testid=upload-icon]", ".prompt"):  # what the upload area shows, each below the label
        shown = page.locator(f"#aug-edit-mask {part}")
        if shown.is_visible():
            box = shown.bounding_box()
            assert label["y"] + label["height"] <= box["y"] + 1, (part, label, box)
    page.locator("#aug-edit-mask").screenshot(path=str(shots / "edit-mask.png"))

    _demo(page)
    # BPM: the headline names the picked edit and gives its value; it follows another pick
    page.get_by_role("tab", name="BPM").click()
    page.wait_for_function("document.querySelector('#aug-bpm-table').innerText.includes('S_semantic')")
    rows = {cells[0]: cells[1:] for cells in (
        [c.strip() for c in row.locator("[role=gridcell]").all_inner_texts()]
        for row in page.locator("#aug-bpm-table [role=row]").all()) if cells}
    headers = [h.strip() for h in page.locator("#aug-bpm-table th .header").all_inner_texts()]
    bpm = dict(zip(headers[1:], rows["BPM"]))

    def headline() -> str:
        return page.locator("#aug-bpm-info b").first.inner_text()

    picked = page.locator("#aug-edit-pick input:checked").evaluate("e => e.value")
    assert headline().startswith(f"{picked}: ") and f"BPM {bpm[picked]} (" in headline(), (headline(), picked, bpm)
    other = next(label for label in bpm if label != picked)
    page.locator("#aug-edit-pick label", has_text=other).click()
    page.wait_for_function(f"document.querySelector('#aug-bpm-info b')?.innerText.startsWith({other + ': '!r})")
    assert f"BPM {bpm[other]} (" in headline(), (headline(), other, bpm)
    page.screenshot(path=str(shots / "bpm-tab.png"), full_page=True)
    # headers break between words only: no more lines than words
    lines = _header_lines(page, "#aug-bpm-table")
    assert all(count <= len(name.split()) for name, count in lines.items()), lines
    # gallery captions are whole (not cut with an ellipsis)
    cut = page.evaluate("""() => [...document.querySelectorAll('#aug-gallery .caption-label, #aug-bpm-gallery .caption-label')]
        .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)""")
    assert cut == [], cut
    # the UMAP view's legend names the dashed lines
    page.get_by_role("tab", name="Hyperplane views").click()
    page.locator("#aug-umap .legendtext").first.wait_for()
    legend = page.locator("#aug-umap .legendtext").all_text_contents()  # SVG text: no innerText
    assert any(re.match(r"dashed: an edit's 2-D line", text) for text in legend), legend
    page.locator("#aug-umap").screenshot(path=str(shots / "umap.png"))
    # HATIE's tiles show the whole chart: each picture inside its tile, in its own proportions
    page.get_by_role("tab", name="HATIE").click()
    page.locator("#aug-hatie-run").click()
    wait_for_pictures(page, "#aug-hatie-bars", 5)
    tiles = page.evaluate("""() => [...document.querySelectorAll('#aug-hatie-bars .thumbnail-item')].map(t => {
        const img = t.querySelector('img'), a = img.getBoundingClientRect(), b = t.getBoundingClientRect();
        return {inside: a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5,
                ratio: (a.width / a.height) / (img.naturalWidth / img.naturalHeight)}; })""")
    assert tiles and all(t["inside"] and abs(t["ratio"] - 1) < 0.03 for t in tiles), tiles
    page.locator("#aug-hatie-bars").screenshot(path=str(shots / "hatie-bars.png"))
    page.locator("#aug-hatie-shares").screenshot(path=str(shots / "hatie-shares.png"))
    page.close()
