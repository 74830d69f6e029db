"""The MLLM judge in the app, in a real browser: ``python app.py`` with a judge endpoint configured (a real
chat server on 127.0.0.1), the switch under Advanced options, the judge's columns in the score table and
each rationale as the hover text of its score."""

from __future__ import annotations

import html
import os
import re

import pytest

from tests.support import ROOT, TINY, free_port
from tests.support.app_process import spawn_app
from tests.support.chat_server import ChatServer
from tests.support.judge_chat import judge_answer
from tests.ui.test_browser import EDITS, FLOWER, SRC_ATTRS, TGT_ATTRS, open_page, wait_for_rows

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def judged_app(tmp_path_factory):
    with ChatServer(judge_answer) as server:
        port = free_port()
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AUGCLIP_JUDGE_"))}
        env = {**inherited, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
               "AUGCLIP_CLIP_MODEL": TINY, "AUGCLIP_DEVICE": "cpu", "GRADIO_ANALYTICS_ENABLED": "False",
               "PYTHONPATH": str(ROOT), "AUGCLIP_JUDGE_BASE_URL": server.url, "AUGCLIP_JUDGE_MODEL": "app-judge",
               "AUGCLIP_JUDGE_SAMPLES": "2", "AUGCLIP_CACHE_DIR": str(tmp_path_factory.mktemp("judge-cache"))}
        app = spawn_app(env, tmp_path_factory.mktemp("judge-app") / "app.log", port)
        try:
            yield app.url, server
        finally:
            app.stop()


def test_switch_on_the_judge_and_read_its_columns_and_rationales(browser, judged_app, tmp_path):  # noqa: F811
    url, server = judged_app
    page = open_page(browser, url)
    page.locator("#aug-source input[type=file]").set_input_files(str(FLOWER / "source.png"))
    page.locator("#aug-edits input[type=file]").set_input_files([str(p) for p in EDITS])
    page.locator("#aug-target textarea").fill("a pink dahlia flower")
    page.locator("#aug-instruction textarea").fill("make the dahlia pink")
    page.locator("#aug-src-attrs textarea").fill("\n".join(SRC_ATTRS))
    page.locator("#aug-tgt-attrs textarea").fill("\n".join(TGT_ATTRS))
    page.wait_for_function("document.querySelectorAll('#aug-gallery img').length >= 2", timeout=60_000)
    page.locator("#aug-source img").wait_for(timeout=60_000)  # the source's upload done too
    page.get_by_text("Advanced options").click()
    page.locator("#aug-judge-on input[type=checkbox]").check()
    page.locator("#aug-evaluate").click()
    wait_for_rows(page, 2)
    page.locator("#aug-judge-table").wait_for(timeout=240_000)
    page.wait_for_function("document.querySelectorAll('#aug-table [role=columnheader]').length >= 9")
    headers = [h.strip() for h in page.locator("#aug-table [role=columnheader]").all_inner_texts()]
    assert {"Judge SC", "Judge PQ", "Judge overall"} <= set(headers), headers
    cells = page.locator("#aug-judge-table td[title]")
    titles = [html.unescape(t) for t in re.findall(r'title="([^"]*)"', page.locator("#aug-judge-table").inner_html())]
    assert cells.count() == 6 and "semantic answer for seed 0 | semantic answer for seed 1" in titles
    assert "6.50 ± 0.71" in page.locator("#aug-judge-table").inner_text()
    assert any("make the dahlia pink" in r.texts()[1] for r in server.requests)  # the instruction was judged
    page.screenshot(path=str(tmp_path / "judge.png"), full_page=True)
