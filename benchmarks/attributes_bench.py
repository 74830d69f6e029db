"""Timings of attribute extraction; prints numbers, asserts nothing.

    python benchmarks/attributes_bench.py [--clip-model random:tiny] [--items 30]

1. clip-vocab vocabulary embeddings: first encoding, then from disk (fresh process state), then memory;
2. clip-vocab per item, the way a batch runner calls it (``get_provider`` per item, attribute cache off),
   and a cache hit;
3. the openai provider's own overhead per item (image to data URL, three requests, parsing) against
   a local OpenAI-compatible server that answers at once (no model time), plus ``get_provider`` cost.

Runs with a throwaway cache directory; offline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, like the other benchmarks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clip-model", default="random:tiny")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--items", type=int, default=30)
    args = parser.parse_args()

    cache_dir = Path(tempfile.mkdtemp(prefix="augclip-bench-"))
    os.environ["AUGCLIP_CACHE_DIR"] = str(cache_dir)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)

    import numpy as np
    from PIL import Image

    from augclip_demo.attributes import get_provider
    from augclip_demo.attributes.clip_vocab import clear_memory_cache, vocabulary_embeddings
    from augclip_demo.attributes.vocabulary import default_vocabulary
    from augclip_demo.config import Settings
    from augclip_demo.inference import ClipEncoder
    from tests.support.attribute_chat import paper_flow
    from tests.support.chat_server import ChatServer

    settings = Settings.from_env(clip_model=args.clip_model, device=args.device, cache_dir=cache_dir)
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)) for _ in range(args.items + 1)]

    encoder = ClipEncoder.from_settings(settings)
    start = time.perf_counter()
    encoder.load()
    print(f"model {encoder.spec.label} on {encoder.device}: load {time.perf_counter() - start:.2f} s")

    vocab = default_vocabulary()
    first = vocabulary_embeddings(encoder, vocab, cache_dir=cache_dir)
    print(f"vocabulary ({len(vocab)} phrases): {first.origin} in {first.seconds:.2f} s "
          f"({len(vocab) / first.seconds:.0f} phrases/s)")
    clear_memory_cache()
    disk = vocabulary_embeddings(encoder, vocab, cache_dir=cache_dir)
    print(f"vocabulary: {disk.origin} in {1000 * disk.seconds:.1f} ms")
    memory = vocabulary_embeddings(encoder, vocab, cache_dir=cache_dir)
    print(f"vocabulary: {memory.origin} in {1000 * memory.seconds:.3f} ms")

    # clip-vocab, one get_provider per item as a batch runner would; cache off; distinct images
    get_provider("clip-vocab", encoder=encoder, settings=settings, use_cache=False).extract(images[0], "warm up")
    build, extract = [], []
    for i, image in enumerate(images[1:]):
        t0 = time.perf_counter()
        provider = get_provider("clip-vocab", encoder=encoder, settings=settings, use_cache=False)
        t1 = time.perf_counter()
        provider.extract(image, f"a photo of item {i} in winter")
        t2 = time.perf_counter()
        build.append(t1 - t0)
        extract.append(t2 - t1)
    print(f"clip-vocab per item ({args.items} items, new image and text each): get_provider "
          f"{1000 * statistics.median(build):.2f} ms, extract median {1000 * statistics.median(extract):.1f} ms "
          f"(includes encoding the image and the target text)")
    cached_provider = get_provider("clip-vocab", encoder=encoder, settings=settings)
    cached_provider.extract(images[1], "a cached item")
    t0 = time.perf_counter()
    hit = cached_provider.extract(images[1], "a cached item")
    print(f"clip-vocab attribute-cache hit: {1000 * (time.perf_counter() - t0):.1f} ms ({hit.provenance.extra['cache']})")
    again = []
    for i, image in enumerate(images[1:]):  # image and text embeddings now in the encoder's caches
        provider = get_provider("clip-vocab", encoder=encoder, settings=settings, use_cache=False)
        t0 = time.perf_counter()
        provider.extract(image, f"a photo of item {i} in winter")
        again.append(time.perf_counter() - t0)
    print(f"clip-vocab per item with image/text already embedded (the ranking alone): median "
          f"{1000 * statistics.median(again):.2f} ms")

    # openai provider overhead against an instant local server
    big = Image.fromarray(rng.integers(0, 255, (1536, 2048, 3), dtype=np.uint8))
    with ChatServer(responder=paper_flow) as server:
        os.environ["OPENAI_BASE_URL"] = server.url
        t0 = time.perf_counter()
        provider = get_provider("openai", model="bench", settings=settings, use_cache=False)
        print(f"openai get_provider (first, imports the SDK): {1000 * (time.perf_counter() - t0):.0f} ms")
        provider.extract(images[0], "warm up")
        build, extract = [], []
        for i in range(args.items):
            t0 = time.perf_counter()
            provider = get_provider("openai", model="bench", settings=settings, use_cache=False)
            t1 = time.perf_counter()
            provider.extract(big if i % 2 else images[i + 1], f"item {i}")
            build.append(t1 - t0)
            extract.append(time.perf_counter() - t1)
        print(f"openai per item against an instant local server: get_provider {1000 * statistics.median(build):.1f} ms, "
              f"extract median {1000 * statistics.median(extract):.1f} ms (3 requests; half the items a "
              f"2048x1536 image shrunk to 1024 px)")


if __name__ == "__main__":
    main()
