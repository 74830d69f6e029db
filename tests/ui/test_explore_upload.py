"""An uploaded results file leaves the server's disk once it is read (or refused); Open again on the same
upload answers from the store that is still open."""

from __future__ import annotations

import shutil

import gradio as gr
import pytest

from augclip_demo.config import Settings
from augclip_demo.explore.shelf import Shelf
from augclip_demo.ui.explore.handlers import ExploreContext, open_results_file
from augclip_demo.ui.storage import WorkFolders
from tests.explore.constructed import constructed_records, write_jsonl, write_manifest_with_images


def test_an_upload_is_deleted_once_read_and_open_again_reuses_its_store(tmp_path, monkeypatch):
    uploads = tmp_path / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    upload = write_jsonl(constructed_records(), uploads / "abc" / "results.jsonl")
    outside = write_jsonl(constructed_records(), tmp_path / "mine" / "results.jsonl")
    shelf = Shelf([])
    ctx = ExploreContext(Settings(), shelf, WorkFolders(tmp_path))

    current = open_results_file(ctx, None, str(upload), None)[0]
    assert not upload.exists()  # read into the store: the copy on disk is gone
    key = current["key"]
    assert key.startswith("upload:") and shelf.has_upload(key)
    again = open_results_file(ctx, None, str(upload), current)[0]
    assert again["key"] == key and shelf.store(key).n_records == len(constructed_records())

    # a refused upload goes too; a file outside Gradio's upload folder is never deleted
    damaged = uploads / "def" / "results.parquet"
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b"PAR1" + b"x" * 100 + b"PAR1")
    with pytest.raises(gr.Error):
        open_results_file(ctx, None, str(damaged), None)
    assert not damaged.exists()
    shutil.copy(outside, tmp_path / "kept.jsonl")
    open_results_file(ctx, None, str(tmp_path / "kept.jsonl"), None)
    assert (tmp_path / "kept.jsonl").exists()


def _zip(path, folder, extra: dict[str, bytes] | None = None):
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                archive.write(file, file.relative_to(folder).as_posix())
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return path


def test_a_zip_of_results_manifest_and_images_opens_with_its_thumbnails(tmp_path, monkeypatch):
    """The upload's zip: extracted under the session's folders, the results file and the manifest told apart by
    their records, and every item's images found where the manifest names them (the same bytes as zipped)."""
    from augclip_demo.explore import item_record
    from augclip_demo.explore.items import evaluate_inputs, image_path

    uploads = tmp_path / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    records = constructed_records()
    bundle = tmp_path / "bundle"
    write_manifest_with_images(records, bundle / "data")
    write_jsonl(records, bundle / "runs" / "bench-results.jsonl")
    upload = _zip(uploads / "abc" / "run.zip", bundle)
    folders = WorkFolders(tmp_path / "work")
    folders.root.mkdir()
    ctx = ExploreContext(Settings(), Shelf([]), folders)
    state, summary = open_results_file(ctx, None, str(upload), None)[:2]
    assert not upload.exists()  # read: the zip goes from the upload folder
    store = ctx.shelf.store(state["key"])
    assert store.n_records == len(records) and "no manifest given" not in summary
    assert store.files[0].manifest.read_bytes() == (bundle / "data" / "manifest.jsonl").read_bytes()
    assert store.files[0].manifest.is_relative_to(folders.root)  # under the disk cap's folders
    ok = [r for r in records if r["status"] == "ok"]
    for number, record in enumerate(ok):
        item = store.query("SELECT rowid FROM records WHERE id = ?", [record["id"]])[0][0]
        shown = image_path(store, 0, record["source"])
        assert shown.read_bytes() == (bundle / "data" / record["source"]).read_bytes()
        if number == 0:
            inputs = evaluate_inputs(item_record(store, item))  # Explain in the Evaluate tab can read them
            assert [p.read_bytes() for p in inputs.edits] == [(bundle / "data" / e["path"]).read_bytes()
                                                              for e in record["edits"]]


@pytest.mark.parametrize("extra, message", [
    ({"other-results.jsonl": b'{"id": "x", "status": "ok", "edits": []}\n'}, "holds 2 results files"),
    ({"data/again.jsonl": b'{"id": "x", "source": "a.png", "edits": []}\n'}, "holds 2 manifests"),
    ({"../evil.png": b"x"}, "contains '..'"),
])
def test_a_zip_that_is_not_one_run_or_not_safe_is_refused_with_the_reason(tmp_path, monkeypatch, extra, message):
    uploads = tmp_path / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    bundle = tmp_path / "bundle"
    records = constructed_records()[:2]
    write_manifest_with_images(records, bundle / "data")
    write_jsonl(records, bundle / "results.jsonl")
    upload = _zip(uploads / "abc" / "run.zip", bundle, extra)
    (tmp_path / "work").mkdir()
    ctx = ExploreContext(Settings(), Shelf([]), WorkFolders(tmp_path / "work"))
    with pytest.raises(gr.Error, match=message):
        open_results_file(ctx, None, str(upload), None)
    assert not upload.exists()


def test_a_zip_over_the_upload_bounds_is_refused_naming_the_bound(tmp_path, monkeypatch):
    uploads = tmp_path / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    bundle = tmp_path / "bundle"
    records = constructed_records()
    write_manifest_with_images(records, bundle / "data")
    write_jsonl(records, bundle / "results.jsonl")
    entries = sum(1 for _ in bundle.rglob("*"))
    settings = Settings(upload_max_files=3)
    assert entries > 3
    upload = _zip(uploads / "abc" / "run.zip", bundle)
    (tmp_path / "work").mkdir()
    ctx = ExploreContext(settings, Shelf([]), WorkFolders(tmp_path / "work"))
    with pytest.raises(gr.Error, match="holds more than 3 entries"):
        open_results_file(ctx, None, str(upload), None)
    full = ExploreContext(Settings(), Shelf([]), WorkFolders(tmp_path / "work2", max_bytes=0))
    upload = _zip(uploads / "def" / "run.zip", bundle)
    with pytest.raises(gr.Error, match="The upload was refused: the server's space for uploads and results is full"):
        open_results_file(full, None, str(upload), None)
