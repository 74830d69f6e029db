"""Memory and speed of ``manifest parquet`` on a generated Hub-style shard.

    python benchmarks/parquet_loader_bench.py [--rows 20000] [--side 32] [--folder /tmp/parquet-bench]

Writes a shard of ``--rows`` rows (row groups of 1000) whose two image columns are the Hub's
``{"bytes", "path"}`` struct holding distinct noise PNGs, then runs the MagicBrush preset on it in a
fresh process and prints rows/s and that process's peak resident memory (Linux ``ru_maxrss``). Run it
with two row counts: a loader that streams has the same peak for both.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LOAD = """
import json, resource, sys, time
from augclip_demo.batch.benchmarks import load_parquet
start = time.perf_counter()
result = load_parquet([sys.argv[1]], preset="magicbrush")
seconds = time.perf_counter() - start
print(json.dumps({"items": result.n_items, "seconds": seconds,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_shard(path: Path, rows: int, side: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("img_id", pa.string()), ("turn_index", pa.int32()), ("source_img", image),
                        ("mask_img", image), ("instruction", pa.string()), ("target_img", image)])
    rng = np.random.default_rng(0)

    def png() -> dict:
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (side, side, 3), dtype=np.uint8)).save(buffer, format="PNG")
        return {"bytes": buffer.getvalue(), "path": None}

    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, 1000):
            chunk = [{"img_id": str(i), "turn_index": 1, "source_img": png(), "mask_img": png(),
                      "instruction": f"edit number {i}", "target_img": png()}
                     for i in range(start, min(rows, start + 1000))]
            writer.write_table(pa.Table.from_pylist(chunk, schema=schema))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--side", type=int, default=32)
    parser.add_argument("--folder", default="/tmp/parquet-bench")
    args = parser.parse_args()
    folder = Path(args.folder)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shard = folder / "dev-00000-of-00001.parquet"
    start = time.perf_counter()
    write_shard(shard, args.rows, args.side)
    size_mb = shard.stat().st_size / 2**20
    print(f"shard: {args.rows} rows, {size_mb:.0f} MiB, written in {time.perf_counter() - start:.1f} s")
    out = subprocess.run([sys.executable, "-c", LOAD, str(shard)], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"manifest parquet: {figures['items']} items in {figures['seconds']:.1f} s "
          f"({figures['items'] / figures['seconds']:.0f} rows/s), peak RSS {figures['peak_rss_mb']:.0f} MiB")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
