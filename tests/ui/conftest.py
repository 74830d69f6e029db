"""Fixtures of the app tests: one headless Chromium per test module (Playwright driving Debian's Chromium).

When a test that drives the browser fails, every page still open is saved as a screenshot in
``test-artifacts/failures/`` (``AUGCLIP_TEST_ARTIFACTS`` moves the root): what the page showed is what
the failure needs explained.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support import artifacts_folder

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )
        yield instance
        instance.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    browser = getattr(item, "funcargs", {}).get("browser")
    if report.when == "call" and report.failed and browser is not None:
        folder = artifacts_folder("failures")
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", item.nodeid.split("@")[0].removeprefix("tests/"))
        pages = [page for context in browser.contexts for page in context.pages]
        for number, page in enumerate(pages):
            path = folder / f"{stem}-{number}.png"
            try:
                page.screenshot(path=str(path), full_page=True, timeout=30_000)
            except Exception as exc:  # the page may be gone with the failure; the report says so
                report.sections.append(("screenshot", f"page {number}: no screenshot ({exc})"))
            else:
                report.sections.append(("screenshot", f"page {number}: {path}"))
    return report
