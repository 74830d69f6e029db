"""Time per image pair of each BPM stage (parse, detect, segment, judge) with full-size architectures.

    python benchmarks/bpm_bench.py                      # CPU, random SwinT GroundingDINO + ViT-B SAM + ViT-B-16 CLIP
    python benchmarks/bpm_bench.py --device cuda --repeats 10
    python benchmarks/bpm_bench.py --gdino-model IDEA-Research/grounding-dino-tiny --sam-model vit_b \
        --clip-model ViT-B-16/openai                    # trained weights, when they are available

The weights are random by default (``random:swint``: the IDEA-Research/grounding-dino-tiny
architecture; ``random:vit_b``: SAM ViT-B; ``random:ViT-B-16``: CLIP), which costs exactly as much
compute as the trained models and needs no download; the scores it prints are untrained and
meaningless, the times are what matters. Each stage is timed inside ``bpm_score`` itself (the
code path users run), after one warm-up pair; the median over ``--repeats`` pairs is printed as
wall-clock seconds and as process CPU seconds (summed over threads; on a machine shared with other
work, ``--threads 1`` makes the CPU column the single-core compute cost). Loading is timed apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STAGES = ("parse", "detect", "segment", "judge")


def scene(size: int, color: str):
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), (235, 230, 220))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, int(size * 0.7), size, size), fill=(120, 90, 60))  # a table
    draw.ellipse((int(size * 0.3), int(size * 0.4), int(size * 0.55), int(size * 0.72)), fill=color)  # a cup
    return image


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gdino-model", default="random:swint")
    parser.add_argument("--sam-model", default="random:vit_b")
    parser.add_argument("--sam-checkpoint", default=None)
    parser.add_argument("--clip-model", default="random:ViT-B-16")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--size", type=int, default=512, help="side of the square test images (MagicBrush: 512)")
    parser.add_argument("--instruction", default="make the cup red")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from augclip_demo.bpm import bpm_score
    from augclip_demo.bpm.models import get_bpm_models
    from augclip_demo.config import Settings
    from augclip_demo.inference.device import device_description, resolve_device

    settings = Settings.from_env(gdino_model=args.gdino_model, sam_model=args.sam_model,
                                 sam_checkpoint=args.sam_checkpoint, clip_model=args.clip_model, device=args.device)
    models = get_bpm_models(settings)
    loads = {}
    for name, model in (("GroundingDINO", models.detector), ("SAM", models.segmenter), ("CLIP", models.encoder)):
        start = time.perf_counter()
        model.load()
        loads[name] = time.perf_counter() - start
    device = resolve_device(args.device)
    print(f"device: {device_description(device)}; images {args.size}x{args.size}; instruction {args.instruction!r}")
    print(f"models: {models.detector.label} | {models.segmenter.label} | CLIP {models.encoder.spec.label}")
    print("load (s): " + ", ".join(f"{k} {v:.1f}" for k, v in loads.items()))
    source = scene(args.size, "white")
    # every pair gets a new edit (fresh pixels, so CLIP's content cache cannot help)
    colors = ["red", "crimson", "darkred", "orangered", "firebrick", "tomato", "indianred", "maroon", "salmon", "coral"]

    def run_pair(i: int):
        edit = scene(args.size, colors[i % len(colors)])
        return bpm_score(source, edit, args.instruction, models=models)

    run_pair(0)  # warm-up: first-call allocations, kernel selection
    wall: dict[str, list[float]] = {stage: [] for stage in (*STAGES, "total")}
    cpu: dict[str, list[float]] = {stage: [] for stage in (*STAGES, "total")}
    for i in range(1, args.repeats + 1):
        timings = run_pair(i).timings
        for stage in (*STAGES, "total"):
            wall[stage].append(timings[stage])
            cpu[stage].append(timings[f"{stage}_cpu"])
    print(f"\nseconds per image pair, median of {args.repeats} (timed inside bpm_score; CPU = process CPU time, "
          f"all {torch.get_num_threads()} torch threads):")
    print(f"  {'stage':8s} {'wall':>9s} {'CPU':>9s}")
    for stage in (*STAGES, "total"):
        print(f"  {stage:8s} {statistics.median(wall[stage]):9.3f} {statistics.median(cpu[stage]):9.3f}")
    print(f"torch threads {torch.get_num_threads()}, os.cpu_count() {os.cpu_count()}; "
          "random weights: the BPM values themselves are untrained and not meaningful")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
