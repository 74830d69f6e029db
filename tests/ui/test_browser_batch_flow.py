"""The Batch tab as a newcomer meets it with no weights and no network (a real browser against ``python app.py``
started with an empty cache and the hub offline): the note beside Run names the tab's own menu, Run with a model
without weights says so in the tab, the page's demo button moves the tab to the demo's model, and a finished run
opens in the Explore tab with its images in one click. Screenshots in ``test-artifacts/batch-flow/``."""

from __future__ import annotations

from tests.support import artifacts_folder
from tests.ui.test_browser import (
    open_page,
    pytestmark,  # noqa: F401 - browser and slow, skipped without Chromium
)
from tests.ui.test_first_contact import bare_app  # noqa: F401 - the app with the default models, no weights


def _wait_text(page, elem_id: str, needle: str, timeout: float = 120_000) -> str:
    page.wait_for_function(f"(document.querySelector('#{elem_id}')?.innerText || '').includes({needle!r})",
                           timeout=timeout)
    return page.locator(f"#{elem_id}").inner_text()


def test_batch_follows_the_demo_says_missing_weights_in_the_tab_and_opens_in_explore(browser, bare_app):  # noqa: F811
    shots = artifacts_folder("batch-flow")
    page = open_page(browser, bare_app["url"])
    page.get_by_role("tab", name="Batch").click()
    note = _wait_text(page, "aug-batch-needs", "augclip-demo download --clip ViT-B-16/openai")
    assert "pick shapes:tiny" in note and "demo button" not in note, note
    page.locator("#aug-batch-example").click()
    page.wait_for_function("document.querySelector('#aug-batch-zip').innerText.includes('examples')")
    page.locator("#aug-batch-run").click()
    panel = _wait_text(page, "aug-batch-summary", "this batch did not run")
    assert "augclip-demo download --clip ViT-B-16/openai" in panel and "pick shapes:tiny" in panel, panel
    red = page.locator("#aug-batch-summary blockquote")  # a Markdown quote, drawn as a red panel
    assert red.is_visible() and "rgb(192, 57, 43)" in red.evaluate("e => getComputedStyle(e).borderTopColor")
    assert page.locator(".toast-body").count() == 0  # said in the tab, no notice over the model menu
    page.screenshot(path=str(shots / "no-weights-batch.png"), full_page=True)

    page.locator("#aug-demo").click()  # the page's demo button: the Batch tab's model follows
    page.wait_for_function("document.querySelector('#aug-batch-clip input')?.value"
                           " === 'shapes:tiny'", timeout=60_000)
    page.wait_for_function("!(document.querySelector('#aug-batch-needs')?.innerText || '').trim()", timeout=60_000)
    page.get_by_role("tab", name="Batch").click()
    page.locator("#aug-batch-run").click()
    _wait_text(page, "aug-batch-files", "examples-protocol", timeout=600_000)
    summary = page.locator("#aug-batch-summary").inner_text()
    assert "7 item(s) scored" in summary and "shapes:tiny" in summary, summary
    assert page.locator("#aug-batch-summary blockquote").count() == 0  # the red panel went with the refusal
    page.screenshot(path=str(shots / "demo-batch.png"), full_page=True)

    page.locator("#aug-batch-explore").click()  # one click: the run in the Explore tab, with its images
    info = _wait_text(page, "aug-explore-info", "records")
    assert "7 records" in info and "no manifest given" not in info, info
    page.get_by_role("tab", name="Items").click()
    page.wait_for_function("document.querySelectorAll('#aug-explore-grid img').length > 0", timeout=120_000)
    page.screenshot(path=str(shots / "batch-in-explore.png"), full_page=True)
    page.locator("#aug-explore-grid img").first.click()
    page.wait_for_function("document.querySelectorAll('#aug-explore-item-images img').length > 1", timeout=120_000)
    page.locator("#aug-explore-to-evaluate").click()
    page.wait_for_function("document.querySelectorAll('#aug-source img').length > 0", timeout=120_000)
    assert page.locator(".toast-body").filter(has_text="not available").count() == 0
    page.screenshot(path=str(shots / "explained-in-evaluate.png"), full_page=True)
    print(f"\nscreenshots: {shots}")
