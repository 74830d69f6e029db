"""The speed benchmark: batch AugCLIP scoring against bare CLIP encoding of the same inputs.

Both sides start from files on disk with empty embedding caches and use the same encoder, batch
sizes and decode workers:

* **bare encoding**: decode + preprocess every distinct image of the manifest (in the worker pool,
  one batch ahead of the encoder) and encode it; encode every distinct text the chosen metrics
  need (for AugCLIP alone: the attribute texts). No metric, no output. With decode processes (the
  batch run's ``decode_executor``), the same processes prepare the images and tokenize the texts.
* **batch scoring**: :func:`~augclip_demo.batch.runner.run_batch` on the same manifest with those
  metrics and inline attributes ("attributes cached"), writing the results file.

The ratio batch / bare is the cost of everything AugCLIP adds to encoding (hyperplane fits, other
metrics, bookkeeping, writing); the target is <= 1.15. A short untimed warm-up run comes first
(imports, fit worker processes, GPU kernels). Each side then runs ``repeats`` times, alternating,
and the fastest run counts (the usual way to cut scheduling noise).
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..choices import TARGET_RATIO
from ..config import Settings
from ..inference.clip_encoder import ClipEncoder
from ..inference.device import device_description
from ..io import open_image
from ..metrics.suite import needs_of, parse_metric_keys
from .decode_worker import ImageRequest, PreparedItem, encoder_recipe, prepare_item
from .manifest import iter_manifest
from .plan import item_static_texts
from .pools import PoolSizes, decode_pool, decodes_in_processes, wait_for_workers
from .runner import BatchOptions, run_batch
from .synthetic import write_synthetic_manifest


@dataclass
class SpeedResult:
    model: str
    device: str
    untrained: bool
    metrics: list[str]
    n_items: int
    n_edits: int
    n_images: int
    n_texts: int
    batch_size: int
    workers: int
    repeats: int
    decode_executor: str
    bare_seconds: float
    batch_seconds: float
    bare_cpu_seconds: float = 0.0  # CPU time of this process (all its threads) during the fastest run
    batch_cpu_seconds: float = 0.0
    # where the fastest bare run spent its wall time: waiting for decoded images, image passes, text passes
    bare_stages: dict[str, float] = field(default_factory=dict)

    @property
    def bare_items_per_second(self) -> float:
        return self.n_items / self.bare_seconds

    @property
    def batch_items_per_second(self) -> float:
        return self.n_items / self.batch_seconds

    @property
    def batch_edits_per_second(self) -> float:
        return self.n_items * self.n_edits / self.batch_seconds

    @property
    def ratio(self) -> float:
        return self.batch_seconds / self.bare_seconds

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "bare_items_per_second": self.bare_items_per_second,
                "batch_items_per_second": self.batch_items_per_second,
                "batch_edits_per_second": self.batch_edits_per_second, "ratio": self.ratio,
                "target_ratio": TARGET_RATIO, "meets_target": self.ratio <= TARGET_RATIO}

    def format(self) -> str:
        verdict = "meets" if self.ratio <= TARGET_RATIO else "MISSES"
        return "\n".join([
            f"speed benchmark: {self.model} on {self.device}"
            + (" (random weights: speed only)" if self.untrained else ""),
            f"  {self.n_items} items of {self.n_edits} edits, {self.n_images} distinct images, {self.n_texts} distinct texts; "
            f"metrics {','.join(self.metrics)}; image batch {self.batch_size}, {self.workers} decode "
            f"{'processes' if self.decode_executor == 'process' else 'threads'}; "
            f"best of {self.repeats}",
            f"  bare CLIP encoding : {self.bare_seconds:8.2f} s  {self.bare_items_per_second:8.2f} items/s",
            f"  batch scoring      : {self.batch_seconds:8.2f} s  {self.batch_items_per_second:8.2f} items/s"
            f"  {self.batch_edits_per_second:8.1f} edits/s",
            "  bare run by stage  : " + ", ".join(f"{k} {v:.2f} s" for k, v in self.bare_stages.items()),
            f"  ratio batch / bare : {self.ratio:8.3f}  ({verdict} the target <= {TARGET_RATIO})",
            f"  CPU time (this process): bare {self.bare_cpu_seconds:.1f} s, batch {self.batch_cpu_seconds:.1f} s, "
            f"ratio {self.batch_cpu_seconds / max(self.bare_cpu_seconds, 1e-9):.3f} (less sensitive to other load)",
        ])


def _bare_encode(manifest: Path, encoder: ClipEncoder, metrics: list[str], *, batch_size: int, workers: int,
                text_batch_size: int, max_pixels: int | None = None,
                stages: dict[str, float] | None = None, decode_processes: cf.Executor | None = None) -> tuple[int, int]:
    """Encode every distinct image and needed text of a manifest; returns (images, texts) encoded.

    ``stages``, when given, receives the wall seconds spent waiting for decoded images, in image passes
    and in text passes (each pass returns host arrays, so GPU work is inside its stage).
    ``decode_processes`` (a pool started by :data:`.pools.DECODE_POOL`): prepare images and tokenize
    texts there, as a batch run with decode processes does; else decode threads.
    """
    needs = needs_of(metrics)
    paths: dict[str, None] = {}
    texts: dict[str, None] = {}
    for item in iter_manifest(manifest):
        for path in item.image_paths():
            paths.setdefault(str(path), None)
        for text in item_static_texts(item, needs):
            texts.setdefault(text, None)
    ordered = list(paths)

    def load(path: str) -> tuple[str, Any]:
        image = open_image(path, max_pixels=max_pixels)
        return image.sha256, encoder.preprocess_image(image)

    def submit(pool: cf.Executor, path: str) -> cf.Future:
        if decode_processes is None:
            return pool.submit(load, path)
        return decode_processes.submit(prepare_item, [ImageRequest(path, path, path, path)], [], max_pixels)

    def result(future: cf.Future) -> tuple[str, Any]:
        done = future.result()
        if isinstance(done, PreparedItem):
            if done.error is not None:
                raise RuntimeError(done.error)
            return next(iter(done.images.values()))
        return done

    spent = {"decode wait": 0.0, "image passes": 0.0, "text passes": 0.0}
    blocks = [ordered[i:i + batch_size] for i in range(0, len(ordered), batch_size)]
    with cf.ThreadPoolExecutor(workers) as pool:
        pending = [submit(pool, p) for p in blocks[0]] if blocks else []
        for index in range(len(blocks)):
            start = time.perf_counter()
            current = [result(f) for f in pending]
            spent["decode wait"] += time.perf_counter() - start
            # submit the next block before encoding this one, so decoding overlaps with the encoder
            pending = [submit(pool, p) for p in blocks[index + 1]] if index + 1 < len(blocks) else []
            start = time.perf_counter()
            encoder.encode_preprocessed([t for _, t in current], keys=[s for s, _ in current], batch_size=batch_size)
            spent["image passes"] += time.perf_counter() - start
    start = time.perf_counter()
    if texts:
        rows: dict[str, Any] = {}
        if decode_processes is not None:  # tokenized in the processes, 16 texts a task as in a batch item
            stripped = list(dict.fromkeys(text.strip() for text in texts))
            chunks = [decode_processes.submit(prepare_item, [], stripped[i:i + 16], max_pixels)
                      for i in range(0, len(stripped), 16)]
            for future in chunks:
                rows.update(future.result().tokens)
        encoder.encode_texts(list(texts), batch_size=text_batch_size, token_rows=rows)
    spent["text passes"] += time.perf_counter() - start
    if stages is not None:
        stages.update(spent)
    return len(ordered), len(texts)


def speed_benchmark(settings: Settings, *, n_items: int | None = None, n_edits: int = 2, n_attributes: int = 8,
                    image_size: int = 256, metrics: list[str] | str | None = "augclip", batch_size: int | None = None,
                    workers: int | None = None, repeats: int = 1, folder: str | Path | None = None,
                    encoder: ClipEncoder | None = None, decode_executor: str = "auto") -> SpeedResult:
    """Run both sides on a synthetic manifest (drawn images) and return the timings.

    ``decode_executor`` as in :class:`BatchOptions` (auto: threads, until processes are measured faster on a
    GPU); both sides use what the batch run chooses."""
    metric_keys = parse_metric_keys(metrics)
    encoder = encoder or ClipEncoder.from_settings(settings, image_cache_size=1_000_000, text_cache_size=1_000_000)
    gpu = encoder.device.type == "cuda"
    n_items = n_items or (2048 if gpu else 64)
    batch_size = batch_size or (256 if gpu else 64)
    text_batch_size = 1024 if gpu else 64
    cpus = os.cpu_count() or 1
    workers = workers or max(2, min(16, cpus))
    own_folder = folder is None
    work = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="augclip-bench-"))
    try:
        manifest = write_synthetic_manifest(work / "data", n_items, n_edits=n_edits, n_attributes=n_attributes,
                                            image_size=image_size, human=False)
        encoder.warmup()
        asked = BatchOptions(metrics=metric_keys, batch_size=batch_size, workers=workers, decode_executor=decode_executor)
        decode = PoolSizes.choose(asked, gpu=gpu, items=n_items).decode_executor
        if not decodes_in_processes(asked):  # as the batch run decides, so both sides use the same workers
            decode = "thread"
        # the resolved choice, so that the short warm-up run starts the same pools as the timed runs
        options = BatchOptions(metrics=metric_keys, batch_size=batch_size, workers=workers, overwrite=True,
                               decode_executor=decode)
        recipe = encoder_recipe(encoder) if decode == "process" else None
        if decode == "process" and recipe is None:
            raise RuntimeError("this model's transform cannot be split for decode processes: use threads")
        if recipe is not None:  # start the workers now; they import while the warm-up runs
            decode_pool(workers, recipe)
        # Warm-up run on other items: imports (scikit-learn), worker processes, kernels. Not timed.
        warm = write_synthetic_manifest(work / "warmup", 4, n_edits=n_edits, n_attributes=2, image_size=image_size,
                                        human=False, seed=1)
        run_batch(warm, work / "warmup.jsonl", options=options, settings=settings, encoder=encoder)
        # the pool the warm-up ran on (or a fresh one, had it broken there)
        processes = decode_pool(workers, recipe) if recipe is not None else None
        wait_for_workers()  # the process pools' workers have all started and imported before timing
        bare_times: list[tuple[float, float, dict[str, float]]] = []
        batch_times: list[tuple[float, float]] = []
        n_images = n_texts = 0
        for _ in range(max(1, repeats)):
            _clear(encoder)
            start, cpu, stages = time.perf_counter(), time.process_time(), {}
            n_images, n_texts = _bare_encode(manifest, encoder, metric_keys, batch_size=batch_size, workers=workers,
                                            text_batch_size=text_batch_size, max_pixels=settings.max_image_pixels,
                                            stages=stages, decode_processes=processes)
            _sync(encoder)
            bare_times.append((time.perf_counter() - start, time.process_time() - cpu, stages))
            _clear(encoder)
            start, cpu = time.perf_counter(), time.process_time()
            summary = run_batch(manifest, work / "results.jsonl", options=options, settings=settings, encoder=encoder)
            _sync(encoder)
            batch_times.append((time.perf_counter() - start, time.process_time() - cpu))
            if summary.n_failed:
                raise RuntimeError(f"benchmark items failed: {summary.failures[:3]}")
        bare, batch = min(bare_times, key=lambda t: t[0]), min(batch_times)
        return SpeedResult(model=encoder.spec.raw, device=device_description(encoder.device),
                           untrained=encoder.untrained, metrics=metric_keys, n_items=n_items, n_edits=n_edits,
                           n_images=n_images,
                           n_texts=n_texts, batch_size=batch_size, workers=workers, repeats=max(1, repeats),
                           decode_executor=decode,
                           bare_seconds=bare[0], batch_seconds=batch[0], bare_cpu_seconds=bare[1],
                           batch_cpu_seconds=batch[1], bare_stages=bare[2])
    finally:
        if own_folder:
            shutil.rmtree(work, ignore_errors=True)


def _clear(encoder: ClipEncoder) -> None:
    encoder.image_cache.clear()
    encoder.text_cache.clear()


def _sync(encoder: ClipEncoder) -> None:
    if encoder.device.type == "cuda":
        torch.cuda.synchronize(encoder.device)
