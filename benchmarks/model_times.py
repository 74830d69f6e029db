"""Time per image of each supported model architecture (random weights of the real size: speed only).

    python benchmarks/model_times.py [--device cpu] [--models clip:ViT-B-16,gdino:swint,sam:vit_b] [--images 4]

Prints one row per model: load seconds, then seconds per image in steady state (after one warm-up
image): CLIP encodes images in one batch; GroundingDINO detects one phrase per image; SAM segments
one box per image. The numbers for the docs' table of supported models come from this script.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from PIL import Image, ImageDraw


def scene(i: int, size: int = 512) -> Image.Image:
    image = Image.new("RGB", (size, size), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    draw.ellipse((40 + 7 * i, 60, 260 + 7 * i, 280), fill=(200, 30, 30))
    draw.rectangle((300, 250, 480, 470), fill=(30, 120, 40))
    return image


def time_model(family: str, arch: str, device: str, n_images: int) -> tuple[float, float]:
    images = [scene(i) for i in range(n_images + 1)]
    start = time.perf_counter()
    if family == "clip":
        from augclip_demo.inference import ClipEncoder

        model = ClipEncoder(f"random:{arch}", device=device).load()
        load = time.perf_counter() - start
        model.encode_images(images[:1])
        start = time.perf_counter()
        model.encode_images(images[1:])
    elif family == "gdino":
        from augclip_demo.inference.grounding import GroundingDetector

        model = GroundingDetector(f"random:{arch}", device=device, batch_size=1).load()
        load = time.perf_counter() - start
        model.detect(images[:1], [["red ball"]])
        start = time.perf_counter()
        model.detect(images[1:], [["red ball"]] * n_images)
    elif family == "sam":
        from augclip_demo.inference.segmenter import SamSegmenter

        model = SamSegmenter(f"random:{arch}", device=device, batch_size=1).load()
        load = time.perf_counter() - start
        box = [np.array([40.0, 60.0, 260.0, 280.0])]
        model.segment(images[:1], [box])
        start = time.perf_counter()
        model.segment(images[1:], [box] * n_images)
    else:
        raise SystemExit(f"unknown family {family!r}")
    return load, (time.perf_counter() - start) / n_images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--models", default="clip:ViT-B-16,clip:ViT-B-32,clip:ViT-L-14,gdino:swint,sam:vit_b")
    parser.add_argument("--images", type=int, default=4, help="timed images per model (after one warm-up)")
    args = parser.parse_args()
    import torch

    print(f"device {args.device}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{args.images} timed images of 512 x 512")
    print(f"{'model':24s} {'load s':>8s} {'s / image':>10s}")
    for item in args.models.split(","):
        family, arch = item.split(":", 1)
        load, per_image = time_model(family, arch, args.device, args.images)
        print(f"{item:24s} {load:8.1f} {per_image:10.2f}", flush=True)


if __name__ == "__main__":
    main()
