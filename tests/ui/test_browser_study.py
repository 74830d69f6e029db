"""The rater page and the Study tab in a real browser (Playwright + Chromium) against ``python app.py``.

Screenshots go to ``test-artifacts/study/`` (``AUGCLIP_TEST_ARTIFACTS`` moves the root).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from augclip_demo.study import store
from tests.study.helpers import (
    MODELS,
    OPERATOR_TOKEN,
    answer_all,
    start_study_app,
    write_results,
    write_study_manifest,
)
from tests.support import artifacts_folder
from tests.ui.test_browser import pytestmark as browser_marks

pytestmark = browser_marks  # browser, slow, skipped without Chromium


@pytest.fixture(scope="module")
def artifacts() -> Path:
    return artifacts_folder("study")


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study-app")
    manifest = write_study_manifest(tmp / "data", n_items=3)
    db = tmp / "s.sqlite3"
    store.create_study(db, "pairs", manifest, questions=["text"], repeats=1, title="Which edit is better?")
    store.create_study(db, "ratings", manifest, kind="rating", per_rater=3)
    # results of the manifest for the Explore tab (its "Make a study from this slice")
    explored = write_results(manifest, {"clip_i": {f"item-{i}": [0.3, 0.2, 0.1] for i in range(3)}},
                             tmp / "explored.jsonl")
    app = start_study_app(tmp, db, extra={"AUGCLIP_EXPLORE_FILES": f"{explored}={manifest}"})
    yield {"url": app.url, "db": db, "manifest": manifest}
    app.stop()


def wait_for_task(page, position_not=None):
    """The shown task's position, once its pictures are in (the page's strict CSP forbids eval, so the waits
    use locators, not wait_for_function)."""
    if position_not is None:
        page.locator("body[data-position]").wait_for(state="attached", timeout=60_000)
    else:
        page.locator(f"body[data-position]:not([data-position='{position_not}'])").wait_for(state="attached",
                                                                                            timeout=60_000)
    return page.locator("body").get_attribute("data-position")


def progress_is(page, text):
    expect(page.locator("#progress")).to_have_text(text, timeout=60_000)


def test_keyboard_answers_and_resume_after_reload(browser, studies, artifacts):
    db = studies["db"]
    rater, = store.add_raters(db, "pairs", labels=["keyboard"])
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(studies["url"] + "study/rate#t=" + rater.token)
    first = wait_for_task(page)
    assert page.locator("#progress").inner_text() == "0 / 10"
    page.screenshot(path=str(artifacts / "rater-pair-1280x800.png"), full_page=True)
    text = page.locator("body").inner_text()
    assert not any(name in text for name in MODELS)  # no model names, no metric, no other answer
    assert all(page.locator(f"#img-{slot}").evaluate("img => img.naturalWidth") > 0
               for slot in ("source", "left", "right"))
    left_path, _ = store.task_image(db, rater.token, int(first), "left")
    page.keyboard.press("ArrowLeft")  # question 1 (overall): left
    page.keyboard.press("ArrowDown")  # question 2 (text): tie, then the answer is sent
    second = wait_for_task(page, position_not=first)
    progress_is(page, "1 / 10")
    data = store.load_study(db, "pairs")
    rows = {j.question: j for j in data.judgments if j.rater == "keyboard"}
    edits = data.lines[rows["overall"].item_id]["edits"]
    left_index = next(i for i, e in enumerate(edits) if studies["manifest"].parent / e["path"] == left_path)
    chosen = rows["overall"].edit_a if rows["overall"].answer == "a" else rows["overall"].edit_b
    assert chosen == left_index and rows["text"].answer == "tie"
    assert rows["overall"].elapsed_ms is not None and rows["overall"].elapsed_ms >= 0

    page.reload()  # resume: the same rater, the next unanswered task, the progress kept
    assert wait_for_task(page) == second
    assert page.locator("#progress").inner_text() == "1 / 10"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("t")
    progress_is(page, "2 / 10")
    page.close()


def test_a_phone_taps_through_the_ratings(browser, studies, artifacts):
    rater, = store.add_raters(studies["db"], "ratings", labels=["phone"])
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2)
    page = context.new_page()
    page.goto(studies["url"] + "study/rate#t=" + rater.token)
    try:
        wait_for_task(page)
    finally:
        page.screenshot(path=str(artifacts / "rater-rating-phone-390x844.png"), full_page=True)
    button = page.locator("#answer-overall-4").bounding_box()
    assert button["height"] >= 56 and button["width"] >= 44  # 56 px tall, as docs/study.md promises
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing wider than the phone
    shown = page.locator("body").get_attribute("data-position")
    for expected in ("1 / 3", "2 / 3"):
        page.locator("#answer-overall-4").tap()
        progress_is(page, expected)
        shown = wait_for_task(page, position_not=shown)  # the next pictures are in (no answer before them)
    page.keyboard.press("2")  # keys work on the same page
    page.locator("#message.done").wait_for(timeout=60_000)
    assert "Thank you" in page.locator("#message").inner_text()
    page.screenshot(path=str(artifacts / "rater-done-phone-390x844.png"), full_page=True)
    ratings = sorted(j.answer for j in store.load_study(studies["db"], "ratings").judgments if j.rater == "phone")
    assert ratings == ["2", "4", "4"]
    pairs_rater, = store.add_raters(studies["db"], "pairs", labels=["phone-pairs"])
    page.goto(studies["url"] + "study/rate#t=" + pairs_rater.token)
    page.reload()
    wait_for_task(page)
    page.screenshot(path=str(artifacts / "rater-pair-phone-390x844.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    left, right = page.locator("#img-left").bounding_box(), page.locator("#img-right").bounding_box()
    assert abs(left["y"] - right["y"]) < 2 and left["x"] < right["x"]  # the two edits side by side
    assert page.locator("#answer-overall-tie").bounding_box()["height"] >= 56
    context.close()


def test_no_answer_before_the_pictures_are_shown(browser, studies, artifacts):
    rater, = store.add_raters(studies["db"], "pairs", labels=["too-quick"])
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.route("**/study/api/image/**", lambda route: route.abort())  # the pictures never arrive
    page.goto(studies["url"] + "study/rate#t=" + rater.token)
    expect(page.locator("#answer-overall-left")).to_be_visible(timeout=60_000)
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowDown")
    page.locator("#answer-overall-right").click()
    page.locator("#answer-text-tie").click()
    page.wait_for_timeout(1500)  # an answer sent on 127.0.0.1 would be stored (and the progress 1 / 10) by now
    assert page.locator("#progress").inner_text() == "0 / 10"
    assert not [j for j in store.load_study(studies["db"], "pairs").judgments if j.rater == "too-quick"]
    page.unroute("**/study/api/image/**")
    page.reload()
    wait_for_task(page)
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowDown")
    progress_is(page, "1 / 10")
    rows = [j for j in store.load_study(studies["db"], "pairs").judgments if j.rater == "too-quick"]
    assert len(rows) == 2 and all(j.elapsed_ms is not None for j in rows)
    page.close()


def test_a_wrong_link_says_so(browser, studies, artifacts):
    page = browser.new_page(viewport={"width": 390, "height": 700})
    page.goto(studies["url"] + "study/rate#t=" + "z" * 32)
    expect(page.locator("#message")).to_contain_text("not valid", timeout=60_000)
    page.goto(studies["url"] + "study/rate")
    page.reload()
    expect(page.locator("#message")).to_contain_text("personal rating link", timeout=60_000)
    page.close()


def test_the_operator_tab_shows_the_agreement(browser, studies, artifacts):
    for rater in store.add_raters(studies["db"], "pairs", labels=["op-1", "op-2"]):
        answer_all(studies["db"], rater.token, lambda view: {"overall": "left", "text": "right"})
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(120_000)
    page.goto(studies["url"])
    page.get_by_role("tab", name="Study").click()
    page.locator("#study-operator-token input").fill(OPERATOR_TOKEN)
    page.locator("#study-operator-token input").press("Enter")  # the token checked: the server's studies listed
    page.locator("#study-report").get_by_text("studies on this server").wait_for()
    page.locator("#study-name input").click()
    options = page.get_by_role("option")
    expect(options.first).to_be_visible()
    assert {"pairs", "ratings"} <= {text.replace("\u2713", "").strip() for text in options.all_inner_texts()}
    page.screenshot(path=str(artifacts / "operator-tab-study-list-1366x900.png"), full_page=True)
    page.get_by_role("option", name="pairs", exact=True).click()
    page.get_by_role("button", name="Show agreement").click()
    page.locator("#study-report").get_by_text("Krippendorff's alpha").wait_for()
    page.screenshot(path=str(artifacts / "operator-tab-1366x900.png"), full_page=True)
    report = page.locator("#study-report").inner_text()
    assert "judgments (one per question answered) from" in report and "Bradley-Terry" in report
    # with the batch results of the study's manifest, each metric's agreement with the raters
    values = {"clip_i": {f"item-{i}": [0.3, 0.2, 0.1] for i in range(3)}}
    results = write_results(studies["manifest"], values, studies["db"].parent / "results.jsonl")
    page.locator("#study-results input[type=file]").set_input_files(str(results))  # its upload shows the report
    page.locator("#study-report").get_by_text("Metrics vs the raters' verdicts").wait_for()
    shown = page.locator("#study-report").inner_text()
    assert "CLIP-I" in shown and "UNTRAINED" in shown  # random:tiny results say so
    page.screenshot(path=str(artifacts / "operator-tab-with-results-1366x900.png"), full_page=True)
    # live view: with the refresh on, an answer given meanwhile appears without pressing anything
    page.locator("#study-live input").check()
    before = page.locator("#study-report").inner_text().split(" judgments")[0]
    late, = store.add_raters(studies["db"], "pairs", labels=["late"])
    answer_all(studies["db"], late.token, lambda view: {"overall": "tie", "text": "tie"})
    expect(page.locator("#study-report")).not_to_contain_text(before + " judgments", timeout=90_000)
    page.locator("#study-live input").uncheck()
    page.get_by_role("button", name="Add raters").click()
    page.locator("#study-report").get_by_text("Each link is shown once").wait_for()
    link = page.locator("#study-report code").first.inner_text()
    assert link.startswith(studies["url"] + "study/rate#t=")
    token = link.split("#t=")[1]
    assert store.rater_view(studies["db"], token).total == 10  # a working rater of the study
    page.get_by_role("button", name="Export").click()
    page.locator("#study-report").get_by_text("Exported").wait_for()
    links = page.locator("a[download]")
    expect(links.first).to_be_attached(timeout=60_000)
    names = " ".join(link.get_attribute("download") or link.inner_text() for link in links.all())
    assert "pairs-judgments.csv" in names and "pairs-overall.jsonl" in names
    page.locator("#study-operator-token input").fill("wrong-token-wrong-token")
    page.get_by_role("button", name="Show agreement").click()
    page.locator("#study-report").get_by_text("operator token is not right").wait_for()
    page.close()


def test_the_explore_tab_makes_a_study_from_its_slice(browser, studies, artifacts):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(120_000)
    page.goto(studies["url"])
    page.get_by_role("tab", name="Explore", exact=True).click()
    page.locator("#aug-explore-open").click()
    expect(page.locator("#aug-explore-info")).to_contain_text("3 records", timeout=120_000)
    page.get_by_text("Make a study from this slice (operator only)").click()
    page.locator("#aug-explore-study-token input").fill("wrong-token-wrong-token")
    page.locator("#aug-explore-study-name textarea, #aug-explore-study-name input").first.fill("from-slice")
    page.locator("#aug-explore-study-make").click()
    page.locator("#aug-explore-study-info").get_by_text("operator token is not right").wait_for()
    page.locator("#aug-explore-study-token input").fill(OPERATOR_TOKEN)
    page.locator("#aug-explore-study-make").click()
    page.locator("#aug-explore-study-info").get_by_text("Add raters in the Study tab").wait_for()
    page.screenshot(path=str(artifacts / "explore-study-from-slice-1366x900.png"), full_page=True)
    info = page.locator("#aug-explore-study-info").inner_text()
    assert "9 units (2afc)" in info and "9 edits of 3 items" in info, info  # the whole file: 3 pairs per item
    data = store.load_study(studies["db"], "from-slice")
    assert len(data.units) == 9 and data.study.repeats == 2
    page.close()
