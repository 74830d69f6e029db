"""Round three of the hardening (issue 42), points 3 and 4: uploads counted while they arrive, and each client
held to its share of the disk cap with uploads no event used deleted after a while.

The quick tests check :mod:`augclip_demo.ui.storage` in process. The families marked slow send raw HTTP
uploads to ``python app.py`` on 127.0.0.1, started with small bounds (a 12 MB cap, a 50 % share, 2 MB zips,
1 MB images, one edit: a request holds at most 3 MB and 64 KB) so they stay fast. The server keeps uvicorn's
default proxy list (127.0.0.1), so each request's ``X-Forwarded-For`` stands for a distinct client behind
the operator's proxy, as it would in a lab (test_round_three.py checks that the header is ignored from any
other peer). Waits poll a condition up to a generous deadline; no assertion depends on the machine's speed.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from augclip_demo.config import Settings
from augclip_demo.ui.storage import _FLIGHT, MB, UploadBounds, UploadGate, WorkFolders, _Flight
from tests.security import probes
from tests.security.servers import AppProcess, folder_bytes, start_app
from tests.security.test_attack import SERVER_PATH, ExploreOpen


# ------------------------------------------------------------------------------------- in process
def test_upload_bounds_are_the_largest_file_a_component_takes():
    settings = Settings(max_upload_mb=25.0, upload_max_zip_mb=512, max_edits=8)
    bounds = UploadBounds.of(settings)
    assert bounds.file_bytes == 513 * 2**20  # the zip's bound and 1 MB
    assert bounds.request_bytes == 513 * 2**20 + 64 * 2**10  # 8 edits of 26 MB are less than one zip
    many = UploadBounds.of(settings.replace(max_edits=32, upload_max_zip_mb=100))
    assert many.file_bytes == 101 * 2**20
    assert many.request_bytes == 32 * 26 * 2**20 + 64 * 2**10  # the evaluation's edits, sent in one request


def test_reservations_become_counted_uploads_and_the_rest_is_given_back(tmp_path):
    folders = WorkFolders(tmp_path, max_bytes=10_000, client_bytes=6_000)
    alice, bob = _Flight("10.0.0.1"), _Flight("10.0.0.2")
    assert folders.admit(alice, 4_500) is None
    assert folders.used() == 4_500 and folders.held_by("10.0.0.1") == 4_500
    assert "one client address may hold" in folders.admit(alice, 2_000)  # over alice's share
    assert folders.admit(bob, 5_000) is None
    assert "the server's space for uploads and results is full" in folders.admit(_Flight("10.0.0.3"), 1_000)
    token = _FLIGHT.set(alice)  # the upload route hands Gradio's file to the set inside alice's request
    try:
        folders.arrived([probes.write(tmp_path / "a.bin", b"x" * 4_000)])
    finally:
        _FLIGHT.reset(token)
    assert folders.used() == 9_500 and folders.held_by("10.0.0.1") == 4_500  # 4,000 counted, 500 still reserved
    folders.land(alice)
    folders.land(bob)
    assert folders.used() == 4_000 and folders.held_by("10.0.0.1") == 4_000 and folders.held_by("10.0.0.2") == 0
    assert folders.admit(alice, 2_001) is not None and folders.admit(alice, 2_000) is None


def test_uploads_no_event_used_expire_and_used_ones_stay(tmp_path):
    folders = WorkFolders(tmp_path, max_bytes=10**6, unused_s=60)
    client = _Flight("10.0.0.1")
    token = _FLIGHT.set(client)
    try:
        hashed = tmp_path / ("ab" * 32)  # Gradio keeps each upload in a folder named after its hash
        hashed.mkdir()
        paths = [probes.write(hashed / "unused.bin", b"x" * 100), probes.write(tmp_path / "used.bin", b"y" * 50),
                 probes.write(tmp_path / "young.bin", b"z" * 10)]
        folders.arrived(paths)
    finally:
        _FLIGHT.reset(token)
    for path in paths[:2]:
        folders._uploads[str(path.resolve())].at -= 61  # arrived a minute ago
    assert folders.held_by("10.0.0.1") == 160
    assert folders.expire_unused(used=[str(paths[1])]) == 1
    assert [path.exists() for path in paths] == [False, True, True]
    assert not hashed.exists()  # Gradio's folder of the file, empty, goes with it
    assert folders.held_by("10.0.0.1") == 60
    paths[2].unlink()  # deleted by something else (the cap's sweep): no longer held
    folders.expire_unused(used=[])
    assert folders.held_by("10.0.0.1") == 50


def test_a_client_over_its_share_loses_its_own_oldest_uploads_first(tmp_path):
    folders = WorkFolders(tmp_path, max_bytes=10_000, client_bytes=3_000)
    files = {}
    for client, names in (("10.0.0.1", ["old1", "old2", "young"]), ("10.0.0.2", ["theirs"])):
        token = _FLIGHT.set(_Flight(client))
        try:
            for name in names:
                files[name] = probes.write(tmp_path / f"{name}.bin", b"x" * 1000)
                folders.arrived([files[name]])
        finally:
            _FLIGHT.reset(token)
    for name in ("old1", "old2", "theirs"):
        folders._uploads[str(files[name].resolve())].at -= 200  # older than the two minutes a request may read them
    assert folders.admit(_Flight("10.0.0.1"), 2_500) is not None  # its old files would not free enough: kept
    assert all(path.exists() for path in files.values())
    assert folders.admit(_Flight("10.0.0.1"), 1_500) is None  # its two old ones go (oldest first), not the others'
    assert [files[name].exists() for name in ("old1", "old2", "young", "theirs")] == [False, False, True, True]
    assert folders.held_by("10.0.0.1") == 2_500 and folders.used() == 3_500


def _gate_call(folders: WorkFolders, headers: dict[str, str], chunks: list[bytes], client: str = "10.0.0.9",
               then_leave: bool = False) -> tuple[list[dict], list[str]]:
    """An :class:`UploadGate` (5,000 bytes a request) called as uvicorn calls an app: what it sent, and what
    the app behind it saw."""
    incoming = [{"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1 or then_leave}
                for i, chunk in enumerate(chunks)] + [{"type": "http.disconnect"}]
    sent, seen = [], []

    async def receive() -> dict:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    async def app(scope, receive_, send_) -> None:  # reads the body as Gradio's parser does, then answers 200
        from gradio.route_utils import MultiPartException

        try:
            while True:
                message = await receive_()
                seen.append(f"{len(message.get('body', b''))} bytes")
                if not message.get("more_body"):
                    break
        except MultiPartException as exc:
            seen.append(f"parser error: {exc.message}")
        await send_({"type": "http.response.start", "status": 200, "headers": []})
        await send_({"type": "http.response.body", "body": b"ok"})

    scope = {"type": "http", "client": (client, 1234),
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    asyncio.run(UploadGate(app, folders, request_bytes=5_000)(scope, receive, send))
    return sent, seen


def test_the_gate_bounds_reserves_and_gives_back(tmp_path):
    folders = WorkFolders(tmp_path, max_bytes=10_000, client_bytes=6_000)
    multipart = {"content-type": "multipart/form-data; boundary=x"}
    sent, seen = _gate_call(folders, {**multipart, "content-length": "5001", "expect": "100-continue"}, [b"x" * 5001])
    assert sent[0]["status"] == 413 and b"one upload may bring" in sent[1]["body"] and seen == []  # nothing read
    sent, seen = _gate_call(folders, {**multipart, "content-length": "4000"}, [b"x" * 2000, b"x" * 2000])
    assert sent[0]["status"] == 200 and seen == ["2000 bytes", "2000 bytes"]
    assert folders.used() == 0  # the app stored nothing: the whole reservation was given back
    sent, seen = _gate_call(folders, {**multipart, "transfer-encoding": "chunked"}, [b"x" * 3000] * 3)  # 9,000 streamed
    assert sent[0]["status"] == 413 and seen == ["3000 bytes", "parser error: File size exceeded maximum allowed "
                                                 "size: Upload refused: more than the 0.0 MB one upload may bring to "
                                                 "this server."], seen
    sent, seen = _gate_call(folders, {**multipart, "content-length": "4000"}, [b"x" * 1000], then_leave=True)
    assert seen == ["1000 bytes", "parser error: the client left before its upload arrived"]
    assert folders.used() == 0 and folders.held_by("10.0.0.9") == 0
    sent, seen = _gate_call(folders, {"content-type": "application/json", "content-length": "9000"}, [b"{}" * 4500])
    assert sent[0]["status"] == 200 and seen == ["9000 bytes"]  # not an upload: passed through untouched


# ------------------------------------------------------------------------------------- against a server
CAP_MB, SHARE_PERCENT, UNUSED_S = 12, 50, 20
SHARE = CAP_MB * SHARE_PERCENT * 2**20 // 100
REQUEST_BYTES = 3 * 2**20 + 64 * 2**10  # UploadBounds.of: max(2 MB zip, 1 MB image) + 1 MB, and the framing
BLOB = int(2.9 * 2**20)


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> AppProcess:
    app = start_app(tmp_path_factory.mktemp("uploads"), env={
        "AUGCLIP_APP_DISK_MB": str(CAP_MB), "AUGCLIP_APP_CLIENT_DISK_PERCENT": str(SHARE_PERCENT),
        "AUGCLIP_APP_UPLOAD_UNUSED_S": str(UNUSED_S), "AUGCLIP_UPLOAD_MAX_ZIP_MB": "2",
        "AUGCLIP_MAX_UPLOAD_MB": "1", "AUGCLIP_MAX_EDITS": "1"})
    yield app
    app.stop()


class RawUpload:
    """One multipart POST to Gradio's upload route over a plain socket: sent in parts, as a slow client would."""

    BOUNDARY = "augclipboundary"

    def __init__(self, app: AppProcess, size: int, client: str, name: str = "blob.bin", declared: int | None = None,
                 chunked: bool = False, files: int = 1, expect: bool = False):
        host, port = app.url.split("//")[1].strip("/").split(":")
        head = (f'--{self.BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n").encode()
        part = head + bytes([len(name) % 251]) * size + b"\r\n"
        self.body = part * files + f"--{self.BOUNDARY}--\r\n".encode()
        self.chunked = chunked
        length = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {declared or len(self.body)}"
        self.sock = socket.create_connection((host, int(port)), timeout=120)
        expects = "Expect: 100-continue\r\n" if expect else ""
        self.sock.sendall(f"POST /gradio_api/upload HTTP/1.1\r\nHost: {host}:{port}\r\nX-Forwarded-For: {client}\r\n"
                          f"Content-Type: multipart/form-data; boundary={self.BOUNDARY}\r\n{length}\r\n{expects}"
                          "Connection: close\r\n\r\n".encode())
        self.sent = 0

    def send(self, size: int | None = None) -> bool:
        """Send the next ``size`` bytes of the body (all that is left: None); False when the server stopped reading."""
        part = self.body[self.sent:self.sent + size] if size is not None else self.body[self.sent:]
        if not part and not (self.chunked and size is None):
            return True
        try:
            self.sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n" if self.chunked else part)
            if self.chunked and size is None:
                self.sock.sendall(b"0\r\n\r\n")
        except OSError:  # answered and closed by the server while the body was still coming
            return False
        self.sent += len(part)
        return True

    def answer(self) -> tuple[int, str]:
        """The status and the body of the server's answer (read until it closes)."""
        data = b""
        try:
            while chunk := self.sock.recv(65536):
                data += chunk
        except OSError:
            pass
        self.sock.close()
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 "), data[:200]
        return int(head.split()[1]), body.decode("utf-8", "replace")


def _uploads_on_disk(app: AppProcess, pattern: str = "*.bin") -> list[Path]:
    return [path for path in (app.temp / "gradio").rglob(pattern) if path.is_file()]


def _partial_files(app: AppProcess) -> set[Path]:
    """Gradio's files of uploads still arriving: top-level temporary files of its upload folder (Gradio's
    ``UploadButton`` and ``File`` also leave an empty one there per event; the tests compare before and after)."""
    return {path for path in (app.temp / "gradio").iterdir() if path.is_file()}


def _wait(condition, seconds: float = 240) -> bool:
    deadline = time.monotonic() + seconds  # a bound on the wait, not a speed asserted
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.5)
    return condition()


