"""Soak: many concurrent clients of mixed requests against ``python app.py`` for minutes; prints the errors,
the page-load times and the server's memory over time (it should stay flat).

    python benchmarks/soak.py                       # 20 clients, 180 s, random:tiny on CPU
    python benchmarks/soak.py --clients 20 --seconds 300
    python benchmarks/soak.py --root ../other-checkout   # that checkout's app.py, with this script's clients

Each client loops over a mix: an evaluation (three edits), a re-score with other options, a refused
request (a bound: 65 attributes, C = 1e30, a 5000-character target), a parse of an instruction, a
one-item batch (at most one batch runs at a time; the others wait in the queue), an Explore open of the
operator's results file, and a rater's next task of a study. Every answer is checked (a result with rows,
or the refusal's own message); anything else counts as an error. The page is loaded every 0.5 s
meanwhile. Printed: the page loads' percentiles, each kind of request's times (and how many took over
gradio_client's default 5 s), the server's memory over time. 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.explore.constructed import constructed_records, write_jsonl  # noqa: E402
from tests.security.servers import start_app  # noqa: E402
from tests.security.test_attack import ExploreOpen  # noqa: E402
from tests.study.helpers import write_study_manifest  # noqa: E402
from tests.support import EXAMPLES, TINY  # noqa: E402
from tests.ui.test_app import evaluate_args  # noqa: E402

KINDS = ("evaluate", "rescore", "refused", "parse", "batch", "explore", "study")

FLOWER = EXAMPLES / "flower-pink"
ATTRS = {"source": ["orange dahlia"], "target": ["pink dahlia"]}
REFUSALS = [
    ({"src": [f"attribute {i}" for i in range(65)]}, "65 attributes; the limit is 64"),
    ({"C": 1e30}, "must be at most 1e+06"),
    ({"target": "pink " * 1000}, "5000 characters; the limit is 2000"),
]


def batch_files(folder: Path) -> tuple[Path, Path]:
    manifest = folder / "m.jsonl"
    manifest.write_text(json.dumps({"id": "a", "source": "src.png", "target_text": "a pink dahlia", "attributes": ATTRS,
                                    "edits": [{"path": "edit.png"}]}) + "\n")
    with zipfile.ZipFile(folder / "images.zip", "w") as archive:
        archive.write(FLOWER / "source.png", "src.png")
        archive.write(FLOWER / "well_edited.png", "edit.png")
    return manifest, folder / "images.zip"


def client_loop(url: str, index: int, deadline: float, files: tuple[Path, Path], explore: ExploreOpen, rater: str,
                times: dict, errors: list) -> None:
    from gradio_client import Client, handle_file

    time.sleep(0.5 * index)  # clients arrive over 10 s, as people do, not in one instant
    try:
        client = Client(url, verbose=False)  # gradio_client's own timeouts, as a user's script has them
        client.predict(*evaluate_args(), api_name="/evaluate")  # the session's first evaluation (re-scores need one)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"client {index} start: {str(exc)[:200]}")
        return
    step = index
    while time.monotonic() < deadline:
        kind = KINDS[step % len(KINDS)]
        step += 1
        begin = time.perf_counter()
        try:
            if kind == "evaluate":
                assert len(client.predict(*evaluate_args(), api_name="/evaluate")[1]["data"]) == 3
            elif kind == "rescore":
                lists = ("dahlia is orange\nround flower head", "dahlia is pink")
                table = client.predict(*lists, "logistic", 2.0, False, True, TINY, api_name="/rescore")[1]
                assert len(table["data"]) == 3
            elif kind == "refused":
                kwargs, message = REFUSALS[step % len(REFUSALS)]
                try:
                    client.predict(*evaluate_args(**kwargs), api_name="/evaluate")
                    raise AssertionError(f"not refused: {kwargs.keys()}")
                except Exception as exc:  # noqa: BLE001
                    if message not in str(exc):
                        raise
            elif kind == "parse":
                assert "flower" in json.dumps(client.predict("make the flower pink", "rules", TINY,
                                                             api_name="/bpm_parse"))
            elif kind == "batch":
                manifest, images = files
                summary = client.predict(handle_file(str(manifest)), handle_file(str(images)), ["augclip"], "manual",
                                         TINY, False, api_name="/batch")[0]
                assert "1 item(s) scored, 0 failed" in summary, summary
            elif kind == "explore":
                answer = explore("results.jsonl", None)
                assert answer["success"] and f"{len(constructed_records())} records" in json.dumps(answer), answer
            else:
                request = urllib.request.Request(url + "study/api/task", headers={"Authorization": f"Bearer {rater}"})
                with urllib.request.urlopen(request, timeout=60) as answer:
                    assert answer.status == 200 and "total" in json.loads(answer.read())
            times.setdefault(kind, []).append(time.perf_counter() - begin)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"client {index} {kind}: {str(exc)[:200]}")
    client.close()


def page_alone(url: str, loads: int = 30) -> str:
    """The page's load time with nothing else running: at a new address each time (``Host``: rendered), and
    again and again at one address (kept in memory after the first: ui/page_cache.py)."""
    def took(host: str | None) -> float:
        request = urllib.request.Request(url, headers={"Host": host} if host else {})
        begin = time.perf_counter()
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()
        return time.perf_counter() - begin

    new = sorted(took(f"address-{i}.example") for i in range(loads))
    same = sorted(took(None) for _ in range(loads))
    return (f"the page alone ({loads} loads each): at a new address median {new[loads // 2] * 1e3:.1f} ms, "
            f"at the same address median {same[loads // 2] * 1e3:.1f} ms (slowest {same[-1] * 1e3:.1f} ms)")


def _stop_on_signal() -> None:
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # runs the finally that stops the server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose app.py is served (default: this one)")
    args = parser.parse_args()
    _stop_on_signal()
    work = Path(tempfile.mkdtemp(prefix="augclip-soak-"))
    results = write_jsonl(constructed_records(), work / "explore" / "results.jsonl")
    app = start_app(work, root=args.root.resolve(), env={"AUGCLIP_EXPLORE_FILES": str(results)})
    try:
        from augclip_demo.study import store

        files = batch_files(work)
        db = work / "cache" / "studies.sqlite3"  # the app's default studies file (its cache folder)
        store.create_study(db, "soak", write_study_manifest(work / "study", n_items=3), repeats=0)
        raters = [rater.token for rater in store.add_raters(db, "soak", labels=[f"r{i}" for i in range(args.clients)])
                  ] if args.clients else []
        explore = ExploreOpen(app)
        from gradio_client import Client

        warm = Client(app.url, verbose=False, httpx_kwargs={"timeout": 60})
        warm.predict(*evaluate_args(), api_name="/evaluate")
        warm.close()
        print(page_alone(app.url))
        rss = [(0.0, app.memory()["VmRSS"])]
        loads: list[float] = []
        times: dict[str, list[float]] = {}
        errors: list[str] = []
        start = time.monotonic()
        deadline = start + args.seconds
        threads = [threading.Thread(target=client_loop, args=(app.url, i, deadline, files, explore, raters[i], times,
                                                                errors))
                   for i in range(args.clients)]
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            begin = time.perf_counter()
            urllib.request.urlopen(app.url, timeout=30).read()
            loads.append(time.perf_counter() - begin)
            if time.monotonic() - start > len(rss) * 15:
                rss.append((time.monotonic() - start, app.memory()["VmRSS"]))
            time.sleep(0.5)
        rss.append((time.monotonic() - start, app.memory()["VmRSS"]))
        loads.sort()
        print(f"{args.clients} clients, {args.seconds:.0f} s: requests {sum(map(len, times.values()))}, "
              f"errors {len(errors)}")
        for error in errors[:10]:
            print("  ", error)
        print(f"page loads: {len(loads)}, median {loads[len(loads) // 2]:.3f} s, 90th percentile "
              f"{loads[int(len(loads) * 0.9)]:.3f} s, 99th percentile {loads[int(len(loads) * 0.99)]:.3f} s, "
              f"slowest {loads[-1]:.2f} s, over 1 s: {sum(t > 1 for t in loads)}")
        print("| request | answered | median s | 99th percentile s | slowest s | over 5 s |\n| --- | ---: | ---: | ---: | ---: | ---: |")
        for kind in KINDS:
            took = sorted(times.get(kind, [])) or [float("nan")]
            print(f"| {kind} | {len(times.get(kind, []))} | {took[len(took) // 2]:.2f} | {took[int(len(took) * 0.99)]:.2f} | "
                  f"{took[-1]:.2f} | {sum(t > 5 for t in took)} |")
        print("server RSS (s, GiB): " + ", ".join(f"{t:.0f}: {b / 2**30:.2f}" for t, b in rss))
        print(f"server peak RSS {app.memory()['VmHWM'] / 2**30:.2f} GiB")
    finally:
        app.stop()


if __name__ == "__main__":
    main()
