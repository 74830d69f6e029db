"""``python app.py`` as its own process on 127.0.0.1: start it, wait until it answers, read its memory, stop it."""

from __future__ import annotations

import subprocess
import sys
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


def spawn_app(env: dict[str, str], log: Path, port: int, args: Sequence[str] = (), root: Path = ROOT,
              timeout: float = 240, temp: Path | None = None) -> AppProcess:
    """Run ``python app.py ARGS`` from ``root`` with exactly ``env``, its output in ``log``, and wait until
    ``http://127.0.0.1:PORT/`` answers (the log's tail is in the error when it never does)."""
    with open(log, "w") as handle:
        process = subprocess.Popen([sys.executable, "app.py", *args], cwd=root, env=env, stdout=handle,
                                   stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return AppProcess(process, url, log, temp)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the app did not start; log:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.2)  # a refused connection costs next to nothing: poll often
