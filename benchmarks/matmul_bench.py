"""CPU matrix kernels: torch's default BLAS (MKL sgemm on x86 wheels) against oneDNN, float32.

    python benchmarks/matmul_bench.py [--clip-model random:ViT-B-16] [--repeats 5] [--threads N]

Prints, for each matrix product of one ViT-B/16 image-tower layer (197 tokens x width 768) and of a
text pass (8 texts x 8 tokens x 512), the GFLOP/s of ``F.linear`` with each kernel, then the wall
time of whole forward passes of the image and text towers with ``AUGCLIP_CPU_MATMUL=blas`` and
``onednn`` (two encoders in one process, interleaved) and their ratio, and the largest difference
between the two kernels' embeddings. The medians of ``--repeats`` calls count. Random weights cost
what trained ones cost; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from feature_metrics_bench import timed as median_seconds  # noqa: E402  (one warm-up call, then the median)

# (rows, in features, out features): one image-tower layer of ViT-B/16, then one text pass
SHAPES = {
    "image qkv 197x768->2304": (197, 768, 2304),
    "image attn out 197x768->768": (197, 768, 768),
    "image mlp up 197x768->3072": (197, 768, 3072),
    "image mlp down 197x3072->768": (197, 3072, 768),
    "text mlp up 64x512->2048": (64, 512, 2048),
}


def fresh_texts(encoder, texts: list[str]):
    encoder.text_cache.clear()  # time the passes, not the cache
    return encoder.encode_texts(texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clip-model", default="random:ViT-B-16")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    args = parser.parse_args(argv)

    import numpy as np
    import torch
    import torch.nn.functional as F
    from PIL import Image

    from augclip_demo.inference.clip_encoder import ClipEncoder
    from augclip_demo.inference.cpu_matmul import cpu_matmul, onednn_available

    if args.threads:
        torch.set_num_threads(args.threads)
    if not onednn_available():
        print("this torch build has no oneDNN float32 linear kernel on this CPU: nothing to compare")
        return 1
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, median of {args.repeats}")
    print(f"{'product':32s}{'blas GFLOP/s':>14s}{'onednn GFLOP/s':>16s}{'ratio':>8s}")
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for name, (rows, k, n) in SHAPES.items():
            x = torch.randn(rows, k, generator=generator)
            w = torch.randn(n, k, generator=generator)
            b = torch.randn(n, generator=generator)
            speed = {}
            for kind in ("blas", "onednn"):
                def product(kind: str = kind, x=x, w=w, b=b) -> None:
                    with cpu_matmul(kind):
                        for _ in range(10):
                            F.linear(x, w, b)
                speed[kind] = 10 * 2 * rows * k * n / median_seconds(product, args.repeats) / 1e9
            print(f"{name:32s}{speed['blas']:14.1f}{speed['onednn']:16.1f}{speed['onednn'] / speed['blas']:8.2f}")

    encoders = {kind: ClipEncoder(args.clip_model, device="cpu", cpu_matmul=kind).load() for kind in ("blas", "onednn")}
    pixels = np.random.default_rng(0).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    image = encoders["blas"].preprocess_image(Image.fromarray(pixels))
    texts = [f"a photo with attribute number {i}" for i in range(8)]
    rows = {}
    for kind, encoder in encoders.items():
        rows[kind] = {
            "image tower, 1 image": median_seconds(lambda e=encoder: e.encode_preprocessed([image]), args.repeats),
            "text tower, 8 texts": median_seconds(lambda e=encoder: fresh_texts(e, texts), args.repeats),
        }
    print(f"\n{args.clip_model}, whole forward passes (seconds)")
    print(f"{'pass':24s}{'blas':>10s}{'onednn':>10s}{'ratio':>8s}")
    for stage in rows["blas"]:
        blas, onednn = rows["blas"][stage], rows["onednn"][stage]
        print(f"{stage:24s}{blas:10.4f}{onednn:10.4f}{onednn / blas:8.2f}")
    image_gap = np.abs(encoders["blas"].encode_preprocessed([image]) - encoders["onednn"].encode_preprocessed([image]))
    text_gap = np.abs(fresh_texts(encoders["blas"], texts) - fresh_texts(encoders["onednn"], texts))
    print(f"largest embedding difference between the kernels: image {image_gap.max():.2e}, text {text_gap.max():.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
