"""Each Batch-tab handler called as the page's events call it: the real app's context (built by build_app with
the tiny random CLIP), two of the shipped examples uploaded as a manifest and a zip, and what the page would
show checked against an independent computation (the batch runner and the protocol code run directly)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import zipfile
from pathlib import Path

import gradio as gr
import pytest

from augclip_demo.batch.protocol_tables import compute_protocols
from augclip_demo.batch.runner import BatchOptions, run_batch
from augclip_demo.config import Settings
from augclip_demo.ui import build_app, first_contact
from augclip_demo.ui.batch import handlers as on
from augclip_demo.ui.common import page_settings
from augclip_demo.ui.examples import EXAMPLES_DIR
from augclip_demo.ui.first_contact import readiness
from augclip_demo.ui.status import ModelStatus, model_status
from augclip_demo.ui.storage import WorkFolders
from tests.support import EXAMPLES, TINY
from tests.ui.test_app_batch import ITEMS, METRICS, example_manifest, example_zip
from tests.ui.test_evaluate_handlers import NO_WEIGHTS


@pytest.fixture(scope="module")
def ctx() -> on.BatchContext:
    """The context the page's Batch events are bound to."""
    return build_app(Settings.from_env(clip_model=TINY, device="cpu")).batch_context


@pytest.fixture()
def upload(tmp_path) -> tuple[str, str]:
    """Two of the shipped examples as a user uploads them: a manifest and a zip wrapping one folder."""
    return str(example_manifest(tmp_path)), str(example_zip(tmp_path, wrap="upload"))


def scored(ctx, manifest, images, metrics=METRICS, skip=False, clip=TINY) -> dict:
    return on.score_upload(ctx, manifest, images, metrics, "manual", clip, skip)


def message(info: pytest.ExceptionInfo) -> str:
    return str(info.value.message)


@pytest.mark.slow
def test_score_upload_shows_the_runners_scores_and_protocols(ctx, upload, tmp_path, tiny_encoder):
    swept = []
    own = dataclasses.replace(ctx, after_run=lambda: swept.append(True), folders=own_folders(tmp_path))
    out = scored(own, *upload)
    tab = ctx.tab
    assert set(out) == set(tab.run_outputs)
    assert "2 item(s) scored, 0 failed" in summary_text(out, tab) and "untrained" in summary_text(out, tab)
    assert swept == [True]  # the page's files were swept
    assert not list(own.folders.root.glob(f"augclip-batch-*/{on.RESUME_KEY_FILE}"))  # nothing left to resume
    # The same two items run here by the batch runner, from a folder of their own, and their protocols computed.
    folder = tmp_path / "direct"
    for item in ITEMS:
        shutil.copytree(EXAMPLES / item, folder / item)
    manifest = folder / "bench.jsonl"
    shutil.copyfile(upload[0], manifest)
    results = tmp_path / "direct-results.jsonl"
    run_batch(manifest, results, options=BatchOptions(metrics=METRICS, provider="manual"), encoder=tiny_encoder)
    direct = {(r["id"], e["name"]): e["metrics"] for r in map(json.loads, results.read_text().splitlines())
              for e in r["edits"]}
    frame = out[tab.scores].data  # a Styler: four decimals on the page, the numbers underneath
    assert len(frame) == 8 == len(direct)
    for row in frame.to_dict("records"):
        expected = direct[(row["id"], row["name"])]
        assert row["status"] == "ok" and row["error"] == ""
        for key, label in (("augclip", "AugCLIP"), ("clip_i", "CLIP-I"), ("l2", "L2")):
            assert row[label] == pytest.approx(expected[key], abs=1e-5)
    headers, rows = compute_protocols([results]).wide_table()
    assert out[tab.protocol]["headers"] == headers and any("AccBoth" in h for h in headers)
    assert [row[0] for row in out[tab.protocol]["data"]] == [row[0] for row in rows] == ["AugCLIP", "CLIP-I", "L2"]
    # The downloads: copies in which no server folder is named.
    names = sorted(Path(f).name for f in out[tab.files])
    assert names == ["bench-protocol.csv", "bench-protocol.json", "bench-results.csv", "bench-results.jsonl"]
    work_dir = Path(out[tab.files][0]).parents[1]
    assert work_dir.parent == own.folders.root  # under the page's work folders (the disk cap counts it)
    for file in out[tab.files]:
        assert str(work_dir) not in Path(file).read_text() and "/tmp/" not in Path(file).read_text()
    assert len(json.loads(Path(next(f for f in out[tab.files] if f.endswith(".jsonl"))).read_text()
                          .splitlines()[0])["edits"]) == 4


