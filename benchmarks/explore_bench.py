"""Explore at scale: open a 100,000-record results file to its leaderboard, then filter and sort it.

``PYTHONPATH=. python benchmarks/explore_bench.py [--records 100000] [--format jsonl|parquet] [--keep DIR]``

Writes a synthetic results file (records in the batch runner's format: three editing models per item, five
metrics, human 2AFC choices and scores, 8 + 8 attributes, two datasets, made-up values), then prints, each in a
fresh measurement: the time from nothing to the leaderboard (DuckDB scan + per-model means, intervals, human
ranks and Kendall's tau), the time of a filter (dataset + metric range) answering with its leaderboard and first
grid page, the time of a sort (a page of the grid by a metric), then (no target) the disagreements and agreement
tables the page computes after those, and the process's peak resident memory (VmHWM).
Targets (issue 32): <= 3 s, <= 300 ms, < 1.5 GB on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from augclip_demo.explore import (
    OpenedFile,
    Slice,
    agreement,
    disagreements,
    grid_page,
    leaderboard,
    open_results,
)

MODELS = ("ip2p", "magicbrush", "ours")
METRICS = ("augclip", "clip_dir", "clip_i", "clip_t", "l2")


def synthetic_records(n: int, seed: int = 0):
    """``n`` batch result records with made-up values (model ``ours`` a little better on average)."""
    rng = np.random.default_rng(seed)
    run = {"model": "ViT-B-16/openai", "untrained": False, "precision": "fp32", "matmul": "blas",
           "metrics": list(METRICS), "options": {"classifier": "svm", "C": 1.0}, "version": "0.0-bench"}
    for i in range(n):
        quality = rng.normal(size=len(MODELS)) + np.array([0.0, 0.2, 0.4])
        edits = []
        for j, name in enumerate(MODELS):
            noise = rng.normal(scale=0.5, size=len(METRICS))
            values = {key: float(np.round(quality[j] * (1 if key != "l2" else -0.1) + noise[k], 6))
                      for k, key in enumerate(METRICS)}
            edits.append({"index": j, "path": f"{name}/{i}.png", "name": name, "role": "candidate",
                          "sha256": None, "metrics": values, "unavailable": {}})
        scores = [float(np.clip(np.round(2.5 + q, 1), 0, 5)) for q in quality]
        attributes = {"source_attributes": [f"source attribute {k} of item {i}" for k in range(8)],
                      "target_attributes": [f"target attribute {k} of item {i}" for k in range(8)],
                      "provenance": {"provider": "manual", "model": None, "prompt_version": None, "seed": None,
                                     "samples": 1, "seconds": None, "fidelity": "user", "extra": {}}}
        yield {"id": f"item-{i}", "dataset": "bench-a" if i % 2 else "bench-b", "status": "ok",
               "source": f"src/{i}.png", "target_text": "a photo", "source_text": None, "instruction": None,
               "edits": edits, "human": {"preferred": int(np.argmax(quality)), "scores": scores},
               "attributes": attributes, "meta": None, "run": run}


def write_results(folder: Path, n: int, fmt: str) -> Path:
    if fmt == "parquet":
        from augclip_demo.batch.results_parquet import write_parquet_results

        return write_parquet_results(synthetic_records(n), folder / "results.parquet", rows_per_part=10_000)
    path = folder / "results.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for record in synthetic_records(n):
            handle.write(json.dumps(record) + "\n")
    return path


def cpu_s() -> float:
    """CPU seconds of this process, all threads (steadier than wall time on a machine shared with other work)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    parser.add_argument("--keep", type=Path, help="write the synthetic file here (kept) instead of a temporary folder")
    parser.add_argument("--reuse", action="store_true", help="with --keep: use the file already there")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="explore-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    existing = folder / ("results.parquet" if args.format == "parquet" else "results.jsonl")
    path = existing if args.reuse and existing.exists() else write_results(folder, args.records, args.format)
    print(f"{'reused' if path == existing and args.reuse else 'wrote'} {args.records} records ({args.format}) in "
          f"{time.perf_counter() - start:.1f} s; peak RSS so far {peak_rss_mb():.0f} MB; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    start, cpu = time.perf_counter(), cpu_s()
    store = open_results([OpenedFile(path)])
    opened = time.perf_counter() - start
    board = leaderboard(store, Slice())
    to_board = time.perf_counter() - start
    print(f"open -> leaderboard: {to_board:.2f} s wall, {cpu_s() - cpu:.2f} s CPU (scan {opened:.2f} s; "
          f"{store.n_records} records, {store.n_edits} edits, {len(board.rows)} rows x {len(board.metrics)} metrics)"
          "  target <= 3 s")

    active = Slice(datasets=("bench-a",), ranges={"augclip": (0.0, None)})
    start = time.perf_counter()
    leaderboard(store, active)
    page = grid_page(store, active, sort="augclip", descending=True, page=0)
    filtered = time.perf_counter() - start
    print(f"filter (dataset + AugCLIP >= 0) -> leaderboard + first page: {filtered * 1000:.0f} ms "
          f"({page.total} edits match)  target <= 300 ms")
    start = time.perf_counter()
    grid_page(store, active, sort="l2", descending=False, page=3)
    print(f"sort (a page of the filtered grid by L2): {(time.perf_counter() - start) * 1000:.0f} ms  target <= 300 ms")
    # what the page shows next, after the leaderboard and the grid (no target: they walk the items)
    start = time.perf_counter()
    found = disagreements(store, active, "augclip", "clip_dir")
    print(f"then: disagreements AugCLIP vs CLIPdir {(time.perf_counter() - start) * 1000:.0f} ms ({len(found)} listed)")
    start = time.perf_counter()
    agreed = agreement(store, active)
    print(f"then: agreement tables {time.perf_counter() - start:.1f} s ({agreed.n_items} items, {agreed.n_boot} "
          "bootstrap resamples within the page's bound)")
    print(f"peak RSS: {peak_rss_mb():.0f} MB  target < 1500 MB")


if __name__ == "__main__":
    main()
