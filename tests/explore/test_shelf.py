"""Safe in public: the operator names the files, clients pick names; uploads are bounded; the command line
and the variable build the same list."""

from __future__ import annotations

from pathlib import Path

import pytest

from augclip_demo.cli.explore import explore_entries
from augclip_demo.config import Settings
from augclip_demo.errors import InputError
from augclip_demo.explore.items import evaluate_inputs, item_record
from augclip_demo.explore.shelf import MAX_UPLOADED_STORES, Shelf, parse_entries
from tests.explore.constructed import constructed_records, write_jsonl, write_manifest_with_images


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    records = constructed_records()
    manifest = write_manifest_with_images(records, tmp_path / "bench")
    return {"results": write_jsonl(records, tmp_path / "runs" / "results.jsonl"), "manifest": manifest,
            "other": write_jsonl(records, tmp_path / "other" / "results.jsonl")}


def test_files_are_listed_by_name_and_only_listed_names_open(files):
    shelf = Shelf([f"{files['results']}={files['manifest']}", str(files["other"])])
    # names only, repeated names numbered, and both together
    assert shelf.labels == ["results.jsonl", "results.jsonl (2)", "all 2 files together"]
    assert shelf.store("named:results.jsonl").n_records == len(constructed_records())
    together = shelf.store("named:all 2 files together")
    assert together.n_records == 2 * len(constructed_records()) and len(together.runs) == 2
    for sent in (f"named:{files['results']}", "named:../results.jsonl", "named:/etc/passwd", "upload:nope", "x"):
        with pytest.raises(InputError):
            shelf.store(sent)


def test_uploads_are_bounded_and_the_oldest_closed(files, tmp_path):
    shelf = Shelf([])
    with pytest.raises(InputError, match="uploads may be at most"):
        shelf.add_upload(files["results"], max_mb=files["results"].stat().st_size / (1 << 20) / 2)
    wrong = tmp_path / "results.csv"
    wrong.write_text("id\n", encoding="utf-8")
    with pytest.raises(InputError, match="upload a batch results file"):
        shelf.add_upload(wrong, max_mb=10)
    tokens = [shelf.add_upload(files["results"], max_mb=10) for _ in range(MAX_UPLOADED_STORES + 1)]
    with pytest.raises(InputError, match="no longer open"):
        shelf.store("upload:" + tokens[0])
    assert shelf.store("upload:" + tokens[-1]).n_records == len(constructed_records())


def test_variable_flag_and_command_make_the_same_entries(files):
    entries = explore_entries([str(files["results"])], [str(files["manifest"])])
    assert entries == [f"{files['results']}={files['manifest']}"]
    from_env = Settings.from_env({"AUGCLIP_EXPLORE_FILES": ",".join(entries)})
    assert from_env.explore_files == tuple(entries) == Settings().replace(explore_files=",".join(entries)).explore_files
    with pytest.raises(InputError, match="one --manifest for all results files or one per"):
        explore_entries([str(files["results"]), str(files["other"]), str(files["other"])], ["a", "b"])
    with pytest.raises(InputError, match="not found"):
        parse_entries([str(files["results"].with_name("missing.jsonl"))])


def test_an_item_goes_to_evaluate_with_the_runs_settings(files):
    shelf = Shelf([f"{files['results']}={files['manifest']}"])
    store = shelf.store("named:results.jsonl")
    record = constructed_records()[0]
    inputs = evaluate_inputs(item_record(store, 0))
    assert inputs.source == files["manifest"].parent / record["source"]
    assert [p.name for p in inputs.edits] == ["0.png"] * 3 and inputs.edit_names == ["A", "B", "C"]
    assert inputs.model == record["run"]["model"] and inputs.options == record["run"]["options"]
    assert inputs.source_attributes == record["attributes"]["source_attributes"]
    bare = Shelf([str(files["other"])])
    with pytest.raises(InputError, match="without their manifest"):
        evaluate_inputs(item_record(bare.store("named:results.jsonl"), 0))


@pytest.mark.parametrize("content", [b"abc", b"PAR1" + b"x" * 1000 + b"PAR1"])
def test_a_damaged_parquet_upload_is_refused_without_the_servers_path(tmp_path, content):
    folder = tmp_path / "server-secret-folder"
    folder.mkdir()
    damaged = folder / "results.parquet"
    damaged.write_bytes(content)
    with pytest.raises(InputError) as refused:
        Shelf([]).add_upload(damaged, max_mb=10)
    message = str(refused.value)
    assert "results.parquet: could not be read" in message
    assert "server-secret-folder" not in message and str(tmp_path) not in message



def test_an_item_shown_to_a_client_names_no_server_folder(tmp_path):
    """The Inspect view's record keeps every number as stored; its texts lose the server's folders."""
    from augclip_demo.explore import OpenedFile, open_results
    from augclip_demo.ui.explore_tab import inspect_views

    records = constructed_records()
    records[0]["edits"][0]["error"] = "weights: /srv/private/cache/hub/model.bin could not be read"
    store = open_results([OpenedFile(write_jsonl(records, tmp_path / "results.jsonl"))])
    try:
        index = next(i for i in range(store.n_records) if item_record(store, i).record["id"] == records[0]["id"])
        raw = item_record(store, index).record
        shown = inspect_views(store, index)[3]
    finally:
        store.close()
    assert "/srv/private" in str(raw) and "/srv/private" not in str(shown)
    assert "model.bin could not be read" in str(shown)
    assert shown["edits"][1]["metrics"] == raw["edits"][1]["metrics"]
