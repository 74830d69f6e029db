"""``python app.py`` as its own process on 127.0.0.1: start it, wait until it answers, read its memory, stop it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT


@dataclass
class AppProcess:
    process: subprocess.Popen
    url: str
    log: Path
    temp: Path | None = None  # the server's TMPDIR (its work folders) and GRADIO_TEMP_DIR (Gradio's cache) live here
    own_temp: Path | None = None  # made for this server by spawn_app: deleted when it stops

    def memory(self) -> dict[str, int]:
        """Resident memory now (VmRSS) and at its peak since start (VmHWM), in bytes (Linux /proc)."""
        values = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
        return values

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.own_temp is not None:
            shutil.rmtree(self.own_temp, ignore_errors=True)


def spawn_app(env: dict[str, str], log: Path, port: int, args: Sequence[str] = (), root: Path = ROOT,
              timeout: float = 240, temp: Path | None = None) -> AppProcess:
    """Run ``python app.py ARGS`` from ``root`` with ``env``, its output in ``log``, and wait until
    ``http://127.0.0.1:PORT/`` answers (the log's tail is in the error when it never does).

    Unless ``env`` names ``TMPDIR``, the server gets a temporary folder of its own (deleted when it stops), and
    Gradio's cache (``GRADIO_TEMP_DIR``) is inside the server's ``TMPDIR`` unless ``env`` names it. Gradio names
    cached files by content and deletes its cached files when its server stops, so two servers sharing one
    cache (tests running side by side, or one after the other) would delete the example images the other
    still serves. The folder is outside the test's folders, whose names a test may check the page for
    (Gradio's file addresses show its cache folder)."""
    own = None
    if "TMPDIR" not in env:
        own = Path(tempfile.mkdtemp(prefix="augclip-test-server-"))
        env = {**env, "TMPDIR": str(own)}
    if "GRADIO_TEMP_DIR" not in env:
        env = {**env, "GRADIO_TEMP_DIR": str(Path(env["TMPDIR"]) / "gradio")}  # Gradio's own default, made explicit
    temp = temp or Path(env["TMPDIR"])
    with open(log, "w") as handle:
        process = subprocess.Popen([sys.executable, "app.py", *args], cwd=root, env=env, stdout=handle,
                                   stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return AppProcess(process, url, log, temp, own)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                if own is not None:
                    shutil.rmtree(own, ignore_errors=True)
                raise RuntimeError(f"the app did not start; log:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.2)  # a refused connection costs next to nothing: poll often