def _refused(answer: tuple[int, str], words: str) -> None:
    status, text = answer
    assert status == 413 and text.startswith("Upload refused: ") and words in text, answer
    assert "Traceback" not in text and not SERVER_PATH.search(text), text


@pytest.mark.slow
def test_3_a_body_over_the_bound_is_refused_before_it_is_read(app):
    # a client that waits to be asked for its body (curl does for large ones) is answered at once: not a byte read
    upload = RawUpload(app, 10, "198.51.100.1", declared=8 * 2**20, expect=True)
    _refused(upload.answer(), f"8.0 MB is more than the {REQUEST_BYTES / MB:.1f} MB one upload may bring")
    # no declared size: two files of 1.6 MB, each under Gradio's file bound, cut off as they stream
    before = _partial_files(app)
    chunked = RawUpload(app, int(1.6 * 2**20), "198.51.100.2", chunked=True, files=2)
    chunked.send()
    _refused(chunked.answer(), f"more than the {REQUEST_BYTES / MB:.1f} MB one upload may bring")
    assert _wait(lambda: _partial_files(app) <= before), _partial_files(app)  # Gradio deleted the partial file
    fine = RawUpload(app, 1000, "198.51.100.2", name="fine.bin")
    fine.send()
    status, text = fine.answer()
    assert status == 200 and "fine.bin" in text, (status, text)


