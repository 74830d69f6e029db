"""Round three of the hardening (issue 42), point 8: a batch cut off when its server is killed resumes after a
restart, found by the upload's content and choices (tests/ui/test_batch_handlers.py checks the keys in process).

``python app.py`` runs on 127.0.0.1 with the tiny random model; the test sends a long batch through
``gradio_client``, kills the server with SIGKILL once items are kept, starts a new server on the same folders
and sends the same files with the same choices. Waits poll a condition up to a generous deadline.
"""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

import pytest
from gradio_client import Client, handle_file

from tests.security import probes
from tests.security.servers import start_app
from tests.support import EXAMPLES, TINY

FLOWER = EXAMPLES / "flower-pink"
ITEMS = 3000  # minutes of work for the tiny model on 2 cores: still going when the server is killed


def _kept(temp: Path) -> dict[Path, list[str]]:
    """Each batch folder's kept item ids (complete lines only: a line cut by the kill is not an item)."""
    out = {}
    for path in temp.glob("augclip-batch-*/*-results.jsonl"):
        ids = []
        for line in path.read_text().splitlines():
            try:
                ids.append(json.loads(line)["id"])
            except (ValueError, KeyError):
                continue
        out[path.parent] = ids
    return out


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_8_a_batch_cut_off_by_a_killed_server_resumes_after_a_restart(tmp_path):
    manifest = probes.write(tmp_path / "long.jsonl", "".join(
        json.dumps({"id": f"i{n}", "source": "src.png", "target_text": "a pink dahlia",
                    "attributes": {"source": ["a flower"], "target": ["a pink dahlia"]},
                    "edits": [{"path": "edit.png"}]}) + "\n" for n in range(ITEMS)))
    with zipfile.ZipFile(tmp_path / "images.zip", "w") as archive:
        archive.write(FLOWER / "source.png", "src.png")
        archive.write(FLOWER / "well_edited.png", "edit.png")
    args = (handle_file(str(manifest)), handle_file(str(tmp_path / "images.zip")), ["augclip", "l2"], "manual",
            TINY, False)
    folder = tmp_path / "server"
    first = start_app(folder)
    try:
        client = Client(first.url, verbose=False)
        client.submit(*args, api_name="/batch")
        kept = _wait_for(lambda: [ids for ids in _kept(first.temp).values() if len(ids) >= 3], 240,
                         "the first items kept")
        assert kept
    finally:
        first.process.kill()  # SIGKILL: no cleanup runs, as when a machine or a container goes
        first.process.wait()
    before = _kept(first.temp)
    assert len(before) == 1, before
    (run_folder, done), = before.items()
    assert 3 <= len(done) < ITEMS
    second = start_app(folder)
    try:
        client = Client(second.url, verbose=False)
        job = client.submit(*args, api_name="/batch")
        # The new server goes on in the same folder, after the items the killed one kept.
        _wait_for(lambda: len(_kept(second.temp).get(run_folder, ())) > len(done) + 3, 240, "the run to go on")
        job.cancel()
        now = _kept(second.temp)
        assert list(now) == [run_folder], now  # no new folder: the same run
        assert now[run_folder][:len(done)] == done and len(set(now[run_folder])) == len(now[run_folder])
    finally:
        second.stop()
