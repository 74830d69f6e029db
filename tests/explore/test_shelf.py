"""Safe in public: the operator names the files, clients pick names; uploads are bounded; the command line
and the variable build the same list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from augclip_demo.cli.explore import explore_entries
from augclip_demo.config import Settings
from augclip_demo.errors import InputError
from augclip_demo.explore.items import evaluate_inputs, item_record
from augclip_demo.explore.shelf import MAX_UPLOADED_STORES, Shelf, parse_entries
from tests.explore.constructed import RUN, constructed_records, write_jsonl, write_manifest_with_images
from tests.support import ROOT


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
    assert shelf.has_upload("upload:" + tokens[-1])
    assert not shelf.has_upload("upload:" + tokens[0]) and not shelf.has_upload("named:results.jsonl")


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
    from augclip_demo.ui.explore.views import inspect_views

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


@pytest.mark.slow  # reads a memory-bomb results file to its refusal
def test_each_store_runs_under_duckdbs_bounds_and_a_large_upload_is_refused_with_the_reason(files, tmp_path):
    from augclip_demo.explore.shelf import UPLOAD_MEMORY_MB, UPLOAD_THREADS
    from augclip_demo.explore.store import DEFAULT_MEMORY_MB, DEFAULT_THREADS, duckdb_settings

    shelf = Shelf([f"{files['results']}={files['manifest']}"])
    named = duckdb_settings(shelf.store("named:results.jsonl"))
    uploaded = duckdb_settings(shelf.store("upload:" + shelf.add_upload(files["results"], max_mb=10)))
    for settings, memory, threads in ((named, DEFAULT_MEMORY_MB, DEFAULT_THREADS),
                                      (uploaded, UPLOAD_MEMORY_MB, UPLOAD_THREADS)):
        assert settings["temp_directory"] == ""  # nothing spilled to the server's disk
        assert int(settings["threads"]) == min(threads, os.cpu_count() or 1)
        amount, unit = settings["memory_limit"].split()  # DuckDB reports 1000-based MB as MiB
        assert float(amount) * {"MiB": 1 << 20, "GiB": 1 << 30}[unit] == pytest.approx(memory * 10**6, rel=0.01)
    # an upload that needs more memory than an upload's store has: said, naming the file only
    big = tmp_path / "uploads" / "big.jsonl"
    big.parent.mkdir()
    line = files["results"].read_text(encoding="utf-8").splitlines()[0]
    record = json.loads(line)
    record["attributes"]["source_attributes"] = ["x" * 180] * 60
    with open(big, "w", encoding="utf-8") as handle:
        for i in range(int(UPLOAD_MEMORY_MB * 1.5 * (1 << 20) / len(json.dumps(record)))):
            handle.write(json.dumps({**record, "id": f"i{i}"}) + "\n")
    with pytest.raises(InputError) as refused:
        shelf.add_upload(big, max_mb=4096)
    message = str(refused.value)
    assert f"big.jsonl: needs more than the {UPLOAD_MEMORY_MB} MB of memory" in message
    assert str(tmp_path) not in message


def test_the_first_listed_file_is_opened_ahead(files):
    shelf = Shelf([f"{files['results']}={files['manifest']}", str(files["other"])])
    shelf.warm().join(timeout=120)
    assert list(shelf._open) == ["results.jsonl"]  # only the first: the page shows it first


WATCH_TORCH = """
import importlib.abc, os, sys
class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch":
            print("torch imported with OMP_WAIT_POLICY =", os.environ.get("OMP_WAIT_POLICY"), flush=True)
            sys.meta_path.remove(self)
        return None
sys.meta_path.insert(0, Watch())
"""


@pytest.mark.parametrize("how", ["app.py", "explore"])
@pytest.mark.slow  # starts the app and the explore command as processes
def test_the_server_waits_passively_whichever_way_it_starts(files, how):
    """OMP_WAIT_POLICY=PASSIVE is in the environment before torch (and its OpenMP runtime) loads, for
    ``python app.py`` and ``augclip-demo explore`` alike (one function sets it: config.prepare_server_process)."""
    if how == "app.py":
        start = "import runpy; sys.argv = ['app.py', '--help']; runpy.run_path('app.py', run_name='__main__')"
    else:
        # the command's run starts the app, which imports torch (the command's --help and parsing do not)
        start = ("import augclip_demo.cli.explore as e; e.run = lambda args: __import__('torch') and 0\n"
                 f"from augclip_demo.cli import main; sys.exit(main(['explore', {str(files['results'])!r}]))")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", WATCH_TORCH + start], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert "torch imported with OMP_WAIT_POLICY = PASSIVE" in done.stdout, done.stdout + done.stderr


def test_an_item_goes_to_evaluate_with_the_runs_bpm_and_judge_settings(tmp_path):
    """The Evaluate tab gets the run's recorded settings, BPM and judge included (not only CLIP and AugCLIP's
    options): BPM and the judge switched on as the run had them, BPM's parser as recorded, the rest said."""
    from augclip_demo.ui.explore.handlers import evaluate_values

    bpm = {"detector": "random:tiny", "segmenter": "random:tiny", "sam_checkpoint": None, "parser": "rules",
           "options": {"box_threshold": 0.3}, "untrained": True}
    judge = {"model": "gpt-4o", "prompt_version": "v3", "temperature": 0.0, "samples": 1}
    run = {**RUN, "metrics": ["augclip", "l2", "bpm", "judge_overall"], "bpm": bpm, "judge": judge}
    records = constructed_records(run)
    manifest = write_manifest_with_images(records, tmp_path / "bench")
    shelf = Shelf([f"{write_jsonl(records, tmp_path / 'results.jsonl')}={manifest}"])
    inputs = evaluate_inputs(item_record(shelf.store("named:results.jsonl"), 0))
    assert (inputs.bpm, inputs.judge, inputs.bpm_parser) == (bpm, judge, "rules")
    values, notes = evaluate_values(inputs, [RUN["model"]], ["rules"])
    assert (values["bpm_on"], values["bpm_parser"], values["judge_on"]) == (True, "rules", True)
    assert values["clip_model"] == RUN["model"] and values["C"] == RUN["options"]["C"]
    assert any("detector random:tiny" in note and "judge gpt-4o (prompt v3" in note for note in notes)
    # a parser the page does not offer is said and left as the page has it; a run without BPM turns it off
    values, notes = evaluate_values(inputs, [RUN["model"]], ["other"])
    assert values["bpm_parser"] != "rules" and any("parser 'rules' is not offered" in note for note in notes)
    plain = evaluate_inputs(item_record(Shelf([f"{write_jsonl(constructed_records(), tmp_path / 'p.jsonl')}="
                                               f"{manifest}"]).store("named:p.jsonl"), 0))
    values, _ = evaluate_values(plain, [RUN["model"]], ["rules"])
    assert (values["bpm_on"], values["judge_on"]) == (False, False)
