"""Page loads and server memory while the heaviest permitted request runs against ``python app.py``.

    python benchmarks/heavy_request.py                                  # random:tiny, 3 rounds
    python benchmarks/heavy_request.py --clip-model random:ViT-B-16 --rounds 2 --bpm
    python benchmarks/heavy_request.py --stalls                         # also name what held the interpreter

One round, through the API as a web client sends it: an evaluation at every bound (AUGCLIP_MAX_EDITS
edits, AUGCLIP_MAX_ATTRIBUTES attributes of AUGCLIP_MAX_ATTRIBUTE_CHARS characters on each side), then
every explanation (/explain: all relevancy maps, the UMAP view and every figure, drawn and zipped) and,
with --bpm, BPM (random detector and SAM unless the environment names others). Meanwhile the page
(GET /) is loaded four times a second. Printed: the page loads' median, 99th percentile and maximum,
the server's RSS over time and its peak (VmHWM), and per round the seconds each request took.

``--stalls`` starts the server with a sampler thread (through a ``sitecustomize`` module on its path)
that wakes every 5 ms; when it wakes more than 100 ms late, another thread held the interpreter lock,
and the sampler records every thread's innermost frames of this project and of matplotlib / PIL /
numpy at that moment. The most frequent places are printed. 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from augclip_demo.config import DEFAULT_MAX_ATTRIBUTE_CHARS, DEFAULT_MAX_ATTRIBUTES, DEFAULT_MAX_EDITS  # noqa: E402
from tests.security.servers import child_processes, start_app  # noqa: E402
from tests.support import EXAMPLES  # noqa: E402
from tests.ui.test_app import evaluate_args  # noqa: E402

FLOWER = EXAMPLES / "flower-pink"

SAMPLER = textwrap.dedent('''
    import os, sys, threading, time, json, traceback
    LOG = os.environ.get("AUGCLIP_BENCH_STALL_LOG")
    KEEP = ("augclip_demo", "matplotlib", "PIL", "numpy", "sklearn", "umap", "torch", "pandas", "gradio")
    def _frames(frame):
        out = []
        for item in traceback.extract_stack(frame)[::-1]:
            if any(f"/{name}/" in item.filename for name in KEEP):
                out.append(f"{item.filename.split('site-packages/')[-1].split('harden/')[-1]}:{item.lineno} {item.name}")
            if len(out) == 4:
                break
        return out
    def _run():
        me = threading.get_ident()
        with open(LOG, "a") as log:
            while True:
                start = time.perf_counter()
                time.sleep(0.005)
                late = time.perf_counter() - start - 0.005
                if late > 0.1:
                    stacks = [_frames(f) for tid, f in sys._current_frames().items() if tid != me]
                    log.write(json.dumps({"late": late, "stacks": [s for s in stacks if s]}) + "\\n")
                    log.flush()
    if os.environ.get("AUGCLIP_BENCH_SWITCH_S"):
        sys.setswitchinterval(float(os.environ["AUGCLIP_BENCH_SWITCH_S"]))
    if LOG:
        threading.Thread(target=_run, daemon=True, name="stall-sampler").start()
''')


def edits_folder(folder: Path, count: int) -> list[Path]:
    """``count`` distinct edit files (the example's edits, copied under new names as needed)."""
    sources = sorted(p for p in FLOWER.glob("*.png") if p.name != "source.png")
    out = []
    for i in range(count):
        path = folder / f"edit_{i}_{sources[i % len(sources)].name}"
        shutil.copy(sources[i % len(sources)], path)
        out.append(path)
    return out


def timed_load(url: str) -> float:
    start = time.perf_counter()
    urllib.request.urlopen(url, timeout=60).read()
    return time.perf_counter() - start


def large_images(folder: Path, count: int, side: int) -> tuple[Path, list[Path]]:
    """A source and ``count`` edits of ``side`` x ``side`` pixels (flat colours with a shape: small files,
    full-size decodes; the working resolution then reduces them)."""
    from PIL import Image, ImageDraw

    paths = []
    for i in range(count + 1):
        image = Image.new("RGB", (side, side), (200, 120 + 10 * i, 40))
        ImageDraw.Draw(image).ellipse((side // 4, side // 4, 3 * side // 4, 3 * side // 4), fill=(230, 90, 160 - 10 * i))
        paths.append(folder / f"large_{i}.png")
        image.save(paths[-1], compress_level=1)
    return paths[0], paths[1:]


def attributes(kind: str, count: int, chars: int) -> list[str]:
    words = ["petals", "flower", "orange", "pink", "garden", "leaves", "stem", "bloom", "bright", "soft"]
    out = []
    for i in range(count):
        text = f"{kind} {i} " + " ".join(words[(i + j) % len(words)] for j in range(chars // 6))
        out.append(text[:chars])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clip-model", default="random:tiny")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bpm", action="store_true", help="run BPM as well (random detector and SAM)")
    parser.add_argument("--stalls", action="store_true", help="name what held the interpreter lock")
    parser.add_argument("--side", type=int, help="images of SIDE x SIDE pixels instead of the example's")
    parser.add_argument("--clients", type=int, default=1, help="clients sending the rounds at the same time")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose app.py runs (compare two)")
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval in the server (seconds)")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server (repeatable)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="augclip-heavy-"))
    env = {"AUGCLIP_CLIP_MODEL": args.clip_model, **dict(item.split("=", 1) for item in args.env)}
    stall_log = work / "stalls.jsonl"
    if args.stalls or args.switch_interval:
        (work / "sampler").mkdir()
        (work / "sampler" / "sitecustomize.py").write_text(SAMPLER)
        env["PYTHONPATH"] = f"{args.root}:{work / 'sampler'}"
    if args.stalls:
        env["AUGCLIP_BENCH_STALL_LOG"] = str(stall_log)
    if args.switch_interval:
        env["AUGCLIP_BENCH_SWITCH_S"] = str(args.switch_interval)
    app = start_app(work, env=env, root=args.root)
    try:
        from gradio_client import Client

        edits = edits_folder(work, DEFAULT_MAX_EDITS)
        src = attributes("source", DEFAULT_MAX_ATTRIBUTES, DEFAULT_MAX_ATTRIBUTE_CHARS)
        tgt = attributes("target", DEFAULT_MAX_ATTRIBUTES, DEFAULT_MAX_ATTRIBUTE_CHARS)
        client = Client(app.url, verbose=False, httpx_kwargs={"timeout": 1800})
        warm = time.perf_counter()  # imports and compiles once per process (matplotlib, numba's UMAP): not counted
        client.predict(*evaluate_args(clip_model=args.clip_model), api_name="/evaluate")
        client.predict(True, api_name="/explain")
        print(f"warm-up {time.perf_counter() - warm:.1f} s; RSS {app.memory()['VmRSS'] / 2**30:.2f} GiB", flush=True)
        # A control server on the same machine (tests/security/test_attack.py's) spends the CPU time of an idle
        # page load per request; a load over 1 s while the control answered within 0.5 s was the app's own wait.
        from tests.security.servers import start_control_server

        idle = sorted(timed_load(app.url) for _ in range(9))[4]
        control, control_url = start_control_server(idle)
        loads: list[float] = []
        stalls: list[tuple[float, float]] = []
        rss: list[tuple[float, int]] = []
        done = threading.Event()
        begin = time.monotonic()

        def watch() -> None:
            while not done.wait(0.25):
                other: list[float] = []
                both = threading.Thread(target=lambda out=other: out.append(timed_load(control_url)))
                both.start()
                loads.append(timed_load(app.url))
                both.join()
                if loads[-1] > 1.0 and other and other[0] < 0.5:
                    stalls.append((round(loads[-1], 2), round(other[0], 2)))
                rss.append((time.monotonic() - begin, app.memory()["VmRSS"]))

        if args.stalls:
            stall_log.write_text("")  # the warm-up's stalls (imports, compiles) are not the question
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        source = FLOWER / "source.png"
        if args.side:
            source, edits = large_images(work, DEFAULT_MAX_EDITS, args.side)

        def rounds(index: int) -> None:
            own = client if index == 0 else Client(app.url, verbose=False, httpx_kwargs={"timeout": 1800})
            for round_ in range(args.rounds):
                times = {}
                start = time.perf_counter()
                table = own.predict(*evaluate_args(source=source, edits=edits, src=src, tgt=tgt,
                                                   clip_model=args.clip_model), api_name="/evaluate")[1]
                assert len(table["data"]) == len(edits), table
                times["evaluate"] = time.perf_counter() - start
                start = time.perf_counter()
                own.predict(True, api_name="/explain")
                times["explain"] = time.perf_counter() - start
                if args.bpm:
                    start = time.perf_counter()
                    own.predict(True, "make the flower pink", "rules", args.clip_model, api_name="/bpm")
                    times["bpm"] = time.perf_counter() - start
                print(f"client {index + 1} round {round_ + 1}: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items())
                      + f"; RSS {app.memory()['VmRSS'] / 2**30:.2f} GiB", flush=True)

        senders = [threading.Thread(target=rounds, args=(i,)) for i in range(args.clients)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        done.set()
        watcher.join()
        control.terminate()
        loads.sort()
        slow = [round(x, 2) for x in loads if x > 1.0]
        print(f"page loads: {len(loads)}, median {loads[len(loads) // 2]:.3f} s, 99th percentile "
              f"{loads[min(len(loads) - 1, int(len(loads) * 0.99))]:.3f} s, max {loads[-1]:.2f} s, over 1 s: {slow}")
        print(f"over 1 s while the control answered within 0.5 s (app, control): {len(stalls)} {stalls}")
        step = max(1, len(rss) // 12)
        print("server RSS (s, GiB): " + ", ".join(f"{t:.0f}: {b / 2**30:.2f}" for t, b in rss[::step]))
        print(f"server peak RSS (VmHWM, warm-up included) {app.memory()['VmHWM'] / 2**30:.2f} GiB")
        for child in child_processes(app.process.pid):  # any child it started counts against the bound
            print(f"child process {child['cmd'][:60]}: peak RSS {child['VmHWM'] / 2**30:.2f} GiB")
        if args.stalls:
            stalls = [json.loads(line) for line in stall_log.read_text().splitlines()]
            places = collections.Counter()
            late = collections.defaultdict(float)
            for stall in stalls:
                for stack in stall["stacks"]:
                    places[" < ".join(stack[:3])] += 1
                    late[" < ".join(stack[:3])] += stall["late"]
            print(f"{len(stalls)} stalls over 100 ms, {sum(s['late'] for s in stalls):.1f} s in all, longest "
                  f"{max((s['late'] for s in stalls), default=0):.2f} s; threads' places (count, seconds):")
            for place, count in places.most_common(15):
                print(f"  {count:4d} {late[place]:6.1f}  {place}")
    finally:
        app.stop()


if __name__ == "__main__":
    main()
