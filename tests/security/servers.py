"""Start ``python app.py`` as its own process (for load, memory and disk tests) and read its memory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT, free_port


@dataclass
class AppProcess:
    process: subprocess.Popen
    url: str
    log: Path
    temp: Path  # the server's TMPDIR (its work folders) and GRADIO_TEMP_DIR (Gradio's cache) live here

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


def start_app(folder: Path, args: list[str] = (), env: dict[str, str] | None = None, root: Path = ROOT,
              timeout: float = 240, flags: bool = False) -> AppProcess:
    """``python app.py ARGS`` from ``root`` on 127.0.0.1 with the tiny random model and a private temp folder
    under ``folder``. ``flags``: model, address and port as command-line options instead of variables."""
    temp = folder / "tmp"
    (temp / "gradio").mkdir(parents=True, exist_ok=True)
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AUGCLIP_", "GRADIO_"))}
    full_env = {**inherited, "TMPDIR": str(temp), "GRADIO_TEMP_DIR": str(temp / "gradio"),
                "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1",
                "AUGCLIP_CACHE_DIR": str(folder / "cache"), "AUGCLIP_GDINO_MODEL": "random:tiny",
                "AUGCLIP_SAM_MODEL": "random:tiny", "AUGCLIP_DEVICE": "cpu", "AUGCLIP_CLIP_MODEL": "random:tiny",
                "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), **(env or {})}
    if flags:
        for name in ("AUGCLIP_CLIP_MODEL", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):
            full_env.pop(name)
        args = ["--clip-model", "random:tiny", "--host", "127.0.0.1", "--port", str(port), *args]
    log = folder / "app.log"
    with open(log, "w") as handle:
        process = subprocess.Popen([sys.executable, "app.py", *args], cwd=root, env=full_env, stdout=handle,
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
            time.sleep(1)


def folder_bytes(path: Path, prefixes: tuple[str, ...] = ()) -> int:
    """Bytes of every file under ``path`` (only in top-level folders starting with ``prefixes`` when given)."""
    total = 0
    for top in path.iterdir() if path.is_dir() else []:
        if prefixes and not top.name.startswith(prefixes):
            continue
        files = [top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()]
        total += sum(p.stat().st_size for p in files)
    return total
