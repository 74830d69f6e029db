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
from tests.explore.constructed import constructed_records, write_jsonl


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
