"""The Ray engine on a local Ray instance (2 CPUs, the tiny random model, a 200-item manifest).

Every result is checked against the local runner on the same manifest (an independent execution:
threads and its own batching), item by item to 1e-9; then resume, a killed actor, the attribute
stage against a real chat server on 127.0.0.1, and the protocol tables read from the Parquet output.
The start-up cost of Ray is printed (``-s``) and bounded loosely.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from augclip_demo.batch.protocol_tables import compute_protocols
from augclip_demo.batch.ray_engine import RayOptions
from augclip_demo.batch.results import iter_results
from augclip_demo.batch.results_parquet import COLUMNS, part_files
from augclip_demo.batch.runner import BatchOptions, run_batch
from augclip_demo.batch.synthetic import write_synthetic_manifest
from augclip_demo.config import Settings
from tests.support import TINY
from tests.support.attribute_chat import paper_flow
from tests.support.chat_server import ChatServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
N_ITEMS = 200
TOLERANCE = 1e-9


@pytest.fixture(scope="module")
def chat():
    with ChatServer(responder=paper_flow) as server:
        yield server


@pytest.fixture(scope="module")
def ray_instance(chat):
    """A local Ray instance with 2 CPUs whose workers import this checkout and reach the chat server."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "OPENAI_BASE_URL": chat.url,
                                       "OPENAI_API_KEY": "local-test-server"}})
    seconds = time.perf_counter() - start
    print(f"\nRay start-up (ray.init, 2 CPUs): {seconds:.1f}s")
    assert seconds < 120
    yield seconds
    ray.shutdown()


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> Settings:
    return Settings.from_env(clip_model=TINY, device="cpu", cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def data(tmp_path_factory, settings):
    """The manifest and the local runner's records of it (the reference)."""
    folder = tmp_path_factory.mktemp("ray-data")
    manifest = write_synthetic_manifest(folder, n_items=N_ITEMS, n_edits=2, n_attributes=4, image_size=48)
    local = folder / "local.jsonl"
    summary = run_batch(manifest, local, options=BatchOptions(), settings=settings)
    assert summary.n_ok == N_ITEMS
    return manifest, local, list(iter_results(local))


def assert_same_records(got: list[dict], want: list[dict], cache: str | None = None) -> None:
    """Same items in the same order, every metric within 1e-9, everything else equal (of extracted
    attributes' provenance: not how long the extraction took; the cache state ``cache`` when given)."""
    assert [r["id"] for r in got] == [r["id"] for r in want]
    worst = 0.0
    for g, w in zip(got, want):
        g, w = json.loads(json.dumps(g)), json.loads(json.dumps(w))
        for record in (g, w):
            provenance = (record.get("attributes") or {}).get("provenance") or {}
            provenance.pop("seconds", None)
            state = provenance.get("extra", {}).pop("cache", None)
            if cache is not None and record is g:
                assert state == cache
        for ge, we in zip(g["edits"], w["edits"]):
            gm, wm = ge.pop("metrics"), we.pop("metrics")
            assert gm.keys() == wm.keys()
            for key in wm:
                if wm[key] is None:
                    assert gm[key] is None, key
                else:
                    worst = max(worst, abs(gm[key] - wm[key]))
        assert g == w
    assert worst <= TOLERANCE, worst


@pytest.fixture(scope="module")
def ray_parquet(ray_instance, data, settings, tmp_path_factory):
    manifest, _, _ = data
    out = tmp_path_factory.mktemp("ray-out") / "results.parquet"
    start = time.perf_counter()
    summary = run_batch(manifest, out, engine="ray", options=BatchOptions(), settings=settings,
                        ray_options=RayOptions(actors=2, items_per_batch=16, rows_per_part=64))
    print(f"\nray engine, {N_ITEMS} items, 2 actors: {time.perf_counter() - start:.1f}s")
    return out, summary


def test_ray_engine_gives_the_local_runners_records(ray_parquet, data):
    out, summary = ray_parquet
    assert (summary.n_ok, summary.n_failed, summary.n_skipped, summary.untrained) == (N_ITEMS, 0, 0, True)
    assert_same_records(list(iter_results(out)), data[2])
    # a folder of Parquet parts with the record's top-level fields as columns, readable by any Parquet tool
    import pyarrow.parquet as pq

    parts = part_files(out)
    assert len(parts) == 4 and pq.read_schema(parts[0]).names == list(COLUMNS)
    table = pq.read_table(out)
    assert table.num_rows == N_ITEMS and sorted(table.column("id").to_pylist()) == sorted(r["id"] for r in data[2])


def test_protocol_tables_are_identical_from_either_engine(ray_parquet, data):
    out, _ = ray_parquet
    from_ray = compute_protocols(out, n_boot=200)
    from_local = compute_protocols(data[1], n_boot=200)
    assert from_ray.format() == from_local.format()
    ray_dict, local_dict = from_ray.to_dict(), from_local.to_dict()
    assert ray_dict.pop("results") != local_dict.pop("results")  # the sources differ, nothing else
    assert ray_dict == local_dict
    assert ray_dict["datasets"]["manifest"]["n_items"] == N_ITEMS


def test_resume_through_the_cli_runs_only_the_missing_items(ray_parquet, data, settings, tmp_path, capsys):
    from augclip_demo.cli import main

    out, _ = ray_parquet
    copy = tmp_path / "resume.parquet"
    shutil.copytree(out, copy)
    for part in part_files(copy)[2:]:  # as if the run had stopped after 128 items
        part.unlink()
    assert len(list(iter_results(copy))) == 128
    code = main(["batch", str(data[0]), "--out", str(copy), "--engine", "ray", "--ray-actors", "1",
                 "--ray-items-per-batch", "24", "--clip-model", TINY, "--device", "cpu", "--no-progress", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and (summary["n_ok"], summary["n_skipped"]) == (N_ITEMS - 128, 128)
    assert_same_records(list(iter_results(copy)), data[2])
    again = run_batch(data[0], copy, engine="ray", options=BatchOptions(), settings=settings)
    assert (again.n_ok, again.n_skipped) == (0, N_ITEMS)  # nothing pending: Ray is not even started
    assert len(list(iter_results(copy))) == N_ITEMS
    # the protocol command reads the Parquet folder as it reads the local runner's JSONL
    assert main(["protocol", str(copy), "--bootstrap", "50", "--json", str(tmp_path / "ray.json")]) == 0
    assert main(["protocol", str(data[1]), "--bootstrap", "50", "--json", str(tmp_path / "local.json")]) == 0
    from_ray, from_local = (json.loads((tmp_path / name).read_text()) for name in ("ray.json", "local.json"))
    assert from_ray.pop("results") == [str(copy)] and from_local.pop("results") == [str(data[1])]
    assert from_ray == from_local and from_ray["datasets"]["manifest"]["n_items"] == N_ITEMS


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (this test's own Ray instance only: never anyone else's)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _scoring_actor_pids() -> list[int]:
    pids = []
    for pid in _descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"ScoreStage" in handle.read():
                    pids.append(pid)
        except OSError:
            continue
    return pids


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the actor's process through /proc")
def test_a_killed_actor_loses_and_duplicates_nothing(ray_instance, data, settings, tmp_path):
    manifest, _, want = data
    out = tmp_path / "killed.jsonl"
    killed: dict[str, int] = {}

    def kill_one_actor_mid_run() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            lines = out.read_text().count("\n") if out.exists() else 0
            pids = _scoring_actor_pids()
            if lines >= 24 and pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.update(pid=pids[0], lines=lines)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=kill_one_actor_mid_run, daemon=True)
    watcher.start()
    summary = run_batch(manifest, out, engine="ray", options=BatchOptions(), settings=settings,
                        ray_options=RayOptions(actors=2, items_per_batch=4))
    watcher.join(timeout=5)
    assert killed, "no scoring actor was found to kill"
    assert killed["lines"] < N_ITEMS, "the run had finished before the kill"
    assert not Path(f"/proc/{killed['pid']}").exists() or killed["pid"] not in _scoring_actor_pids()
    lines = out.read_text().splitlines()
    assert len(lines) == N_ITEMS and (summary.n_ok, summary.n_failed) == (N_ITEMS, 0)
    assert_same_records([json.loads(line) for line in lines], want)


def test_attribute_stage_asks_the_chat_server_for_what_is_not_cached(ray_instance, settings, chat, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", chat.url)  # the local runner's provider (the actors have it already)
    monkeypatch.setenv("OPENAI_API_KEY", "local-test-server")
    manifest = write_synthetic_manifest(tmp_path / "m", n_items=6, n_edits=2, image_size=48)
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    for item in lines:
        del item["attributes"]
    lines[3]["source"] = "images/missing.png"  # refused by validation: skipped with --skip-invalid
    manifest.write_text("".join(json.dumps(item) + "\n" for item in lines))
    first_three = tmp_path / "m" / "first.jsonl"
    first_three.write_text("".join(json.dumps(item) + "\n" for item in lines[:3]))
    options = BatchOptions(provider="openai", skip_invalid=True)
    cached = settings.replace(cache_dir=tmp_path / "cache")
    local = run_batch(first_three, tmp_path / "local.jsonl", options=options, settings=cached, dataset="manifest")
    per_item = len(chat.requests) / 3
    assert local.n_ok == 3 and per_item >= 1

    before = len(chat.requests)
    summary = run_batch(manifest, tmp_path / "ray.jsonl", engine="ray", options=options, settings=cached,
                        ray_options=RayOptions(actors=1, attribute_actors=1, extractions_per_second=4.0))
    assert summary.n_ok == 5 and summary.invalid
    assert len(chat.requests) - before == 2 * per_item  # the three cached items asked nothing
    got = list(iter_results(tmp_path / "ray.jsonl"))
    assert [r["attributes"]["provenance"]["extra"]["cache"] for r in got] == ["hit"] * 3 + ["miss"] * 2
    assert_same_records(got[:3], list(iter_results(tmp_path / "local.jsonl")), cache="hit")
    # the scripted server gives every item the same attributes
    assert {json.dumps(r["attributes"]["source_attributes"]) for r in got} == {
        json.dumps(got[0]["attributes"]["source_attributes"])} and got[0]["attributes"]["source_attributes"]
