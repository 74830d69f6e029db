"""Start ``python app.py`` as its own process (for load, memory and disk tests) and read its memory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.support import ROOT, free_port
from tests.support.app_process import AppProcess, spawn_app


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
                "AUGCLIP_SAM_MODEL": "random:tiny", "AUGCLIP_BPM_PRESET": "standard", "AUGCLIP_DEVICE": "cpu", "AUGCLIP_CLIP_MODEL": "random:tiny",
                "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), **(env or {})}
    if flags:
        for name in ("AUGCLIP_CLIP_MODEL", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):
            full_env.pop(name)
        args = ["--clip-model", "random:tiny", "--host", "127.0.0.1", "--port", str(port), *args]
    return spawn_app(full_env, folder / "app.log", port, args, root, timeout, temp)


def folder_bytes(path: Path, prefixes: tuple[str, ...] = ()) -> int:
    """Bytes of every file under ``path`` (only in top-level folders starting with ``prefixes`` when given)."""
    total = 0
    for top in path.iterdir() if path.is_dir() else []:
        if prefixes and not top.name.startswith(prefixes):
            continue
        files = [top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()]
        total += sum(p.stat().st_size for p in files)
    return total


def child_processes(pid: int) -> list[dict]:
    """The children of process ``pid`` (any process the app started): command line and peak RSS
    (``VmHWM``, bytes), from Linux /proc."""
    out = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            if int(fields["PPid"]) == pid and "VmHWM" in fields:
                cmd = (status.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out.append({"cmd": cmd.strip(), "VmHWM": int(fields["VmHWM"].split()[0]) * 1024})
        except (OSError, KeyError, ValueError):  # a process that ended meanwhile
            continue
    return out

CONTROL_SERVER = """
import http.server, sys, time
port, work = int(sys.argv[1]), float(sys.argv[2])
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        end = time.thread_time() + work  # CPU time, as a page load of the app spends it
        while time.thread_time() < end:
            pass
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def start_control_server(idle: float) -> tuple[subprocess.Popen, str]:
    """A control server beside the app (another process on the same machine that spends, per request, the
    CPU time ``idle`` an idle page load of the app spends), started and answering; and its URL."""
    port = free_port()
    control = subprocess.Popen([sys.executable, "-c", CONTROL_SERVER, str(port), str(idle)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(50):
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError:
            time.sleep(0.2)
    return control, url
