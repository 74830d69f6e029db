"""The MLLM judge's own overhead per edit; prints numbers, asserts nothing.

    python benchmarks/judge_bench.py [--edits 8] [--samples 1] [--size 1024] [--concurrency 4]

Against a local OpenAI-compatible server that answers at once (tests/support/chat_server.py with the
test judge's answers: no model time), so what is measured is ours: images to JPEG data URLs, two
requests per edit and sample (SC with source + edit, PQ with the edit), validation, the disk cache.
Prints the cold run (every answer asked), a warm run (every answer from the cache) and the requests
sent. The model's own time is the server's: add it per request (two per edit and sample).
Runs with a throwaway cache directory; offline.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, like the other benchmarks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=8)
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--size", type=int, default=1024, help="side of the square test images in pixels")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()

    cache_dir = Path(tempfile.mkdtemp(prefix="augclip-judge-bench-"))
    os.environ["AUGCLIP_CACHE_DIR"] = str(cache_dir)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)

    import numpy as np
    from PIL import Image

    from augclip_demo.config import Settings
    from augclip_demo.io import open_image
    from augclip_demo.judge import JudgeOptions, MLLMJudge
    from augclip_demo.llm import OpenAICompatibleClient
    from tests.support.chat_server import ChatServer
    from tests.support.judge_chat import judge_answer

    rng = np.random.default_rng(0)

    def picture(seed: int):
        pixels = rng.integers(0, 256, (args.size // 16, args.size // 16, 3), dtype=np.uint8)
        return open_image(Image.fromarray(pixels).resize((args.size, args.size), Image.Resampling.BILINEAR),
                          name=f"image {seed}")

    source = picture(0)
    edits = [picture(i + 1) for i in range(args.edits)]
    with ChatServer(judge_answer) as server:
        def judge() -> MLLMJudge:
            client = OpenAICompatibleClient(base_url=server.url, model="bench-judge", timeout=30, max_retries=0)
            return MLLMJudge(JudgeOptions(samples=args.samples, concurrency=args.concurrency),
                             settings=Settings(cache_dir=cache_dir), client=client)

        judge().judge(picture(99), picture(100), "warm up the client")  # imports, connection pool
        cold = judge()
        start = time.perf_counter()
        cold.judge_edits(source, edits, "make the picture brighter")
        cold_s = time.perf_counter() - start
        warm = judge()
        start = time.perf_counter()
        warm.judge_edits(source, edits, "make the picture brighter")
        warm_s = time.perf_counter() - start
    print(f"judge overhead, {args.edits} edits x {args.samples} sample(s), {args.size} px images, "
          f"concurrency {args.concurrency} (a server with no model time)")
    print(f"{'run':<8}{'requests':>10}{'seconds':>10}{'ms / edit':>12}")
    for name, j, seconds in (("cold", cold, cold_s), ("cached", warm, warm_s)):
        print(f"{name:<8}{j.requests:>10}{seconds:>10.3f}{1000 * seconds / args.edits:>12.1f}")
    print(f"cache: {cold_s / max(warm_s, 1e-9):.1f}x faster when every answer is cached")


if __name__ == "__main__":
    main()
