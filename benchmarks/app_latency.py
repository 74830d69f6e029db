"""Time the app from pressing Evaluate to the score table and to the full result, in a real browser.

    python benchmarks/app_latency.py [--clip-model random:ViT-B-16] [--edits 2] [--bpm]

Starts ``python app.py`` on a free port (CPU unless --device says otherwise), drives Debian's
Chromium with Playwright, uploads the flower example's source and its first N edits with the
example's attributes, presses Evaluate and reports the seconds until the table is filled, until
the relevancy maps are shown (the first full result), until no stage is pending (the UMAP view and
ranking charts included), until figures.zip is listed, and (with --bpm) until the BPM panel is drawn. The first
evaluation after start-up and a second one are both reported.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "assets" / "examples" / "flower-pink"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clip-model", default="random:ViT-B-16")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--edits", type=int, default=2)
    parser.add_argument("--bpm", action="store_true", help="switch BPM on (GroundingDINO + SAM)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for each step")
    args = parser.parse_args()
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_SERVER_NAME": "127.0.0.1",
           "AUGCLIP_CLIP_MODEL": args.clip_model, "AUGCLIP_DEVICE": args.device}
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        start = time.perf_counter()
        while True:
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        print(f"server up after {time.perf_counter() - start:.1f}s")
        edits = [str(p) for p in sorted(EXAMPLE.glob("*.png")) if p.name != "source.png"][: args.edits]
        attrs = json.loads((EXAMPLE / "attributes.json").read_text())
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                                 args=["--headless", "--no-sandbox", "--disable-gpu",
                                                       "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            page.set_default_timeout(args.timeout * 1000)
            page.goto(url)
            page.locator("#aug-evaluate").wait_for()
            page.wait_for_function("!document.body.innerText.includes('loading\u2026')")  # model loaded
            print(f"page ready (model loaded) after {time.perf_counter() - start:.1f}s", flush=True)
            page.locator("#aug-source input[type=file]").set_input_files(str(EXAMPLE / "source.png"))
            page.locator("#aug-edits input[type=file]").set_input_files(edits)
            page.locator("#aug-target textarea").fill("a pink dahlia flower")
            page.locator("#aug-source-text textarea").fill("an orange dahlia flower")
            page.locator("#aug-instruction textarea").fill("make the flower pink")
            page.locator("#aug-src-attrs textarea").fill("\n".join(attrs["source_attributes"]))
            page.locator("#aug-tgt-attrs textarea").fill("\n".join(attrs["target_attributes"]))
            page.wait_for_function(f"document.querySelectorAll('#aug-gallery img').length >= {len(edits)}")
            if args.bpm:
                page.get_by_text("Advanced options").click()
                page.locator("#aug-bpm-on input[type=checkbox]").check()
            for attempt in ("first evaluation", "second evaluation"):
                t0 = time.perf_counter()
                page.locator("#aug-evaluate").click()
                # While any event of the chain (scores -> explanations -> BPM) runs, Gradio marks its outputs
                # ".pending"; the table's own status tracker is its ".wrap.default" (cells have ".wrap" too).
                with contextlib.suppress(PlaywrightTimeout):
                    page.wait_for_function("!!document.querySelector('.pending')", timeout=10_000)
                busy = "document.querySelector('#aug-table .wrap.default:not(.hide)')"
                page.wait_for_function(
                    f"document.querySelectorAll('#aug-table [role=gridcell]').length >= {len(edits) * 7} && !{busy}")
                table = time.perf_counter() - t0
                page.wait_for_function("!!document.querySelector('#aug-map-augclip img')")
                maps = time.perf_counter() - t0
                page.wait_for_function("!!document.querySelector('#aug-map-augclip img')"
                                       " && !document.querySelector('.pending')")
                full = time.perf_counter() - t0
                page.wait_for_function("!!document.querySelector(\"#aug-downloads a[href*='figures.zip']\")")
                zipped = time.perf_counter() - t0
                line = (f"{attempt}: table {table:.1f}s, relevancy maps shown {maps:.1f}s, every stage shown "
                        f"{full:.1f}s, figures.zip {zipped:.1f}s")
                if args.bpm:
                    page.wait_for_function(
                        f"document.querySelectorAll('#aug-bpm-gallery img').length >= {3 * len(edits)}")
                    line += f" (BPM included: {time.perf_counter() - t0:.1f}s)"
                print(line, flush=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
