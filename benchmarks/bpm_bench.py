"""Time per image pair of each BPM stage (parse, detect, segment, judge) with full-size architectures.

    python benchmarks/bpm_bench.py                      # CPU, both presets: standard (random SwinT GroundingDINO
                                                        # at 800 px + ViT-B SAM) and fast (OWL-ViT B/32 at 768 px
                                                        # + SAM 2.1 Hiera-Tiny at 512 px)
    python benchmarks/bpm_bench.py --presets fast --repeats 1   # the fast preset alone
    python benchmarks/bpm_bench.py --device cuda --repeats 10
    python benchmarks/bpm_bench.py --gdino-model IDEA-Research/grounding-dino-tiny --sam-model vit_b \
        --fast-sam-model facebook/sam2.1-hiera-tiny --fast-detector-model google/owlvit-base-patch32 \
        --clip-model ViT-B-16/openai
                                                        # trained weights, when they are available: then the
                                                        # mask agreement (IoU fast vs standard) means something

The weights are random by default (``random:swint``: the IDEA-Research/grounding-dino-tiny
architecture; ``random:vit_b``: SAM ViT-B; ``random:ViT-B-16``: CLIP), which costs exactly as much
compute as the trained models and needs no download; the scores it prints are untrained and
meaningless, the times are what matters. Each stage is timed inside ``bpm_score`` itself (the
code path users run), after one warm-up pair; the median over ``--repeats`` pairs is printed as
wall-clock seconds and as process CPU seconds (summed over threads; on a machine shared with other
work, ``--threads 1`` makes the CPU column the single-core compute cost). Loading is timed apart.

Each repeat scores two pairs: a new source with its first edit ("new src": both images detected
and segmented) and a second edit of that source ("same src": the fast preset's models find the
source's detections and SAM 2 image embedding in their content-hash caches; the standard preset
has no such cache and recomputes them).
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
KINDS = ("new src", "same src")


def scene(size: int, color: str, background: tuple[int, int, int] = (235, 230, 220)):
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), background)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, int(size * 0.7), size, size), fill=(120, 90, 60))  # a table
    draw.ellipse((int(size * 0.3), int(size * 0.4), int(size * 0.55), int(size * 0.72)), fill=color)  # a cup
    return image


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="standard,fast",
                        help="BPM presets to time on the same pairs, comma-separated (default standard,fast)")
    parser.add_argument("--gdino-model", default="random:swint")
    parser.add_argument("--sam-model", default="random:vit_b")
    parser.add_argument("--sam-checkpoint", default=None)
    parser.add_argument("--fast-sam-model", default="random:hiera-tiny", help="the fast preset's SAM 2")
    parser.add_argument("--fast-detector-model", default="random:owlvit-b32", help="the fast preset's OWL-ViT")
    parser.add_argument("--clip-model", default="random:ViT-B-16")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--size", type=int, default=512, help="side of the square test images (MagicBrush: 512)")
    parser.add_argument("--instruction", default="make the cup red")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from augclip_demo.bpm import bpm_score
    from augclip_demo.bpm.models import get_bpm_models
    from augclip_demo.config import Settings
    from augclip_demo.inference.device import device_description, resolve_device

    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    device = resolve_device(args.device)
    print(f"device: {device_description(device)}; images {args.size}x{args.size}; instruction {args.instruction!r}")
    # one source per repeat (a different background, so no cache knows it) and a warm-up source
    sources = [scene(args.size, "white", background=(235 - i, 230, 220)) for i in range(args.repeats + 1)]
    keys = [(kind, stage) for kind in KINDS for stage in (*STAGES, "total")]
    # every pair gets a new edit (fresh pixels, so CLIP's content cache cannot help)
    colors = ["red", "crimson", "darkred", "orangered", "firebrick", "tomato", "indianred", "maroon", "salmon", "coral"]
    medians: dict[str, dict[str, tuple[float, float]]] = {}
    masks: dict[str, list[tuple]] = {}
    untrained = False
    for preset in presets:
        settings = Settings.from_env(gdino_model=args.gdino_model, sam_model=args.sam_model,
                                     sam_checkpoint=args.sam_checkpoint, fast_sam_model=args.fast_sam_model,
                                     fast_detector_model=args.fast_detector_model,
                                     clip_model=args.clip_model, device=args.device, bpm_preset=preset)
        models = get_bpm_models(settings)
        untrained = untrained or models.untrained
        loads = {}
        for name, model in (("detector", models.detector), ("segmenter", models.segmenter), ("CLIP", models.encoder)):
            start = time.perf_counter()
            model.load()
            loads[name] = time.perf_counter() - start
        sam_input = getattr(models.segmenter, "input_size", None) or "as the checkpoint"
        print(f"\n[{preset}] {models.detector.label} (input {models.detector.input_size or 'as the checkpoint'}) | "
              f"{models.segmenter.label} (input {sam_input}) | CLIP {models.encoder.spec.label}")
        print(f"[{preset}] load (s): " + ", ".join(f"{k} {v:.1f}" for k, v in loads.items()))

        def run_pair(i: int, edit: int, models=models):
            # the edit's background differs from its source's and from the other edits': every crop is new to CLIP
            edited = scene(args.size, colors[(2 * i + edit) % len(colors)], background=(235 - i, 229 - edit, 220))
            return bpm_score(sources[i], edited, args.instruction, models=models)

        run_pair(0, 0)  # warm-up: first-call allocations, kernel selection
        wall: dict[str, list[float]] = {key: [] for key in keys}
        cpu: dict[str, list[float]] = {key: [] for key in keys}
        masks[preset] = []
        for i in range(1, args.repeats + 1):
            for edit, kind in enumerate(KINDS):
                result = run_pair(i, edit)
                for stage in (*STAGES, "total"):
                    wall[(kind, stage)].append(result.timings[stage])
                    cpu[(kind, stage)].append(result.timings[f"{stage}_cpu"])
                if edit == 0:
                    masks[preset].append((result.origin.mask, result.edit.mask))
        medians[preset] = {key: (statistics.median(wall[key]), statistics.median(cpu[key])) for key in keys}
        models.unload()  # one preset's region models in memory at a time

    print(f"\nseconds per image pair, median of {args.repeats} (timed inside bpm_score; CPU = process CPU time, "
          f"all {torch.get_num_threads()} torch threads; on CUDA each stage ends by copying its results to the host, "
          "so the wall times include the GPU work):")
    columns = [(p, kind) for p in presets for kind in KINDS]
    print(f"  {'stage':8s}" + "".join(f" {p + ' ' + k + ' wall':>24s} {'CPU':>7s}" for p, k in columns))
    for stage in (*STAGES, "total"):
        print(f"  {stage:8s}" + "".join(f" {medians[p][(k, stage)][0]:24.3f} {medians[p][(k, stage)][1]:7.3f}"
                                        for p, k in columns))
    if "standard" in medians and len(presets) > 1:
        for kind in KINDS:
            base_wall, base_cpu = medians["standard"][(kind, "total")]
            for preset in presets:
                if preset != "standard":
                    wall_s, cpu_s = medians[preset][(kind, "total")]
                    print(f"ratio {preset} / standard, {kind}: wall {wall_s / base_wall:.3f}, CPU {cpu_s / base_cpu:.3f}")

        def iou(a, b) -> float | None:
            if a is None or b is None:
                return None
            union = np.logical_or(a, b).sum()
            return float(np.logical_and(a, b).sum() / union) if union else 1.0

        for preset in presets:
            if preset == "standard":
                continue
            pairs = [(iou(s[0], f[0]), iou(s[1], f[1])) for s, f in zip(masks["standard"], masks[preset])]
            values = [v for pair in pairs for v in pair if v is not None]
            found = sum(v is not None for pair in pairs for v in pair)
            print(f"mask agreement {preset} vs standard: mean IoU {np.mean(values) if values else float('nan'):.3f} "
                  f"over {found} masks both presets found ({2 * len(pairs) - found} found by only one or neither)"
                  + ("  [RANDOM WEIGHTS: agreement is meaningless; rerun with trained weights]" if untrained else ""))
    print(f"torch threads {torch.get_num_threads()}, os.cpu_count() {os.cpu_count()}; "
          + ("random weights: BPM values and mask agreement are untrained and not meaningful, the times are real"
             if untrained else "trained weights"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
