"""Cost per edit of the reference and preservation metrics (docs/metrics.md), one table from one run.

    python benchmarks/feature_metrics_bench.py [--size 512] [--repeats 3] [--device cpu]

Uses the real architectures with random weights (``random:dino-vits16``, ``random:dino-vitb8``,
``random:squeeze``, ``random:alex``, ``random:inception-v3-compat``): the cost of a forward pass
does not depend on the weights' values, and no download is needed. Each row is the median over
``--repeats`` of one edit's work after one warm-up call (model loading is reported separately).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def timed(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="image side in pixels (PIE-Bench: 512)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    import torch

    from augclip_demo.inference.dino import DinoFeatures
    from augclip_demo.inference.fid import FidInception
    from augclip_demo.inference.image_measures import unedited_measures
    from augclip_demo.inference.lpips import LpipsNetwork
    from augclip_demo.metrics.reference import l1_to_ground_truth, l2_to_ground_truth, structure_distance

    rng = np.random.default_rng(0)
    size = (args.size, args.size)
    source = Image.fromarray((rng.random((*size, 3)) * 255).astype(np.uint8))
    edit = Image.fromarray((rng.random((*size, 3)) * 255).astype(np.uint8))
    mask = np.zeros(size, bool)
    mask[: args.size // 2] = True
    rows: list[tuple[str, float]] = []
    loads: list[tuple[str, float]] = []

    rows.append(("l1_gt + l2_gt (numpy)", timed(lambda: (l1_to_ground_truth(edit, source),
                                                          l2_to_ground_truth(edit, source)), args.repeats)))
    rows.append(("psnr/mse/ssim_unedited (torchmetrics)", timed(lambda: unedited_measures(source, edit, mask),
                                                               args.repeats)))
    for net in ("squeeze", "alex"):
        lpips = LpipsNetwork(f"random:{net}", device=args.device)
        start = time.perf_counter()
        lpips.load()
        loads.append((f"LPIPS {net}", time.perf_counter() - start))
        rows.append((f"lpips_unedited ({net}) incl. psnr/mse/ssim",
                     timed(lambda lpips=lpips: unedited_measures(source, edit, mask, lpips), args.repeats)))
    small = DinoFeatures("random:dino-vits16", device=args.device)
    start = time.perf_counter()
    small.load()
    loads.append(("DINO ViT-S/16", time.perf_counter() - start))
    rows.append(("dino_gt (ViT-S/16, 224 px, per image)", timed(lambda: small.embed([edit]), args.repeats)))
    base = DinoFeatures("random:dino-vitb8", device=args.device)
    start = time.perf_counter()
    base.load()
    loads.append(("DINO ViT-B/8", time.perf_counter() - start))
    keys = base.keys([source, edit])
    rows.append(("structure_distance keys (ViT-B/8, 224 px, per image)", timed(lambda: base.keys([edit]),
                                                                               args.repeats)))
    rows.append(("structure_distance math (numpy)", timed(lambda: structure_distance(keys[0], keys[1]),
                                                          args.repeats)))
    fid = FidInception("random:inception-v3-compat", device=args.device)
    start = time.perf_counter()
    fid.load()
    loads.append(("FID Inception", time.perf_counter() - start))
    rows.append(("FID Inception features (per image)", timed(lambda: fid.features([edit]), args.repeats)))

    print(f"device {args.device}, torch threads {torch.get_num_threads()}, images {args.size}x{args.size}")
    print(f"{'per edit':58s} {'seconds':>9s}")
    for name, seconds in rows:
        print(f"{name:58s} {seconds:9.3f}")
    print(f"{'model load (random weights, build only)':58s}")
    for name, seconds in loads:
        print(f"  {name:56s} {seconds:9.3f}")


if __name__ == "__main__":
    main()
