"""Throughput of the Ray engine with 1 and 2 scoring actors, next to the local runner, on one manifest.

    python benchmarks/ray_bench.py [--items 300] [--actors 1,2] [--cpus 2] [--clip-model random:tiny]
                                   [--device cpu] [--metrics augclip,clip_dir,clip_i,clip_t,l2]

Draws a synthetic manifest (two edits per item, inline attributes), starts a local Ray instance with
``--cpus`` CPUs (timed: the start-up cost), then for each actor count runs the whole manifest into a
fresh Parquet folder and prints one table: seconds to connect, seconds until the first records
came back (actors starting: Python, torch, the model), seconds streaming the rest, and items per
second while streaming (the steady-state rate the cost model in docs/ray.md uses). The local
runner's rate on the same manifest is the last row. Every run's records are checked equal.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--actors", default="1,2")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--items-per-batch", type=int, default=16)
    parser.add_argument("--clip-model", default="random:tiny")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--metrics", default=None)
    parser.add_argument("--image-size", type=int, default=96)
    parser.add_argument("--local-threads", type=int, default=1,
                        help="torch threads of the local runner (Ray's actors get 1 per CPU they hold; 1 is also "
                             "what docs/batch.md advises on a small busy CPU)")
    parser.add_argument("--skip-ray", action="store_true", help="only the local runner")
    args = parser.parse_args()

    import ray

    from augclip_demo.batch.ray_engine import RayExecution, RayOptions
    from augclip_demo.batch.results import iter_results
    from augclip_demo.batch.runner import BatchOptions, BatchRunner
    from augclip_demo.batch.synthetic import write_synthetic_manifest
    from augclip_demo.config import Settings

    work = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    manifest = write_synthetic_manifest(work / "m", n_items=args.items, image_size=args.image_size)
    settings = Settings.from_env(clip_model=args.clip_model, device=args.device)
    options = BatchOptions(metrics=args.metrics) if args.metrics else BatchOptions()

    start = time.perf_counter()
    if not args.skip_ray:
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    startup = time.perf_counter() - start
    rows = []
    reference = None
    for actors in [] if args.skip_ray else [int(a) for a in args.actors.split(",")]:
        out = work / f"ray-{actors}.parquet"
        runner = BatchRunner(manifest, out, options=options, settings=settings, engine="ray")
        execution = RayExecution(runner, RayOptions(actors=actors, items_per_batch=args.items_per_batch))
        summary = execution.run()
        t = execution.timings
        records = list(iter_results(out))
        reference = reference or records
        assert records == reference, "the runs disagree"
        rate = (summary.n_ok - args.items_per_batch) / t["stream"] if t["stream"] > 0 else float("nan")
        rows.append((f"ray, {actors} actor(s)", summary.seconds, t["first_record"], t["stream"], rate))
    if not args.skip_ray:
        ray.shutdown()

    import torch

    torch.set_num_threads(args.local_threads)
    local_out = work / "local.jsonl"
    summary = BatchRunner(manifest, local_out, options=options, settings=settings).run()
    assert reference is None or list(iter_results(local_out)) == reference, "the local runner disagrees"
    rows.append(("local runner", summary.seconds, float("nan"), summary.seconds, summary.items_per_second))

    print(f"{args.items} items, 2 edits each, {args.clip_model} on {args.device}; Ray start-up (ray.init, "
          f"{args.cpus} CPUs): {startup:.1f}s")
    print(f"{'engine':<22}{'total s':>9}{'first s':>9}{'stream s':>10}{'items/s':>9}")
    for name, total, first, stream, rate in rows:
        print(f"{name:<22}{total:>9.1f}{first:>9.1f}{stream:>10.1f}{rate:>9.2f}")


if __name__ == "__main__":
    main()
