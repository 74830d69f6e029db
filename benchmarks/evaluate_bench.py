"""Time one Evaluator.evaluate call with N edited images, split by stage (wall and process CPU time).

    python benchmarks/evaluate_bench.py [--clip-model random:ViT-B-16] [--edits 8] [--device cpu] [--repeats 3]

The first call (cold: nothing cached) and later calls on new images (warm model, empty embedding
caches) are reported separately; the images are the four examples' edits, re-saved with small
pixel changes so every call has to encode them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from augclip_demo.attributes import Attributes  # noqa: E402
from augclip_demo.pipeline import Evaluator  # noqa: E402


def make_edits(folder: Path, count: int, round_index: int) -> list[Path]:
    sources = sorted((ROOT / "assets" / "examples").glob("*/*.png"))
    rng = np.random.default_rng(round_index)
    paths = []
    for i in range(count):
        pixels = np.asarray(Image.open(sources[i % len(sources)]).convert("RGB"), dtype=np.int16)
        pixels = np.clip(pixels + rng.integers(-2, 3, pixels.shape), 0, 255).astype(np.uint8)
        path = folder / f"round{round_index}_edit{i}.png"
        Image.fromarray(pixels).save(path)
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clip-model", default="random:ViT-B-16")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--edits", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    example = ROOT / "assets" / "examples" / "flower-pink"
    attrs = json.loads((example / "attributes.json").read_text())
    attributes = Attributes(attrs["source_attributes"], attrs["target_attributes"])
    evaluator = Evaluator(args.clip_model, device=args.device)
    load_start = time.perf_counter()
    evaluator.encoder.load()
    print(f"model {args.clip_model} on {evaluator.encoder.info().device_name}: loaded in {time.perf_counter() - load_start:.2f}s")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for round_index in range(args.repeats + 1):
            edits = make_edits(Path(tmp), args.edits, round_index)
            evaluator.encoder.text_cache.clear()  # every round encodes its texts as well
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            report = evaluator.evaluate(example / "source.png", edits, "a pink dahlia flower", "an orange dahlia flower",
                                        attributes)
            cpu, wall = time.process_time() - cpu_start, time.perf_counter() - wall_start
            t = report.timings
            rows.append({"round": round_index, "image_encoding": t["image_encoding"], "text_encoding": t["text_encoding"],
                         "metrics": t["metrics"], "total_wall": wall, "total_cpu": cpu})
    print(f"{args.edits} edited images + 1 source, {len(attributes.source)} + {len(attributes.target)} attributes, "
          "2 texts; seconds (wall unless noted)")
    print(f"{'round':>6} {'images':>8} {'texts':>8} {'metrics':>8} {'total':>8} {'cpu':>8}")
    for row in rows:
        print(f"{'cold' if row['round'] == 0 else row['round']:>6} {row['image_encoding']:8.3f} {row['text_encoding']:8.3f} "
              f"{row['metrics']:8.3f} {row['total_wall']:8.3f} {row['total_cpu']:8.3f}")
    warm = rows[1:] or rows
    median = {k: statistics.median(r[k] for r in warm) for k in ("image_encoding", "text_encoding", "metrics", "total_wall", "total_cpu")}
    print(f"median of warm rounds: images {median['image_encoding']:.3f}s, texts {median['text_encoding']:.3f}s, "
          f"metrics {median['metrics']:.3f}s, total {median['total_wall']:.3f}s wall / {median['total_cpu']:.3f}s CPU")


if __name__ == "__main__":
    main()
