"""Timing of the explanations: ``python benchmarks/explain_bench.py [--clip-model random:ViT-B-16]``.

Prints wall-clock and process CPU seconds for: the relevancy map per image (one image per pass and
batched), UMAP (import, first fit with numba's compile, later fits), the exact view, the figures
and a whole ``explain_report``. Run it in a fresh process on a quiet machine: the UMAP first call is
only "first" once per process. Random weights are fine for timing (the work does not depend on
the values), and nothing is downloaded.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, like the other benchmarks

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _measure(fn: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Median wall and CPU seconds of ``repeats`` calls, and the last result."""
    walls, cpus, result = [], [], None
    for _ in range(max(1, repeats)):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def _row(label: str, wall: float, cpu: float, note: str = "") -> None:
    print(f"  {label:<46} {wall:9.3f} s wall {cpu:9.3f} s CPU   {note}")


def _scene(size: int, seed: int) -> Any:
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    image = Image.new("RGB", (size, size), tuple(int(c) for c in rng.integers(0, 255, 3)))
    draw = ImageDraw.Draw(image)
    for _ in range(4):
        x0, y0 = (int(v) for v in rng.integers(0, size // 2, 2))
        x1, y1 = x0 + int(rng.integers(size // 8, size // 2)), y0 + int(rng.integers(size // 8, size // 2))
        draw.rectangle((x0, y0, x1, y1), fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
    return image


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/explain_bench.py", description=__doc__.splitlines()[0])
    parser.add_argument("--clip-model", default="random:ViT-B-16", help="backbone spec (default random:ViT-B-16)")
    parser.add_argument("--device", default="cpu", help="device (default cpu)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per timing, median reported (default 3)")
    parser.add_argument("--edits", type=int, default=2, help="edited images in the explain_report timing (default 2)")
    parser.add_argument("--image-size", type=int, default=320, help="side of the synthetic input images (default 320)")
    args = parser.parse_args(argv)
    if "umap" in sys.modules:
        print("note: umap was imported before the benchmark started; 'first call' is not a first call", file=sys.stderr)

    import torch

    from augclip_demo.explain.explanations import explain_report
    from augclip_demo.explain.hyperplane import exact_view, umap_coordinates, umap_view
    from augclip_demo.explain.relevancy import relevancy, relevancy_batch
    from augclip_demo.inference.clip_encoder import ClipEncoder
    from augclip_demo.pipeline import Attributes, Evaluator

    print(f"explanation timings: {args.clip_model} on {args.device}, torch threads {torch.get_num_threads()}, "
          f"{os.cpu_count()} CPUs, median of {args.repeats}")
    wall, cpu, encoder = _measure(lambda: ClipEncoder(args.clip_model, device=args.device).load(), 1)
    _row("model load (random init / weights)", wall, cpu)

    source = _scene(args.image_size, 0)
    edits = [_scene(args.image_size, i + 1) for i in range(args.edits)]
    attributes = Attributes(
        source=["a red square", "a blue background", "a flat painting", "four rectangles", "bright colours"],
        target=["a green circle", "a grassy field", "soft shadows", "a photograph"],
    )
    evaluator = Evaluator(encoder=encoder)
    wall, cpu, report = _measure(lambda: evaluator.evaluate(source, edits, "a green circle in a field", "a red square",
                                                            attributes), 1)
    _row(f"evaluate ({args.edits} edits, encode + metrics)", wall, cpu)
    target = report.arrays.target_text_embedding

    relevancy(encoder, source, target)  # warm-up: autograd and kernel set-up are not per-image costs
    wall, cpu, _ = _measure(lambda: relevancy(encoder, source, target), args.repeats)
    _row("relevancy, 1 image per pass", wall, cpu, "per image")
    batch = [source, *edits][:4]
    while len(batch) < 4:
        batch.append(source)
    targets = np.stack([target] * len(batch))
    wall, cpu, _ = _measure(lambda: relevancy_batch(encoder, batch, targets, batch_size=len(batch)), args.repeats)
    _row(f"relevancy, batch of {len(batch)}", wall / len(batch), cpu / len(batch), "per image")

    start_wall, start_cpu = time.perf_counter(), time.process_time()
    import umap  # noqa: F401  (numba compiles or loads its on-disk cache here)

    _row("UMAP: import umap-learn", time.perf_counter() - start_wall, time.process_time() - start_cpu)
    n_points = len(attributes.source) + len(attributes.target) + 1 + 2 * args.edits
    rng = np.random.default_rng(0)
    points = rng.normal(size=(n_points, encoder.embed_dim))
    wall, cpu, _ = _measure(lambda: umap_coordinates(points, seed=0), 1)
    _row(f"UMAP: first fit ({n_points} points, numba compile)", wall, cpu)
    wall, cpu, _ = _measure(lambda: umap_coordinates(points + 0.01, seed=0), args.repeats)
    _row(f"UMAP: later fits ({n_points} points)", wall, cpu)
    wall, cpu, _ = _measure(lambda: umap_view(report), args.repeats)
    _row("UMAP view of the report (fit + 2-D lines)", wall, cpu)
    wall, cpu, _ = _measure(lambda: exact_view(report), args.repeats)
    _row("exact view of the report", wall, cpu)

    wall, cpu, explanations = _measure(lambda: explain_report(report, encoder), 1)
    n_maps = 3 * args.edits + 1
    _row(f"explain_report ({args.edits} edits, {n_maps} relevancy maps, figures)", wall, cpu)
    for key in ("relevancy", "relevancy_per_image", "umap_view", "exact_view", "rankings", "figures"):
        if key in explanations.timings:
            print(f"    {key:<44} {explanations.timings[key]:9.3f} s wall")
    figures = explanations.all_figures()

    def render() -> None:
        import io

        for fig in figures.values():
            fig.savefig(io.BytesIO(), format="png", dpi=110)

    wall, cpu, _ = _measure(render, 1)
    _row(f"render {len(figures)} figures to PNG", wall, cpu)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