@pytest.mark.slow
def test_3_a_client_that_leaves_mid_upload_leaves_no_file_and_no_reservation(app):
    client, before = "198.51.100.3", _partial_files(app)
    upload = RawUpload(app, BLOB, client)
    upload.send(2**20)
    assert _wait(lambda: bool(_partial_files(app) - before))  # the part is being written
    upload.sock.close()  # gone with 1 MB of 2.9 sent
    assert _wait(lambda: _partial_files(app) <= before), _partial_files(app)
    for n in range(2):  # its whole share again: nothing of the abandoned upload is still reserved
        again = RawUpload(app, BLOB, client, name=f"again{n}.bin")
        again.send()
        status, text = again.answer()
        assert status == 200 and f"again{n}.bin" in text, (status, text)


@pytest.mark.slow
def test_4_a_client_is_held_to_its_share_and_others_still_upload(app):
    assert _wait(lambda: not _uploads_on_disk(app)), "earlier uploads did not expire"
    answers = []
    for n in range(3):  # 3 x 2.9 MB from one client against its 6 MB share
        upload = RawUpload(app, BLOB, "192.0.2.10", name=f"mine{n}.bin")
        upload.send()
        answers.append(upload.answer())
    assert [status for status, _ in answers] == [200, 200, 413], answers
    _refused(answers[2], f"one client address may hold {SHARE / MB:.1f} MB (AUGCLIP_APP_CLIENT_DISK_PERCENT")
    other = RawUpload(app, BLOB, "192.0.2.11", name="theirs.bin")  # another client still has its own share
    other.send()
    assert other.answer()[0] == 200
    assert len(_uploads_on_disk(app, "mine*.bin")) == 2