@pytest.mark.slow
def test_score_upload_skips_invalid_lines_when_asked_and_lists_them(ctx, tmp_path):
    good = json.loads((EXAMPLES / "manifest.jsonl").read_text().splitlines()[0])
    manifest = tmp_path / "broken.jsonl"
    manifest.write_text("\n".join([json.dumps(good), "{not json", json.dumps({**good, "id": "no-target",
                                                                              "target_text": ""})]) + "\n")
    images = str(example_zip(tmp_path, items=(good["id"],)))
    with pytest.raises(gr.Error) as refused:
        scored(ctx, str(manifest), images)
    assert "broken.jsonl: 2 problem(s)" in message(refused) and "line 2" in message(refused)
    out = scored(ctx, str(manifest), images, metrics=["clip_i"], skip=True)
    tab = ctx.tab
    text = summary_text(out, tab)
    assert "1 item(s) scored" in text and "2 invalid manifest line problem(s) skipped" in text
    assert set(out[tab.scores].data["id"]) == {good["id"]}
    assert list(out[tab.scores].data.columns) == [*on.SHOWN_COLUMNS, "CLIP-I", "why n/a", "error"]


def test_score_upload_refuses_missing_inputs_with_what_to_do(ctx, upload):
    manifest, images = upload
    for args, expected in (((None, images, METRICS), "Upload a manifest first"),
                           ((manifest, None, METRICS), "Upload a zip with the images"),
                           ((manifest, images, []), "Choose at least one metric")):
        with pytest.raises(gr.Error) as refused:
            scored(ctx, *args)
        assert expected in message(refused)


def test_score_upload_waits_for_a_running_batch_then_says_so(ctx, upload, monkeypatch):
    monkeypatch.setattr(on, "LOCK_WAIT_S", 0.05)  # the page waits 15 s
    assert on.BATCH_LOCK.acquire(timeout=1)
    try:
        with pytest.raises(gr.Error) as refused:
            scored(ctx, *upload)
    finally:
        on.BATCH_LOCK.release()
    assert "Another batch is still running" in message(refused)


