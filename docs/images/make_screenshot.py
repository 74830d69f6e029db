"""Regenerate docs/images/app.png: the app with the tiny random model, one example evaluated.

    .venv/bin/python docs/images/make_screenshot.py

Starts ``python app.py`` on a free local port (AUGCLIP_CLIP_MODEL=random:tiny, so no weights are
needed and the page shows its UNTRAINED warning), drives Debian's Chromium through Playwright,
uploads the pink-dahlia example, presses Evaluate and saves the page once the table is filled.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLOWER = ROOT / "assets" / "examples" / "flower-pink"
OUT = Path(__file__).with_name("app.png")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    from playwright.sync_api import sync_playwright

    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "AUGCLIP_CLIP_MODEL": "random:tiny", "AUGCLIP_DEVICE": "cpu", "GRADIO_ANALYTICS_ENABLED": "False"}
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                time.sleep(1)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                                 args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1366, "height": 1240})
            page.set_default_timeout(240_000)
            page.goto(url)
            page.locator("#aug-evaluate").wait_for()
            page.locator("#aug-source input[type=file]").set_input_files(str(FLOWER / "source.png"))
            page.locator("#aug-edits input[type=file]").set_input_files(
                [str(FLOWER / name) for name in ("well_edited.png", "partial_edit.png", "excessively_modified.png")])
            page.locator("#aug-target textarea").fill("a pink dahlia flower")
            page.locator("#aug-source-text textarea").fill("an orange dahlia flower")
            page.locator("#aug-src-attrs textarea").fill("dahlia is orange\nround flower head\ndark green background")
            page.locator("#aug-tgt-attrs textarea").fill("dahlia is pink\npink petals")
            page.wait_for_function("document.querySelectorAll('#aug-gallery img').length >= 3")
            page.locator("#aug-evaluate").click()
            page.wait_for_function("document.querySelectorAll('#aug-table [role=gridcell]').length >= 21")
            time.sleep(30)  # the explanations run next, with a progress bar of their own: let them finish
            page.evaluate("window.scrollTo(0, 0)")
            time.sleep(1)
            table = page.locator("#aug-table").bounding_box()  # page top down to the score table
            page.screenshot(path=str(OUT), full_page=True,
                            clip={"x": 0, "y": 0, "width": 1366, "height": table["y"] + table["height"] + 16})
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(OUT)


if __name__ == "__main__":
    main()
