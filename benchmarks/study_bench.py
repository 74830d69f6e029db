"""Answers per second the rater page's server takes from concurrent raters, and the answer latency.

    python benchmarks/study_bench.py [--raters 8] [--seconds 20] [--items 100]

Draws a manifest of small pictures, creates a 2AFC study with one rater per thread, starts
``python app.py`` (random:tiny, CPU) on a free port with the study database, and lets every rater
fetch a task and answer it in a loop over real HTTP on 127.0.0.1 for the given time. Prints the
answers stored per second (each one committed with ``synchronous=FULL``) and the median / 95th
percentile time of an answer request.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from augclip_demo.study import store  # noqa: E402
from tests.support import free_port  # noqa: E402
from tests.support.app_process import spawn_app  # noqa: E402


def manifest(folder: Path, items: int) -> Path:
    rng = random.Random(0)
    lines = []
    for i in range(items):
        paths = []
        for k in range(4):
            path = f"img/{i}-{k}.png"
            (folder / "img").mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (256, 256), tuple(rng.randrange(256) for _ in range(3))).save(folder / path)
            paths.append(path)
        lines.append({"id": f"i{i}", "source": paths[0], "target_text": f"picture {i}",
                      "edits": [{"path": p, "name": f"m{k}"} for k, p in enumerate(paths[1:])]})
    out = folder / "manifest.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return out


REFUSED: list[int] = []  # 429s: a rater over the per-link rate (study/limits.py) waits as told, like the page


def call(url: str, token: str, body: bytes | None = None) -> dict:
    # each rater at its own address (a proxy on 127.0.0.1 names it), as raters on a public Space are
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "X-Forwarded-For": f"198.18.{len(token) % 7}.{sum(map(ord, token)) % 250 + 1}"}
    while True:
        request = urllib.request.Request(url, data=body, method="POST" if body else "GET", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            if error.code != 429:
                raise
            REFUSED.append(1)
            time.sleep(int(error.headers.get("Retry-After", "1")))


def rater(base: str, token: str, until: float, latencies: list[float]) -> None:
    rng = random.Random(token)
    while time.monotonic() < until:
        view = call(base + "study/api/task", token)
        if view["task"] is None:
            return
        body = json.dumps({"position": view["task"]["position"],
                           "answers": {"overall": rng.choice(["left", "right", "tie"])}}).encode()
        start = time.perf_counter()
        call(base + "study/api/answer", token, body)
        latencies.append(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--raters", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--items", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "studies.sqlite3"
        store.create_study(db, "bench", manifest(folder / "data", args.items))
        tokens = [r.token for r in store.add_raters(db, "bench", count=args.raters)]
        port = free_port()
        env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
               "AUGCLIP_CLIP_MODEL": "random:tiny", "AUGCLIP_DEVICE": "cpu", "AUGCLIP_STUDY_DB": str(db),
               "AUGCLIP_CACHE_DIR": str(folder / "cache"), "GRADIO_ANALYTICS_ENABLED": "False",
               "PYTHONPATH": str(ROOT)}
        server = spawn_app(env, folder / "app.log", port)
        try:
            latencies: list[float] = []
            start = time.monotonic()
            threads = [threading.Thread(target=rater, args=(server.url, t, start + args.seconds, latencies))
                       for t in tokens]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - start
        finally:
            server.stop()
        stored = len(store.load_study(db, "bench").judgments)
        cuts = statistics.quantiles(latencies, n=20)
        print(f"{args.raters} raters, {elapsed:.1f} s: {stored} answers stored, {stored / elapsed:.1f} answers/s; "
              f"answer request median {statistics.median(latencies) * 1000:.0f} ms, 95th percentile "
              f"{cuts[18] * 1000:.0f} ms; {len(REFUSED)} request(s) over a rate limit waited")


if __name__ == "__main__":
    main()
