"""The batch runner: a manifest in, one results record per item out; streaming, fast and resumable.

How it is fast (and why memory stays bounded):

1. **Plan.** One pass over the manifest validates every line and counts, for each image path and
   each text, how many pending items use it. Nothing else is kept (no images, no items).
2. **Decode in parallel.** A thread pool decodes each item's images, runs the PIL part of the
   model's preprocessing (resize, crop) into small uint8 arrays, computes the pixel-stage metrics
   (L2) and extracts attributes when an item needs a provider. At most ``max_inflight`` items are
   in flight; full-size images never outlive their worker task.
3. **Encode once, in large batches.** Image tensors are queued and encoded ``batch_size`` at a
   time (fp16 autocast on GPU); texts are collected across items and encoded in large batches.
   Each image path and each text is encoded once per run: its embedding is kept exactly until the
   last pending item that uses it has been scored (the plan's count drops to zero), and content
   duplicates under other paths are caught by the encoder's content-hash cache.
4. **Fit while encoding.** As soon as an item's embeddings are all there, its AugCLIP hyperplane fits
   and other embedding metrics are submitted to a CPU pool (threads, or worker processes on GPU
   machines) while the main thread keeps encoding.
5. **Write in order, flush every item.** Records are appended in manifest order, one flushed line
   each, so an interrupted run resumes where it stopped (``read_resume_state``, ``apply_resume_state``).
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from .. import __version__
from ..attributes.base import AttributeProvider, Attributes
from ..config import Settings
from ..errors import AugclipError, InputError, ManifestError
from ..inference.clip_encoder import ClipEncoder, get_encoder
from ..io import LoadedImage, open_image
from ..pipeline import AugCLIPOptions, Evaluator
from ..report import UNTRAINED_WARNING
from .manifest import ManifestItem, iter_manifest
from .metrics import (
    BATCH_METRICS,
    EmbeddingContext,
    PixelContext,
    metric_needs,
    parse_metrics,
    score_embeddings,
    score_pixels,
)
from .results import ResultsWriter, RunLock, apply_resume_state, export_csv, read_resume_state

log = logging.getLogger(__name__)

ProgressFn = Callable[[float, str], None]


@dataclass
class BatchOptions:
    """Choices of a batch run (the CLI flags map one to one)."""

    metrics: list[str] = field(default_factory=lambda: parse_metrics(None))
    augclip: AugCLIPOptions = field(default_factory=AugCLIPOptions)
    provider: str | None = None  # None: settings.attribute_provider
    batch_size: int | None = None  # images per forward pass (default: 256 on GPU, 64 on CPU)
    text_batch_size: int | None = None  # texts per forward pass (default: 1024 on GPU, 64 on CPU)
    workers: int | None = None  # decode threads (default: number of CPUs, at most 16)
    fit_workers: int | None = None
    fit_executor: str = "auto"  # auto | thread | process
    max_inflight: int | None = None  # items being decoded at once (default: max(batch_size, 4 * workers))
    overwrite: bool = False
    retry_failed: bool = False
    skip_invalid: bool = False

    def __post_init__(self) -> None:
        self.metrics = parse_metrics(self.metrics)
        if self.fit_executor not in ("auto", "thread", "process"):
            raise InputError(f"fit executor must be auto, thread or process, got {self.fit_executor!r}")
        for name in ("batch_size", "text_batch_size", "workers", "fit_workers", "max_inflight"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise InputError(f"{name.replace('_', ' ')} must be a positive integer, got {value!r}")


@dataclass
class BatchSummary:
    manifest: str
    out: str
    n_items: int = 0  # valid items in the manifest
    n_skipped: int = 0  # already in the results file
    n_ok: int = 0
    n_failed: int = 0
    invalid: list[str] = field(default_factory=list)  # manifest problems skipped with skip_invalid
    failures: list[tuple[str, str]] = field(default_factory=list)  # (id, error), the first 50
    seconds: float = 0.0
    model: str = ""
    untrained: bool = False
    csv: str | None = None
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def n_run(self) -> int:
        return self.n_ok + self.n_failed

    @property
    def items_per_second(self) -> float:
        return self.n_run / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["items_per_second"] = self.items_per_second
        return data

    def format(self) -> str:
        head = "interrupted" if self.interrupted else "done"
        lines = [f"batch {head}: {self.n_ok} item(s) scored, {self.n_failed} failed, {self.n_skipped} already done "
                 f"(of {self.n_items}) in {self.seconds:.1f}s ({self.items_per_second:.2f} items/s)"]
        lines.append(f"results: {self.out}" + (f" | csv: {self.csv}" if self.csv else ""))
        if self.untrained:
            lines.append(f"!! {UNTRAINED_WARNING} ({self.model})")
        for item_id, error in self.failures[:10]:
            lines.append(f"failed {item_id}: {error}")
        if len(self.failures) > 10 or self.n_failed > len(self.failures[:10]):
            lines.append(f"... {self.n_failed - min(10, len(self.failures))} more failure(s): see the results file")
        if self.invalid:
            lines.append(f"skipped {len(self.invalid)} invalid manifest line problem(s), e.g. {self.invalid[0]}")
        if self.interrupted:
            lines.append("rerun the same command to resume (finished items are kept)")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- plan
def item_static_texts(item: ManifestItem, needs: set[str]) -> set[str]:
    """The texts an item needs encoded that are known before decoding (target, source, attributes)."""
    texts: set[str] = set()
    if "target_text" in needs:
        texts.add(item.target_text)
    if "source_text" in needs and item.source_text:
        texts.add(item.source_text)
    if "attributes" in needs and item.attributes is not None:
        texts.update(item.attributes.source)
        texts.update(item.attributes.target)
    return texts


def _key(path: Path) -> str:
    return str(path)  # the manifest's folder (resolved) joined with the path as written: same in every pass


@dataclass
class _Plan:
    n_items: int = 0
    pending: int = 0
    image_uses: Counter[str] = field(default_factory=Counter)
    text_uses: Counter[str] = field(default_factory=Counter)
    needs_provider: bool = False
    problems: list[str] = field(default_factory=list)


def _make_plan(manifest: Path, done: set[str], needs: set[str]) -> _Plan:
    plan = _Plan()
    for item in iter_manifest(manifest, problems=plan.problems):
        plan.n_items += 1
        if item.id in done:
            continue
        plan.pending += 1
        for path in {_key(p) for p in item.image_paths()}:
            plan.image_uses[path] += 1
        for text in item_static_texts(item, needs):
            plan.text_uses[text] += 1
        if "attributes" in needs and item.attributes is None:
            plan.needs_provider = True
    return plan


# ---------------------------------------------------------------------------------------------- decode stage
@dataclass
class _Decoded:
    # path -> (content hash, prepared pixels or None, cached embedding or None)
    images: dict[str, tuple[str, np.ndarray | torch.Tensor | None, np.ndarray | None]] = field(default_factory=dict)
    shas: dict[str, str] = field(default_factory=dict)  # every decoded path -> content hash
    failed_images: dict[str, str] = field(default_factory=dict)
    pixel_values: list[dict[str, float | None]] | None = None
    pixel_unavailable: list[dict[str, str]] | None = None
    attributes: Attributes | None = None
    error: str | None = None


class _Provider:
    """The run's attribute provider, built once on first use; its failure becomes each item's error."""

    def __init__(self, evaluator: Evaluator, name: str):
        self.evaluator = evaluator
        self.name = name
        self._instance: AttributeProvider | None = None
        self._error: str | None = None
        self._lock = threading.Lock()
        self._call_lock = threading.Lock()

    def extract(self, source: LoadedImage, item: ManifestItem) -> Attributes:
        with self._lock:
            if self._instance is None and self._error is None:
                try:
                    # Evaluator._provider wires each provider's extra arguments (encoder, model name).
                    self._instance = self.evaluator._provider(self.name)
                except AugclipError as exc:
                    self._error = f"no attributes in the manifest, and attribute provider {self.name!r} is not available: {exc}"
        if self._error is not None:
            raise InputError(self._error)
        assert self._instance is not None
        if getattr(self._instance, "thread_safe", False):
            return self.evaluator.resolve_attributes(self._instance, source, item.target_text, item.source_text)
        with self._call_lock:  # providers are serialised unless they declare ``thread_safe = True``
            return self.evaluator.resolve_attributes(self._instance, source, item.target_text, item.source_text)


def _decode_item(item: ManifestItem, claim: set[str], encoder: ClipEncoder, pixel_metrics: list[str],
                 provider: _Provider | None, max_pixels: int | None) -> _Decoded:
    """Runs in a decode worker: decode, preprocess claimed images, pixel metrics, provider attributes."""
    out = _Decoded()
    need_all = bool(pixel_metrics)
    paths = [("source", item.source_path, item.source)] + [
        (f"edits[{i}] ({edit.name})", edit.resolved, edit.path) for i, edit in enumerate(item.edits)]
    loaded: dict[str, LoadedImage] = {}
    for label, path, written in paths:
        key = _key(path)
        if key in loaded or key in out.failed_images:
            continue
        if not (need_all or key in claim or (label == "source" and provider is not None)):
            continue
        try:
            image = open_image(path, name=written, max_pixels=max_pixels)
        except AugclipError as exc:
            out.failed_images[key] = str(exc)
            out.error = out.error or f"{label}: {exc}"
            continue
        loaded[key] = image
        sha = image.sha256
        out.shas[key] = sha
        if key in claim:
            cached = encoder.image_cache.get(sha)
            if cached is not None:
                out.images[key] = (sha, None, cached)
            else:
                out.images[key] = (sha, encoder.preprocess_image(image), None)
    if out.error is not None:
        return out
    if need_all:
        ctx = PixelContext(item=item, source=loaded[_key(item.source_path)],
                           edits=[loaded[_key(edit.resolved)] for edit in item.edits])
        out.pixel_values, out.pixel_unavailable = score_pixels(ctx, pixel_metrics)
    if provider is not None:
        try:
            source = loaded[_key(item.source_path)]
            out.attributes = provider.extract(source, item)
        except AugclipError as exc:
            out.error = str(exc)
    return out


# ---------------------------------------------------------------------------------------------- the run
@dataclass
class _ItemState:
    ordinal: int
    item: ManifestItem
    image_keys: list[str]  # source first, then the edits (may repeat)
    texts: set[str]
    dynamic_texts: set[str]
    attributes: Attributes | None
    shas: dict[str, str]
    pixel_values: list[dict[str, float | None]] | None
    pixel_unavailable: list[dict[str, str]] | None


def _error_record(item: ManifestItem, dataset: str, error: str, run: dict[str, Any]) -> dict[str, Any]:
    return {"id": item.id, "dataset": item.dataset or dataset, "status": "error", "error": error,
            "source": item.source, "target_text": item.target_text,
            "edits": [{"index": i, "path": e.path, "name": e.name, "role": e.role} for i, e in enumerate(item.edits)],
            "human": item.human.to_dict() if item.human else None, "meta": item.meta, "run": run}


class BatchRunner:
    """Runs one manifest into one results file (see the module docstring for how)."""

    def __init__(self, manifest: str | Path, out: str | Path, *, options: BatchOptions | None = None,
                 settings: Settings | None = None, encoder: ClipEncoder | None = None,
                 csv: str | Path | None = None, progress: ProgressFn | None = None, show_progress: bool = True,
                 dataset: str | None = None):
        self.manifest = Path(manifest).expanduser()
        self.out = Path(out).expanduser()
        self.options = options or BatchOptions()
        self.settings = settings or Settings.from_env()
        self.encoder = encoder or get_encoder(self.settings)
        self.csv = Path(csv).expanduser() if csv else None
        self.progress = progress
        self.show_progress = show_progress
        self.dataset = dataset or self.manifest.stem  # for items without their own "dataset"
        self.needs = metric_needs(self.options.metrics)
        self.pixel_metrics = [k for k in self.options.metrics if BATCH_METRICS[k].stage == "pixels"]
        self.embedding_metrics = [k for k in self.options.metrics if BATCH_METRICS[k].stage == "embeddings"]
        self.summary: BatchSummary | None = None  # live while running (the CLI prints it on Ctrl-C)
        self.stats: dict[str, int] = {}  # peak / final sizes of what the run held in memory

    # ------------------------------------------------------------------ public
    def run_signature(self) -> dict[str, Any]:
        return {"model": self.encoder.spec.raw, "untrained": self.encoder.untrained,
                "metrics": list(self.options.metrics), "options": asdict(self.options.augclip),
                "version": __version__}

    def run(self) -> BatchSummary:
        start = time.perf_counter()
        if not self.manifest.is_file():
            raise InputError(f"manifest {self.manifest}: file not found")
        if self.out.resolve() == self.manifest.resolve():
            raise InputError("--out must not be the manifest itself")
        run = self.run_signature()
        opts = self.options
        with RunLock(self.out):
            resume = read_resume_state(self.out, run, overwrite=opts.overwrite, retry_failed=opts.retry_failed)
            plan = _make_plan(self.manifest, resume.done, self.needs)
            if plan.problems and not opts.skip_invalid:
                raise ManifestError(str(self.manifest), plan.problems)  # before touching the results file
            if plan.n_items == 0 and not plan.problems:
                raise ManifestError(str(self.manifest), ["the manifest has no items (one JSON object per line expected)"])
            apply_resume_state(self.out, resume, overwrite=opts.overwrite, retry_failed=opts.retry_failed)
            summary = BatchSummary(manifest=str(self.manifest), out=str(self.out), n_items=plan.n_items,
                                   n_skipped=plan.n_items - plan.pending, invalid=list(plan.problems),
                                   model=self.encoder.spec.raw, untrained=self.encoder.untrained)
            self.summary = summary
            if resume.dropped_torn_line:
                summary.notes.append("the results file ended in a torn line (interrupted write); it was removed and "
                                     "that item runs again")
            if resume.dropped_failed:
                summary.notes.append(f"{resume.dropped_failed} failed item(s) from the last run are retried")
            if plan.pending:
                self.encoder.load()
                try:
                    _Run(self, plan, resume.done, run, summary).execute()
                finally:
                    summary.seconds = time.perf_counter() - start
        if self.csv is not None:
            summary.csv = str(export_csv(self.out, self.csv))
        summary.seconds = time.perf_counter() - start
        return summary


class _Run:
    """State of one execution of the pipeline (kept apart from the runner's configuration)."""

    def __init__(self, runner: BatchRunner, plan: _Plan, done: set[str], run: dict[str, Any], summary: BatchSummary):
        self.r = runner
        self.plan = plan
        self.done = done
        self.run_info = run
        self.summary = summary
        opts = runner.options
        encoder = runner.encoder
        gpu = encoder.device.type == "cuda"
        cpus = os.cpu_count() or 1
        self.batch_size = opts.batch_size or (256 if gpu else 64)
        self.text_batch_size = opts.text_batch_size or (1024 if gpu else 64)  # CPU: smaller is faster
        self.workers = opts.workers or max(2, min(16, cpus))
        self.max_inflight = opts.max_inflight or max(self.batch_size, 4 * self.workers)
        executor = opts.fit_executor
        if executor == "auto":
            executor = "process" if gpu and cpus >= 4 else "thread"
        self.fit_executor_kind = executor
        self.fit_workers = opts.fit_workers or (max(1, min(16, cpus - 2)) if executor == "process" else 2)
        self.max_pending_fits = 64 * self.fit_workers
        self.provider = None
        if plan.needs_provider:
            name = opts.provider or runner.settings.attribute_provider
            self.provider = _Provider(Evaluator(settings=runner.settings, encoder=encoder), name)
        # embeddings kept until their last pending user is scored
        self.image_store: dict[str, np.ndarray] = {}
        self.text_store: dict[str, np.ndarray] = {}
        self.image_uses = plan.image_uses
        self.text_uses = plan.text_uses
        self.failed_images: dict[str, str] = {}
        self.claimed: set[str] = set()
        self.queue: list[tuple[str, np.ndarray | torch.Tensor]] = []  # (sha, prepared pixels) in encode order
        self.queued_paths: dict[str, list[str]] = {}  # sha -> paths waiting for that content
        self.queued_keys: set[str] = set()
        self.text_pending: dict[str, None] = {}
        self.waiting: dict[int, _ItemState] = {}
        self.inflight: dict[cf.Future, tuple[int, ManifestItem]] = {}
        self.fits: dict[int, tuple[cf.Future, _ItemState]] = {}
        self.records: dict[int, dict[str, Any]] = {}
        self.next_write = 0
        self.n_submitted = 0
        self._last_progress = 0.0

    # ------------------------------------------------------------------ main loop
    def execute(self) -> None:
        r = self.r
        items = self._pending_items()
        exhausted = False
        bar = _progress_bar(self.plan.pending, r.show_progress)
        self.bar = bar
        decode_pool = cf.ThreadPoolExecutor(self.workers, thread_name_prefix="augclip-decode")
        own_fit_pool = self.fit_executor_kind != "process"
        if own_fit_pool:
            fit_pool: cf.Executor = cf.ThreadPoolExecutor(self.fit_workers, thread_name_prefix="augclip-fit")
        else:
            fit_pool = _process_pool(self.fit_workers)
        self.decode_pool, self.fit_pool = decode_pool, fit_pool
        self.writer = ResultsWriter(r.out)
        # The fits' matrices are tiny: BLAS threads would only spin against the encoder's threads.
        blas = threadpool_limits(limits=1, user_api="blas")
        try:
            while True:
                while not exhausted and len(self.inflight) < self.max_inflight:
                    nxt = next(items, None)
                    if nxt is None:
                        exhausted = True
                        break
                    self._submit_decode(*nxt)
                idle = not self.inflight
                if idle and exhausted and not self.queue and not self.text_pending:
                    self._submit_ready()
                    if self.waiting:  # cannot happen; never hang on it
                        for ordinal in list(self.waiting):
                            state = self.waiting.pop(ordinal)
                            self._fail(state.ordinal, state.item, "internal error: inputs never became available",
                                       state)
                    break
                crowded = len(self.waiting) >= 2 * self.max_inflight  # items sharing few images: do not hoard
                if len(self.queue) >= self.batch_size or len(self.text_pending) >= self.text_batch_size or (
                        (idle or crowded) and (self.queue or self.text_pending)):
                    self._encode_step(flush=idle or crowded)
                elif self.inflight:
                    done, _ = cf.wait(list(self.inflight), timeout=0.25, return_when=cf.FIRST_COMPLETED)
                    for future in done:
                        ordinal, item = self.inflight.pop(future)
                        self._on_decoded(ordinal, item, future)
                self._submit_ready()
                self._drain(block=False)
                self._track()
            self._drain(block=True)
            self._track()
        except KeyboardInterrupt:
            self.summary.interrupted = True
            self._drain(block=False)  # keep what is finished (in order); the rest runs again on resume
            raise
        finally:
            blas.restore_original_limits()
            decode_pool.shutdown(wait=not self.summary.interrupted, cancel_futures=True)
            if own_fit_pool:
                fit_pool.shutdown(wait=not self.summary.interrupted, cancel_futures=True)
            elif self.summary.interrupted:
                _discard_process_pool()
            self.writer.close()
            bar.close()

    def _track(self) -> None:
        """Peak sizes of everything held in memory (the runner's ``stats``; tests check they stay bounded)."""
        sizes = {"image_embeddings": len(self.image_store), "text_embeddings": len(self.text_store),
                 "queued_images": len(self.queue), "items_in_flight": len(self.inflight),
                 "items_waiting": len(self.waiting), "fits_pending": len(self.fits), "records_held": len(self.records)}
        stats = self.r.stats
        for key, value in sizes.items():
            stats[f"peak_{key}"] = max(stats.get(f"peak_{key}", 0), value)
            stats[f"final_{key}"] = value

    def _pending_items(self) -> Iterator[tuple[int, ManifestItem]]:
        ordinal = 0
        problems: list[str] = []  # already reported by the plan
        # the plan's pass checked every file; this one only parses (a file that vanished in between
        # fails its item when it is opened)
        for item in iter_manifest(self.r.manifest, problems=problems, check_files=False):
            if item.id in self.done:
                continue
            yield ordinal, item
            ordinal += 1

    # ------------------------------------------------------------------ decode
    def _submit_decode(self, ordinal: int, item: ManifestItem) -> None:
        claim = set()
        for path in item.image_paths() if self.r.embedding_metrics else []:  # pixel metrics alone: no encoding
            key = _key(path)
            if (key in self.image_store or key in self.claimed or key in self.failed_images
                    or key in self.queued_keys):
                continue
            claim.add(key)
        self.claimed |= claim
        provider = self.provider if ("attributes" in self.r.needs and item.attributes is None) else None
        future = self.decode_pool.submit(_decode_item, item, claim, self.r.encoder, self.r.pixel_metrics, provider,
                                         self.r.settings.max_image_pixels)
        self.inflight[future] = (ordinal, item)

    def _on_decoded(self, ordinal: int, item: ManifestItem, future: cf.Future) -> None:
        try:
            decoded: _Decoded = future.result()
        except Exception as exc:  # a bug in a metric or provider: record it, keep going
            log.warning("item %s failed unexpectedly", item.id, exc_info=True)
            decoded = _Decoded(error=f"{type(exc).__name__}: {exc}")
            decoded.failed_images = {}
        for key, (sha, tensor, cached) in decoded.images.items():
            self.claimed.discard(key)
            if cached is not None:
                if self.image_uses.get(key, 0) > 0:
                    self.image_store[key] = cached
            elif sha in self.queued_paths:
                self.queued_paths[sha].append(key)
                self.queued_keys.add(key)
            else:
                assert tensor is not None
                self.queue.append((sha, tensor))
                self.queued_paths[sha] = [key]
                self.queued_keys.add(key)
        for key, message in decoded.failed_images.items():
            self.claimed.discard(key)
            self.failed_images[key] = message
        image_keys = [_key(p) for p in item.image_paths()]
        if decoded.error is not None:
            # Release this item's claims that the worker did not get to (a failed source stops it early).
            for key in set(image_keys):
                if key in self.claimed and key not in decoded.images and key not in decoded.failed_images \
                        and future.exception() is not None:
                    # Nobody else will produce this image: items that share it fail with the same reason.
                    self.claimed.discard(key)
                    self.failed_images[key] = decoded.error
            self._fail(ordinal, item, decoded.error, None, image_keys=image_keys)
            return
        needs = self.r.needs
        static = item_static_texts(item, needs)
        dynamic: set[str] = set()
        attributes = item.attributes
        if decoded.attributes is not None:
            attributes = decoded.attributes
            dynamic = (set(attributes.source) | set(attributes.target)) - static
            for text in dynamic:
                self.text_uses[text] += 1
        state = _ItemState(ordinal=ordinal, item=item, image_keys=image_keys, texts=static | dynamic,
                           dynamic_texts=dynamic, attributes=attributes, shas=decoded.shas,
                           pixel_values=decoded.pixel_values, pixel_unavailable=decoded.pixel_unavailable)
        for text in state.texts:
            if text in self.text_store or text in self.text_pending:
                continue
            cached = self.r.encoder.text_cache.get(text)
            if cached is not None:
                self.text_store[text] = cached  # this item holds a use, so it is released with it
            else:
                self.text_pending[text] = None
        self.waiting[ordinal] = state

    # ------------------------------------------------------------------ encode
    def _encode_step(self, flush: bool) -> None:
        """Encode full batches of queued images and texts (everything that is queued when ``flush``)."""
        encoder = self.r.encoder
        n_images = len(self.queue) if flush else len(self.queue) // self.batch_size * self.batch_size
        if n_images:
            take, self.queue = self.queue[:n_images], self.queue[n_images:]
            shas = [sha for sha, _ in take]
            embeddings = encoder.encode_preprocessed([t for _, t in take], keys=shas, batch_size=self.batch_size)
            for sha, row in zip(shas, embeddings):
                row.setflags(write=False)
                for key in self.queued_paths.pop(sha, []):
                    self.queued_keys.discard(key)
                    if self.image_uses.get(key, 0) > 0:  # its users may all have failed meanwhile
                        self.image_store[key] = row
        pending = list(self.text_pending)
        n_texts = len(pending) if flush else len(pending) // self.text_batch_size * self.text_batch_size
        if n_texts:
            texts = pending[:n_texts]
            self.text_pending = dict.fromkeys(pending[n_texts:])
            embeddings = encoder.encode_texts(texts, batch_size=self.text_batch_size)
            for text, row in zip(texts, embeddings):
                row.setflags(write=False)
                if self.text_uses.get(text, 0) > 0:
                    self.text_store[text] = row

    # ------------------------------------------------------------------ fit
    def _submit_ready(self) -> None:
        for ordinal in sorted(self.waiting):
            state = self.waiting[ordinal]
            failed = next((self.failed_images[k] for k in state.image_keys if k in self.failed_images), None)
            if failed is not None:
                del self.waiting[ordinal]
                self._fail(ordinal, state.item, failed, state)
                continue
            if not self.r.embedding_metrics:  # nothing to encode or fit: the pixel metrics are all there is
                del self.waiting[ordinal]
                empty: list[dict[str, Any]] = [{} for _ in state.item.edits]
                self.records[ordinal] = self._record(state, empty, [{} for _ in empty], [{} for _ in empty])
                self._release(state.image_keys, state.texts)
                continue
            if not all(k in self.image_store for k in state.image_keys):
                continue
            if not all(t in self.text_store for t in state.texts):
                continue
            while len(self.fits) >= self.max_pending_fits:
                self._drain(block=True, one=True)
            del self.waiting[ordinal]
            ctx = self._context(state)
            future = self.fit_pool.submit(score_embeddings, ctx, self.r.embedding_metrics)
            self.fits[ordinal] = (future, state)
            self._release(state.image_keys, state.texts)

    def _context(self, state: _ItemState) -> EmbeddingContext:
        item, needs = state.item, self.r.needs
        texts = self.text_store
        attrs = state.attributes
        return EmbeddingContext(
            source=self.image_store[state.image_keys[0]],
            edits=np.stack([self.image_store[k] for k in state.image_keys[1:]]),
            target_text=texts[item.target_text] if "target_text" in needs else None,
            source_text=texts[item.source_text] if ("source_text" in needs and item.source_text) else None,
            source_attrs=np.stack([texts[t] for t in attrs.source]) if ("attributes" in needs and attrs) else None,
            target_attrs=np.stack([texts[t] for t in attrs.target]) if ("attributes" in needs and attrs) else None,
            options=asdict(self.r.options.augclip),
        )

    def _release(self, image_keys: list[str], texts: set[str]) -> None:
        for key in set(image_keys):
            self.image_uses[key] -= 1
            if self.image_uses[key] <= 0:
                self.image_store.pop(key, None)
                del self.image_uses[key]
        for text in texts:
            self.text_uses[text] -= 1
            if self.text_uses[text] <= 0:
                self.text_store.pop(text, None)
                del self.text_uses[text]

    def _fail(self, ordinal: int, item: ManifestItem, error: str, state: _ItemState | None,
              image_keys: list[str] | None = None) -> None:
        keys = state.image_keys if state else (image_keys or [])
        # a failed item gives back its uses of images and texts, so shared embeddings are still freed
        self._release(keys, state.texts if state else item_static_texts(item, self.r.needs))
        self.records[ordinal] = _error_record(item, self.r.dataset, error, self.run_info)

    # ------------------------------------------------------------------ write
    def _drain(self, block: bool, one: bool = False) -> None:
        if block and self.fits:
            earliest = min(self.fits)
            pending = [self.fits[earliest][0]] if one else [f for f, _ in self.fits.values()]
            cf.wait(pending, return_when=cf.FIRST_COMPLETED if one else cf.ALL_COMPLETED)
        for ordinal in [o for o, (f, _) in self.fits.items() if f.done()]:
            future, state = self.fits.pop(ordinal)
            try:
                values, unavailable, details = future.result()
                self.records[ordinal] = self._record(state, values, unavailable, details)
            except Exception as exc:
                log.warning("scoring item %s failed", state.item.id, exc_info=True)
                self.records[ordinal] = _error_record(state.item, self.r.dataset, f"{type(exc).__name__}: {exc}",
                                                      self.run_info)
        while self.next_write in self.records:
            record = self.records.pop(self.next_write)
            self.writer.write(record)
            self.next_write += 1
            if record["status"] == "ok":
                self.summary.n_ok += 1
            else:
                self.summary.n_failed += 1
                if len(self.summary.failures) < 50:
                    self.summary.failures.append((record["id"], record["error"]))
            self.bar.update(1)
            if self.summary.n_failed:
                self.bar.set_postfix(failed=self.summary.n_failed, refresh=False)
            self._report_progress()

    def _report_progress(self) -> None:
        if self.r.progress is None:
            return
        now = time.perf_counter()
        total = max(1, self.plan.pending)
        if now - self._last_progress < 0.1 and self.next_write < total:
            return
        self._last_progress = now
        self.r.progress(self.next_write / total, f"{self.next_write}/{total} items scored"
                        + (f", {self.summary.n_failed} failed" if self.summary.n_failed else ""))

    def _record(self, state: _ItemState, values: list[dict[str, float | None]], unavailable: list[dict[str, str]],
                details: list[dict[str, Any]]) -> dict[str, Any]:
        item = state.item
        order = self.r.options.metrics
        edits = []
        for i, edit in enumerate(item.edits):
            merged = dict(values[i])
            reasons = dict(unavailable[i])
            if state.pixel_values is not None and state.pixel_unavailable is not None:
                merged.update(state.pixel_values[i])
                reasons.update(state.pixel_unavailable[i])
            entry: dict[str, Any] = {
                "index": i, "path": edit.path, "name": edit.name, "role": edit.role,
                "sha256": state.shas.get(state.image_keys[i + 1]),
                "metrics": {key: merged.get(key) for key in order},
                "unavailable": {key: reasons[key] for key in order if key in reasons},
            }
            entry.update(details[i])
            edits.append(entry)
        return {
            "id": item.id, "dataset": item.dataset or self.r.dataset, "status": "ok", "source": item.source,
            "target_text": item.target_text, "source_text": item.source_text, "instruction": item.instruction,
            "edits": edits, "human": item.human.to_dict() if item.human else None,
            "attributes": state.attributes.to_dict() if state.attributes is not None else None,
            "meta": item.meta, "run": self.run_info,
        }


_POOL: tuple[int, cf.ProcessPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def _process_pool(workers: int) -> cf.ProcessPoolExecutor:
    """Fit worker processes, started once per process and reused by later runs (spawning costs seconds)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != workers:
            if _POOL is not None:
                _POOL[1].shutdown(wait=False, cancel_futures=True)
            # spawn, not fork: the parent holds torch and live threads, which fork would copy half-way
            _POOL = (workers, cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")))
            atexit.register(_discard_process_pool)
        return _POOL[1]


def _discard_process_pool() -> None:
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            _POOL[1].shutdown(wait=False, cancel_futures=True)
            _POOL = None


def _progress_bar(total: int, show: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="item", disable=not show, file=sys.stderr, dynamic_ncols=True,
                smoothing=0.05, desc="batch")


def run_batch(manifest: str | Path, out: str | Path, *, options: BatchOptions | None = None,
              settings: Settings | None = None, encoder: ClipEncoder | None = None, csv: str | Path | None = None,
              progress: ProgressFn | None = None, show_progress: bool = False,
              dataset: str | None = None) -> BatchSummary:
    """Score every item of ``manifest`` into ``out`` (JSONL; resumes an existing file).

    ``progress(fraction, message)`` is called as items finish; ``dataset`` names items that have
    no ``dataset`` field (default: the manifest's file name without extension).
    """
    return BatchRunner(manifest, out, options=options, settings=settings, encoder=encoder, csv=csv,
                       progress=progress, show_progress=show_progress, dataset=dataset).run()