def _load_attributes(app: AppProcess, upload: dict) -> dict:
    """The Evaluate tab's "Load JSON" event (an attributes file into the boxes), as the page sends it."""
    config = httpx.get(f"{app.url}config", timeout=60).json()
    button = next(c["id"] for c in config["components"] if c.get("type") == "uploadbutton")
    fn = next(d["id"] for d in config["dependencies"] if [button, "upload"] in d["targets"])
    session = uuid.uuid4().hex
    with httpx.Client(timeout=180) as http:
        joined = http.post(f"{app.url}gradio_api/queue/join", json={
            "data": [upload], "fn_index": fn, "session_hash": session, "event_data": None})
        assert joined.status_code == 200, joined.text
        with http.stream("GET", f"{app.url}gradio_api/queue/data", params={"session_hash": session}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:") and json.loads(line[5:]).get("msg") == "process_completed":
                    return json.loads(line[5:])
    raise AssertionError("the queue closed without an answer")


@pytest.mark.slow
def test_4_uploads_no_event_used_expire_and_used_ones_stay(app, tmp_path):
    open_ = ExploreOpen(app)  # its upload: as the page sends one (client 127.0.0.1)
    attributes = probes.write(tmp_path / "attrs.json", json.dumps({"source_attributes": ["a red car"],
                                                                    "target_attributes": ["a blue car"]}))
    used, unused = open_.upload(attributes), open_.upload(probes.write(tmp_path / "unused.json", b"{}"))
    answer = _load_attributes(app, used)
    assert answer["success"] and answer["output"]["data"] == ["a red car", "a blue car"], answer
    assert _wait(lambda: not Path(unused["path"]).exists()), "an upload no event used stayed"
    assert _wait(lambda: not _uploads_on_disk(app)), "other uploads no event used stayed"
    assert Path(used["path"]).exists()  # the one the event took stays (deleted by age or the cap, as before)
    assert _load_attributes(app, used)["success"]  # and serves the next event


# last: it fills the cap
@pytest.mark.slow
def test_3_six_uploads_in_flight_at_once_stay_within_the_cap(app):
    assert _wait(lambda: not _uploads_on_disk(app)), "earlier uploads did not expire"
    before = _partial_files(app)
    uploads = [RawUpload(app, BLOB, f"203.0.113.{n}", name=f"flight{n}.bin") for n in range(6)]
    with ThreadPoolExecutor(6) as pool:  # each sends a third of its body: all six are in flight together
        list(pool.map(lambda upload: upload.send(BLOB // 3), uploads))
        answers = list(pool.map(lambda upload: (upload.send(), upload.answer())[1], uploads))
    admitted = [status == 200 for status, _ in answers]
    for ok, answer in zip(admitted, answers, strict=True):
        if not ok:
            _refused(answer, "the server's space for uploads and results is full")
    stored = _uploads_on_disk(app, "flight*.bin")
    print(f"\nsix uploads of {BLOB / 2**20:.1f} MB at once, cap {CAP_MB} MB: {admitted.count(True)} stored, "
          f"{admitted.count(False)} refused; {sum(p.stat().st_size for p in stored) / 2**20:.1f} MB of them on disk, "
          f"{folder_bytes(app.temp) / 2**20:.1f} MB in the server's folders (its example images included)")
    assert 1 <= admitted.count(True) <= CAP_MB * 2**20 // BLOB, answers  # at most 4 fit, whatever else is on disk
    assert len(stored) == admitted.count(True) and sum(p.stat().st_size for p in stored) <= CAP_MB * 2**20
    assert _partial_files(app) <= before  # no partial file of a refused upload stays

