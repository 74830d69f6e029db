"""The HATIE tab and the comparison grid in a real browser: each component's weight in its criterion and its
share of it are on the page (screenshots in the test's folder)."""

from __future__ import annotations

from tests.ui.test_browser import open_page, wait_for_rows
from tests.ui.test_browser import pytestmark as browser_marks

pytestmark = browser_marks


def test_hatie_breakdown_in_the_tab_and_the_comparison_grid(browser, app_server, tmp_path):
    page = open_page(browser, app_server["url"])
    page.get_by_text("make the flower pink").first.click()
    wait_for_rows(page, 4)
    page.get_by_role("tab", name="HATIE").click()
    page.locator("#aug-hatie-run").click()
    page.locator("#aug-hatie-shares img").first.wait_for(timeout=600_000)
    table = page.locator("#aug-hatie-components")
    table.get_by_text("weight in criterion").first.wait_for()
    text = table.inner_text()
    assert "share" in text and "%" in text and "appearance.clip.degradation" in text
    page.screenshot(path=str(tmp_path / "hatie-tab.png"), full_page=True)

    page.get_by_role("tab", name="Comparison").click()
    page.locator("#aug-comparison-refresh").click()
    grid = page.locator("#aug-comparison")
    grid.get_by_text("HATIE: each criterion's parts").first.wait_for(timeout=300_000)
    assert "Object Consistency" in grid.inner_text() and "% (w " in grid.inner_text()
    page.screenshot(path=str(tmp_path / "comparison.png"), full_page=True)

