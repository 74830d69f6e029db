"""Load and disk: ``python app.py`` started with command-line options, many gradio_client sessions at once.

* 20 concurrent sessions (``AUGCLIP_LOAD_CLIENTS``), each evaluating one of two input sets
  ``AUGCLIP_LOAD_ROUNDS`` times (default 1: the small form CI runs), must all succeed and give exactly
  the tables a single client got for the same inputs;
* every session's work folder goes away when its client disconnects, and what stays on disk (our
  folders plus Gradio's cache) is measured and bounded.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from gradio_client import Client

from tests.security.servers import AppProcess, folder_bytes, start_app
from tests.support import EXAMPLES
from tests.ui.test_app import evaluate_args

pytestmark = pytest.mark.slow

FLOWER = EXAMPLES / "flower-pink"
CLIENTS = int(os.environ.get("AUGCLIP_LOAD_CLIENTS", "20"))
ROUNDS = int(os.environ.get("AUGCLIP_LOAD_ROUNDS", "1"))
INPUTS = {
    "three edits": evaluate_args(),
    "one edit, other lists": evaluate_args(edits=[FLOWER / "excessively_modified.png"], src=["orange petals"],
                                           tgt=["pink petals", "a pink flower"], classifier="logistic"),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> AppProcess:
    # A 2 s heartbeat: a closed client is noticed (and its session ended) within seconds.
    app = start_app(tmp_path_factory.mktemp("load"), ["--concurrency", "2", "--max-edits", "8"], flags=True,
                    env={"GRADIO_HEARTBEAT_INTERVAL": "2"})
    yield app
    app.stop()


def _table(result: tuple) -> list:
    return result[1]["data"]


def test_concurrent_sessions_match_a_single_client(server):
    single = Client(server.url, verbose=False)
    expected = {name: _table(single.predict(*args, api_name="/evaluate")) for name, args in INPUTS.items()}
    single.close()
    names = list(INPUTS)
    results: dict[int, list] = {}
    errors: list[str] = []
    clients: list[Client | None] = [None] * CLIENTS
    start = threading.Barrier(CLIENTS)

    def session(index: int) -> None:
        try:
            clients[index] = Client(server.url, verbose=False)  # one client = one session
            start.wait(timeout=180)
            for _ in range(ROUNDS):
                name = names[index % len(names)]
                table = _table(clients[index].predict(*INPUTS[name], api_name="/evaluate"))
                results.setdefault(index, []).append((name, table))
        except Exception as exc:  # noqa: BLE001 - collected and reported below
            errors.append(f"session {index}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=session, args=(i,)) for i in range(CLIENTS)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    seconds = time.perf_counter() - began
    for client in clients:
        if client is not None:
            client.close()
    assert not errors, errors
    assert sum(len(v) for v in results.values()) == CLIENTS * ROUNDS
    for runs in results.values():
        for name, table in runs:
            assert table == expected[name], name  # identical numbers, whichever session and order
    memory = server.memory()
    print(f"\n{CLIENTS} sessions x {ROUNDS} round(s) in {seconds:.1f} s; server RSS {memory['VmRSS'] / 2**30:.2f} GiB,"
          f" peak {memory['VmHWM'] / 2**30:.2f} GiB")
    assert memory["VmHWM"] < 4 * 2**30  # the tiny model: far below; a leak per session would show here


def test_session_folders_go_when_sessions_end_and_disk_stays_bounded(server):
    temp = Path(server.temp)
    before = {p.name for p in temp.glob("augclip-app-*")}
    clients = [Client(server.url, verbose=False) for _ in range(4)]
    for client in clients:
        client.predict(*INPUTS["three edits"], api_name="/evaluate")
        client.predict(True, api_name="/explain")  # figures: the bulk of a session's files
    made = {p.name for p in temp.glob("augclip-app-*")} - before
    assert len(made) == 4
    ours = folder_bytes(temp, ("augclip-app-",))
    cache = folder_bytes(temp / "gradio")
    print(f"\nafter 4 explain sessions: our folders {ours / 2**20:.1f} MB, Gradio's cache {cache / 2**20:.1f} MB")
    for client in clients:
        client.close()  # ends the heartbeat: Gradio runs the page's unload event
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and ({p.name for p in temp.glob("augclip-app-*")} & made):
        time.sleep(1)
    assert not ({p.name for p in temp.glob("augclip-app-*")} & made), "session folders outlived their sessions"