def test_score_upload_fits_the_zip_in_the_room_left_under_the_disk_cap(ctx, upload, tmp_path):
    images = Path(upload[1])
    with zipfile.ZipFile(images) as archive:
        expanded = sum(info.file_size for info in archive.infolist())
    folders = WorkFolders(tmp_path / "work", max_bytes=expanded // 2)
    folders.root.mkdir()
    tight = dataclasses.replace(ctx, folders=folders)
    limits = on.zip_limits(tight)
    assert limits.max_total_bytes == folders.room() == expanded // 2
    assert limits.max_zip_bytes == ctx.settings.upload_max_zip_mb << 20
    with pytest.raises(gr.Error) as refused:
        scored(tight, *upload)
    assert "AUGCLIP_APP_DISK_MB" in message(refused) and "expands to" in message(refused)
    full = dataclasses.replace(tight, folders=WorkFolders(tmp_path / "work", max_bytes=0))
    with pytest.raises(gr.Error) as refused:
        scored(full, *upload)
    assert "The batch was refused: the server's space for uploads and results is full" in message(refused)


def test_a_run_of_the_same_request_resumes_its_folder_from_any_page_until_it_finishes_or_is_gone(ctx, tmp_path):
    own = dataclasses.replace(ctx, folders=own_folders(tmp_path))
    key = on.resume_key("digest", ["augclip"], "manual", TINY, False)
    first = on.resumable_folder(own, key, "session-a")
    assert first.is_dir() and first.parent == own.folders.root
    assert on.resumable_folder(own, key, "session-a") == first
    # Another page (or the same one after a server restart) with the same request takes the folder over ...
    restarted = dataclasses.replace(ctx, folders=WorkFolders(own.folders.root))
    assert on.resumable_folder(restarted, key, "session-b") == first
    assert on.resumable_folder(own, key, "session-b") == first
    assert own.folders.release("session-a") == 0 and first.is_dir()  # ... and owns it: a's end leaves it
    # Any other choice is another run.
    for other in (on.resume_key("digest", ["augclip"], "manual", TINY, True),
                  on.resume_key("digest", ["augclip", "l2"], "manual", TINY, False),
                  on.resume_key("other", ["augclip"], "manual", TINY, False)):
        assert on.resumable_folder(own, other, "session-b") != first
    # A finished run is not resumed; a new run of it starts in a new folder.
    on.finish_resumable(first)
    after = on.resumable_folder(own, key, "session-b")
    assert after != first and after.is_dir()
    assert own.folders.release("session-b") == 5 and not after.exists()  # the session's end deletes its folders
    assert on.resumable_folder(own, key, "session-c") not in (first, after)


def own_folders(tmp_path: Path) -> WorkFolders:
    """The app's work folders in a root of this test's own (no other test's runs to resume)."""
    root = tmp_path / "work"
    root.mkdir(exist_ok=True)
    return WorkFolders(root)


def test_upload_key_is_the_digest_of_the_files_bytes(upload, tmp_path):
    manifest, images = upload
    copy = tmp_path / "copy.zip"
    shutil.copyfile(images, copy)
    assert on.upload_key(manifest, images) == on.upload_key(manifest, str(copy))
    assert on.upload_key(manifest, images) != on.upload_key(images, manifest)
    with open(copy, "ab") as handle:
        handle.write(b"\0")
    assert on.upload_key(manifest, images) != on.upload_key(manifest, str(copy))


def test_show_needs_names_the_missing_weights_and_hides_when_nothing_lacks(ctx):
    tab = ctx.tab
    missing = page_settings(ctx.settings, ctx.clip_choices, NO_WEIGHTS)
    assert missing.clip_model == NO_WEIGHTS
    readiness(missing, background=False)
    model_status(missing, background=False)  # the check done, so the note says what it found
    note = on.show_needs(ctx, NO_WEIGHTS, ["augclip"])[tab.needs]
    assert note["visible"] is True and note["value"].count("aug-needs") == 1
    assert f"augclip-demo download --clip {NO_WEIGHTS}" in note["value"] and "a batch cannot run" in note["value"]
    # The untrained CLIP: every model random, BPM's and HATIE's too, so nothing lacks.
    demo = page_settings(ctx.settings, ctx.clip_choices, TINY)
    readiness(demo, background=False)
    model_status(demo, background=False)
    assert on.show_needs(ctx, TINY, ["augclip", "bpm", "hatie"])[tab.needs] == gr.update(value="", visible=False)
    # A model the page does not offer: no note (Run names the problem).
    assert on.show_needs(ctx, "not/a-model", ["augclip"])[tab.needs] == gr.update(value="", visible=False)


def test_load_example_files_brings_the_shipped_manifest_and_every_image(ctx):
    tab = ctx.tab
    out = on.load_example_files(ctx)
    manifest, images = Path(out[tab.manifest]), Path(out[tab.images])
    assert manifest.read_bytes() == (EXAMPLES_DIR / "manifest.jsonl").read_bytes()
    read = {line: json.loads(line) for line in (EXAMPLES_DIR / "manifest.jsonl").read_text().splitlines()}
    named = {r["source"] for r in read.values()} | {e["path"] for r in read.values() for e in r["edits"]}
    named |= {r[k] for r in read.values() for k in ("attributes", "edit_mask") if isinstance(r.get(k), str)}
    named |= {p for r in read.values() if r.get("object_masks") for part in
              [r["object_masks"]["source"], *r["object_masks"]["edits"]] if part for p in part.values()}
    shipped = {name: (EXAMPLES_DIR / name).read_bytes() for name in named}  # every file the manifest names
    with zipfile.ZipFile(images) as archive:
        assert {name: archive.read(name) for name in archive.namelist()} == shipped
    named = {edit["path"] for line in manifest.read_text().splitlines() for edit in json.loads(line)["edits"]}
    assert named <= set(shipped)
    assert on.load_example_files(ctx) == out  # made once
    shutil.rmtree(manifest.parent)  # swept away as an old temporary folder: made again
    again = on.load_example_files(ctx)
    assert again != out and Path(again[tab.images]).is_file()
    assert Path(again[tab.manifest]).read_bytes() == (EXAMPLES_DIR / "manifest.jsonl").read_bytes()


def test_stop_shows_before_the_run_goes_after_every_end_and_cancels_exactly_the_batch():
    """The Batch tab's events as the page receives them (the app's config): Run shows Stop, then runs the /batch
    event; Stop is hidden after it succeeds and after it fails (a refusal, a cancel); Stop cancels that event."""
    app = build_app(Settings.from_env(clip_model=TINY, device="cpu"))
    tab = app.batch_context.tab
    run_id, stop_id = tab.run_btn._id, tab.stop_btn._id
    deps = app.config["dependencies"]
    batch = next(d for d in deps if d["api_name"] == "batch")
    show = next(d for d in deps if d["id"] == batch["trigger_after"])
    assert show["targets"] == [(run_id, "click")] and show["outputs"] == [stop_id]
    after = [d for d in deps if d["trigger_after"] == batch["id"]]
    assert {(d["trigger_only_on_success"], d["trigger_only_on_failure"]) for d in after} == {(True, False), (False, True)}
    assert all(d["outputs"] == [stop_id] for d in after)
    cancelling = [d for d in deps if d["cancels"]]
    assert [(d["targets"], d["cancels"]) for d in cancelling] == [([(stop_id, "click")], [batch["id"]])]
    stopping = [d["outputs"] for d in deps if d["targets"] == [(stop_id, "click")] and d["outputs"]]
    assert stopping == [[stop_id, *(c._id for c in tab.run_outputs)]]  # then shows what the run kept


def test_stop_hides_itself_and_says_what_it_stopped_when_nothing_was_kept(ctx, monkeypatch):
    own = dataclasses.replace(ctx, runs={})
    tab = ctx.tab
    assert on.show_stop(own) == {tab.stop_btn: gr.update(visible=True)}
    assert on.hide_stop(own) == {tab.stop_btn: gr.update(visible=False)}
    # Stopped while still queued: no run of this session began.
    out = on.stop_run(own)
    assert out[tab.stop_btn] == gr.update(visible=False) and set(out) == {tab.stop_btn, *tab.run_outputs}
    assert summary_text(out, tab) == on._STOPPED_EARLY and out[tab.files] is None
    assert list(out[tab.scores].iloc[:, 0]) == [on._STOPPED_TABLE] == list(out[tab.protocol].iloc[:, 0])
    # A run whose worker has not ended yet: Stop says it is finishing, and shows no earlier results.
    monkeypatch.setattr(on, "STOP_WAIT_S", 0.01)
    own.runs[None] = on.BatchRun(["clip_i"])
    assert summary_text(on.stop_run(own), tab) == on._STILL_STOPPING
    own.runs[None].ended.set()  # ended without results (refused, or stopped while the zip was unpacked)
    assert summary_text(on.stop_run(own), tab) == on._STOPPED_EARLY
    on.show_stop(own)  # Run pressed again: the session's earlier run is not the one Stop shows
    assert own.runs == {}


class _StopAfterTheFirstItem:
    """The page's Stop, as the handler's CancelWatch sees it: set once the first item is scored."""

    event = threading.Event()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @classmethod
    def progress(cls, fraction: float, desc: str = "") -> None:
        if "items scored" in desc:
            cls.event.set()


@pytest.mark.slow
def test_stop_shows_the_stopped_runs_kept_items_not_the_earlier_runs_results(ctx, upload, tmp_path, monkeypatch):
    own = dataclasses.replace(ctx, runs={}, folders=own_folders(tmp_path))
    tab = ctx.tab
    earlier = on.score_upload(own, *upload, ["clip_i"], "manual", TINY, False)  # a finished run of two items
    assert "2 item(s) scored" in summary_text(earlier, tab)
    # A longer run: one example's images under 30 ids, stopped once its first item is scored.
    line = json.loads(Path(upload[0]).read_text().splitlines()[0])
    long = tmp_path / "long" / "long.jsonl"
    long.parent.mkdir()
    long.write_text("".join(json.dumps({**line, "id": f"copy{n}"}) + "\n" for n in range(30)))
    images = str(example_zip(long.parent, items=(line["id"],)))
    monkeypatch.setattr(on, "CancelWatch", _StopAfterTheFirstItem)
    _StopAfterTheFirstItem.event.clear()
    on.show_stop(own)
    on.score_upload(own, str(long), images, ["clip_i", "l2"], "manual", TINY, False,
                    progress=_StopAfterTheFirstItem.progress)
    shown = on.stop_run(own)
    kept = [json.loads(text) for text in Path(next(f for f in shown[tab.files] if f.endswith(".jsonl")))
            .read_text().splitlines()]
    assert 1 <= len(kept) < 30, len(kept)
    assert f"**Stopped: {len(kept)} item(s) scored, 0 failed** (of 30)" in summary_text(shown, tab)
    assert "run the same files with the same choices again" in summary_text(shown, tab).lower()
    frame = shown[tab.scores].data
    assert list(frame["id"]) == [r["id"] for r in kept for _ in r["edits"]]  # the kept items, not the earlier run's
    assert list(frame.columns) == [*on.SHOWN_COLUMNS, "CLIP-I", "L2", "why n/a", "error"]  # this run's metrics
    assert sorted(Path(f).name for f in shown[tab.files])[0] == "long-protocol.csv"
    # The same request again resumes after the kept items.
    monkeypatch.undo()  # the page's own watch (outside a Gradio request it never fires)
    resumed = on.score_upload(own, str(long), images, ["clip_i", "l2"], "manual", TINY, False)
    assert f"Resumed: {len(kept)} item(s)" in summary_text(resumed, tab) and "Stopped" not in summary_text(resumed, tab)
    assert len(resumed[tab.scores].data) == 30 * len(line["edits"])


def test_the_demo_button_sets_the_batch_tabs_clip_model_too(ctx):
    """The page's demo button (the Evaluate tab's demo) moves the Batch tab's CLIP model to the demo's."""
    assert on.follow_demo(ctx) == {ctx.tab.clip_model: gr.update(value=first_contact.DEMO_CLIP)}
    assert first_contact.DEMO_CLIP in ctx.clip_choices
    app = build_app(Settings.from_env(clip_model=TINY, device="cpu"))
    demo_id = next(b._id for b in app.blocks.values() if getattr(b, "elem_id", None) == "aug-demo")
    deps = app.config["dependencies"]
    batch_clip = app.batch_context.tab.clip_model._id
    assert any(d["targets"] == [(demo_id, "click")] and d["outputs"] == [batch_clip] for d in deps)
    # and the tab's note is redrawn on that change (its event has no trigger of its own: the inputs' changes)
    note = app.batch_context.tab.needs._id
    assert any(batch_clip in d["inputs"] and d["outputs"] == [note] for d in deps)


def test_the_batch_note_names_the_tabs_own_menu_not_the_hidden_demo_button(ctx):
    missing = page_settings(ctx.settings, ctx.clip_choices, NO_WEIGHTS)
    readiness(missing, background=False)
    model_status(missing, background=False)
    text = on.show_needs(ctx, NO_WEIGHTS, ["augclip"])[ctx.tab.needs]["value"]
    assert f"pick {first_contact.DEMO_CLIP}" in text and "this tab&#x27;s CLIP model" in text, text
    assert "demo button" not in text


def summary_text(out: dict, tab, refused: bool = False) -> str:
    """The summary's Markdown (the /batch answer: no HTML tag), a quote (the red panel) exactly when ``refused``."""
    text = out[tab.summary]
    assert isinstance(text, str) and "<" not in text, text
    lines = text.splitlines()
    assert all(line.startswith("> ") for line in lines) if refused else not any(line.startswith(">") for line in lines), text
    return text


def _refused_panel(out: dict, tab) -> str:
    assert set(out) == set(tab.run_outputs)
    for table in (tab.protocol, tab.scores):  # no earlier run's rows: the placeholder says why
        assert list(out[table].iloc[:, 0]) == [on._NOT_RUN_TABLE]
    assert out[tab.files] is None
    return summary_text(out, tab, refused=True)


def test_a_batch_with_a_model_without_weights_says_so_in_the_tab_without_a_notice(ctx, upload):
    tab = ctx.tab
    missing = page_settings(ctx.settings, ctx.clip_choices, NO_WEIGHTS)
    assert model_status(missing, background=False).state == "error"  # the page's check has run
    panel = _refused_panel(scored(ctx, *upload, clip=NO_WEIGHTS), tab)  # no gr.Error: returned, in the tab
    assert f"No weights for the CLIP model {NO_WEIGHTS}" in panel
    assert f"`augclip-demo download --clip {NO_WEIGHTS}`" in panel and "this batch did not run" in panel
    assert f"pick {first_contact.DEMO_CLIP}" in panel


def test_weights_found_missing_while_the_batch_loads_are_said_in_the_tab_too(ctx, upload, monkeypatch, tmp_path):
    """The page's check has not ended yet (the status still loading): the runner itself finds no weights."""
    other = next(c for c in ctx.clip_choices if c.endswith("/openai") and c != NO_WEIGHTS)
    monkeypatch.setattr(on, "model_status", lambda settings, **_: ModelStatus(spec=settings.clip_model))
    panel = _refused_panel(scored(dataclasses.replace(ctx, folders=own_folders(tmp_path)), *upload, clip=other), ctx.tab)
    assert panel.startswith("> This batch did not run")
    assert f"{other}: no usable weights here" in panel and "augclip-demo download" in panel
    assert "/tmp/" not in panel


def test_a_missing_score_reads_n_a_with_its_reason(tmp_path):
    """An empty metric cell (BPM waited for a parse) shows "n/a", as in the Evaluate tab, and the record's
    reason beside it; the results CSV carries the same reason."""
    from types import SimpleNamespace

    from augclip_demo.batch.results import export_csv

    why = "the instruction has no parse"
    record = {"id": "a", "status": "ok", "run": {"metrics": ["clip_i", "bpm"]},
              "edits": [{"index": 0, "name": "e.png", "metrics": {"clip_i": 0.5, "bpm": None},
                         "unavailable": {"bpm": why}},
                        {"index": 1, "name": "f.png", "metrics": {"clip_i": 0.25, "bpm": 1.5}}]}
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps(record) + "\n")
    csv_path = export_csv(results, tmp_path / "r.csv")
    headers, rows, total = on._per_edit_rows(SimpleNamespace(results_csv=csv_path), ["clip_i", "bpm"])
    assert total == 2 and headers[-2:] == ["why n/a", "error"]
    shown = on._per_edit_table(headers, rows, ["clip_i", "bpm"]).to_string(delimiter="|").splitlines()
    first, second = (line.split("|")[1:] for line in shown[1:3])  # past the header line and the index cell
    assert first[headers.index("BPM")] == "n/a" and first[headers.index("why n/a")] == f"bpm: {why}"
    assert second[headers.index("BPM")] == "1.5000" and second[headers.index("why n/a")] == ""
