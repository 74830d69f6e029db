"""The batch runner: a manifest in, one results record per item out; streaming, fast and resumable.

Its parts: :mod:`.plan` (the planning pass), :mod:`.item_steps` (decode, attributes, encode, score and
record as functions over plain data), :mod:`.embedding_store` (each embedding kept exactly as long
as needed), :mod:`.pools` (decode threads, fit threads or processes), :mod:`.results` (records
written in order, resume). This module is the loop that connects them, using only the public
:class:`~augclip_demo.pipeline.Evaluator` API.

How it is fast (and why memory stays bounded):

1. **Plan.** One pass over the manifest validates every line and counts, for each image path and
   each text, how many pending items use it. Nothing else is kept (no images, no items).
2. **Decode in parallel.** A thread pool decodes each item's images, runs the PIL part of the
   model's preprocessing (resize, crop) into small uint8 arrays, computes the pixel-stage metrics
   (L2), runs BPM when it is chosen (the regions stage: the item's parse, GroundingDINO, SAM and
   CLIP on the full-size images; :class:`~.stages.RegionSource` loads those models on first use) and
   extracts attributes when an item needs a provider. At most ``max_inflight`` items are
   in flight; full-size images never outlive their worker task. With ``decode_executor="process"``
   (explicit; not measured on a GPU yet) a run of embedding metrics only decodes in worker processes (:mod:`.decode_worker`: images prepared,
   texts tokenized), which leave Python's lock to the encoder's thread.
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

import concurrent.futures as cf
import logging
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits

from .. import __version__
from ..attributes.base import Attributes
from ..choices import ENGINES
from ..config import Settings
from ..errors import BatchCancelled, InputError, ManifestError
from ..inference.clip_encoder import ClipEncoder, get_encoder
from ..metrics.suite import METRICS, ItemScores, needs_of
from ..pipeline import Evaluator
from . import decode_worker
from .embedding_store import EmbeddingStore
from .fit_worker import score_embeddings
from .item_steps import (
    AttributeSource,
    DecodedItem,
    decode_item,
    embedding_inputs,
    error_record,
    feature_signature,
    merge_scores,
    ok_record,
    run_stages,
)
from .manifest import ManifestItem
from .options import BatchOptions, BatchSummary
from .plan import RunPlan, image_key, item_static_texts, make_plan, planned_items
from .pools import DECODE_POOL, PoolSizes, SharedProcessPool, WorkerPools, decodes_in_processes
from .results import (
    InOrderWriter,
    RunLock,
    apply_resume_state,
    export_csv,
    no_empty_results_on_failure,
    open_results_writer,
    read_resume_state,
)

__all__ = ["BatchOptions", "BatchRunner", "BatchSummary", "item_static_texts", "run_batch"]

log = logging.getLogger(__name__)

ProgressFn = Callable[[float, str], None]



class BatchRunner:
    """Runs one manifest into one results file (see the module docstring for how)."""

    def __init__(self, manifest: str | Path, out: str | Path, *, options: BatchOptions | None = None,
                 settings: Settings | None = None, encoder: ClipEncoder | None = None,
                 csv: str | Path | None = None, progress: ProgressFn | None = None, show_progress: bool = True,
                 dataset: str | None = None, engine: str = "local", ray_options: Any = None,
                 cancel: threading.Event | None = None):
        if engine not in ENGINES:
            raise InputError(f"batch engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        self.engine = engine
        self.ray_options = ray_options  # a ray_engine.RayOptions (engine "ray")
        self.cancel = cancel  # set by the caller: the loop stops, keeping what is scored (resumable)
        self.manifest = Path(manifest).expanduser()
        self.out = Path(out).expanduser()
        self.options = options or BatchOptions()
        self.settings = settings or Settings()
        self.encoder = encoder or get_encoder(self.settings)
        self.csv = Path(csv).expanduser() if csv else None
        self.progress = progress
        self.show_progress = show_progress
        self.dataset = dataset or self.manifest.stem  # for items without their own "dataset"
        self.needs = needs_of(self.options.metrics)
        # the per-item stages (the pipeline's own: pixels and feature networks, BPM, HATIE, the judge) run in the
        # decode workers while the images are in memory; region models and the judge load when an item needs them
        self.stages = run_stages(self.options, self.settings, self.encoder)
        self.regions = self.stages.regions
        self.embedding_metrics = [k for k in self.options.metrics if METRICS[k].basis == "embeddings"
                                  and (self.stages.pixels is None or k not in self.stages.pixels.keys)]
        self.summary: BatchSummary | None = None  # live while running (the CLI prints it on Ctrl-C)
        self.stats: dict[str, int] = {}  # peak / final sizes of what the run held in memory
        self.notes: list[str] = []  # the stages' notes met so far (untrained feature networks)

    # ------------------------------------------------------------------ public
    @property
    def untrained(self) -> bool:
        """The CLIP encoder or (when BPM is chosen) any region model has random weights."""
        return bool(self.encoder.untrained or (self.regions is not None and self.regions.untrained))

    def run_signature(self) -> dict[str, Any]:
        run = {"model": self.encoder.spec.raw, "untrained": self.untrained,
               # the numerics: a resumed run must not mix embeddings of other kernels or precisions
               "precision": self.encoder.precision_name, "matmul": self.encoder.matmul,
               "metrics": list(self.options.metrics), "options": asdict(self.options.augclip),
               "version": __version__}
        if self.regions is not None:
            run["bpm"] = self.regions.signature()
        if self.stages.judge_source is not None:
            run["judge"] = self.stages.judge_source.signature()
        if self.stages.feature_keys:
            run["features"] = feature_signature(self.options.networks, self.stages.feature_keys)
        return run

    def run(self) -> BatchSummary:
        if self.engine == "ray":  # the same configuration, executed by Ray Data actors (optional import)
            from .ray_engine import RayExecution

            return RayExecution(self, self.ray_options).run()
        start = time.perf_counter()
        if not self.manifest.is_file():
            raise InputError(f"manifest {self.manifest}: file not found")
        if self.out.resolve() == self.manifest.resolve():
            raise InputError("--out must not be the manifest itself")
        run = self.run_signature()
        opts = self.options
        with RunLock(self.out), no_empty_results_on_failure(self.out):
            resume = read_resume_state(self.out, run, overwrite=opts.overwrite, retry_failed=opts.retry_failed)
            plan = make_plan(self.manifest, resume.done, self.needs)
            if plan.problems and not opts.skip_invalid:
                raise ManifestError(str(self.manifest), plan.problems)  # before touching the results file
            if plan.n_items == 0 and not plan.problems:
                raise ManifestError(str(self.manifest), ["the manifest has no items (one JSON object per line expected)"])
            apply_resume_state(self.out, resume, overwrite=opts.overwrite, retry_failed=opts.retry_failed)
            summary = BatchSummary(manifest=str(self.manifest), out=str(self.out), n_items=plan.n_items,
                                   n_skipped=plan.n_items - plan.pending, invalid=list(plan.problems),
                                   model=self.encoder.spec.raw, untrained=self.untrained)
            self.summary = summary
            if resume.dropped_torn_line:
                summary.notes.append("the results file ended in a torn line (interrupted write); it was removed and "
                                     "that item runs again")
            if resume.dropped_failed:
                summary.notes.append(f"{resume.dropped_failed} failed item(s) from the last run are retried")
            if self.regions is not None and self.regions.untrained:
                bpm = run["bpm"]
                regions = (f"GroundingDINO {bpm['detector']}; SAM {bpm['segmenter']}; " if "detector" in bpm
                           else "regions from given masks; ")
                summary.notes.append(f"BPM models ({regions}CLIP {run['model']}) include random weights: BPM values "
                                     "are untrained")
            if plan.pending:
                self.encoder.load()
                try:
                    _Execution(self, plan, resume.done, run, summary).execute()
                except BatchCancelled as exc:
                    exc.summary = summary  # what the stopped run scored (its seconds are set below)
                    raise
                finally:
                    summary.seconds = time.perf_counter() - start
                    summary.notes.extend(self.notes)
        if self.csv is not None:
            summary.csv = str(export_csv(self.out, self.csv))
        summary.seconds = time.perf_counter() - start
        return summary


@dataclass
class _ItemState:
    """An item between decoding and scoring."""

    ordinal: int
    item: ManifestItem
    image_keys: list[str]  # source first, then the edits (may repeat)
    texts: set[str]
    attributes: Attributes | None
    shas: dict[str, str]
    stage_scores: ItemScores | None  # the per-item stages' values and reasons
    parse: dict[str, Any] | None = None


class _Execution:
    """One execution of a run: the loop and its state (kept apart from the runner's configuration)."""

    def __init__(self, runner: BatchRunner, plan: RunPlan, done: set[str], run_info: dict[str, Any],
                 summary: BatchSummary):
        self.runner = runner
        self.plan = plan
        self.done = done
        self.run_info = run_info
        self.summary = summary
        self.sizes = PoolSizes.choose(runner.options, gpu=runner.encoder.device.type == "cuda", items=plan.pending)
        self.attribute_source = None
        if plan.needs_provider:
            name = runner.options.provider or runner.settings.attribute_provider
            self.attribute_source = AttributeSource(Evaluator(settings=runner.settings, encoder=runner.encoder), name)
        self.store = EmbeddingStore(plan.image_uses, plan.text_uses)
        self.decoding: dict[cf.Future, tuple[int, ManifestItem, set[str]]] = {}  # future -> (ordinal, item, claim)
        self.process_futures: set[cf.Future] = set()  # those of self.decoding a decode process is working on
        self.waiting: dict[int, _ItemState] = {}  # decoded, waiting for embeddings
        self.scoring: dict[int, tuple[cf.Future, _ItemState]] = {}  # submitted to the fit pool
        self._last_progress = 0.0

    # ------------------------------------------------------------------ main loop
    def execute(self) -> None:
        runner, sizes, store = self.runner, self.sizes, self.store
        items = planned_items(runner.manifest, self.plan, self.done)
        exhausted = False
        self.bar = _progress_bar(self.plan.pending, runner.show_progress)
        self.pools = WorkerPools(sizes, self._decode_recipe())
        self.writer = InOrderWriter(open_results_writer(runner.out))  # JSONL, or Parquet parts
        # The fits' matrices are tiny: BLAS threads would only spin against the encoder's threads.
        blas = threadpool_limits(limits=1, user_api="blas")
        try:
            while True:
                self._stop_if_cancelled()
                while not exhausted and len(self.decoding) < sizes.max_inflight:
                    nxt = next(items, None)
                    if nxt is None:
                        exhausted = True
                        break
                    self._submit_decode(*nxt)
                idle = not self.decoding
                if idle and exhausted and not store.has_queued:
                    self._submit_ready()
                    for ordinal in list(self.waiting):  # cannot happen; never hang on it
                        state = self.waiting.pop(ordinal)
                        self._fail(state.item, ordinal, "internal error: inputs never became available", state)
                    break
                crowded = len(self.waiting) >= 2 * sizes.max_inflight  # items sharing few images: do not hoard
                if (len(store.image_queue) >= sizes.batch_size or len(store.text_queue) >= sizes.text_batch_size
                        or ((idle or crowded) and store.has_queued)):
                    store.encode(runner.encoder, sizes.batch_size, sizes.text_batch_size, flush=idle or crowded)
                elif self.decoding:
                    finished, _ = cf.wait(list(self.decoding), timeout=0.25, return_when=cf.FIRST_COMPLETED)
                    for future in finished:
                        self._on_decoded(future, *self.decoding.pop(future))
                    if not finished:
                        self._check_decode_processes()
                self._submit_ready()
                self._collect(block=False)
                self._track()
            self._collect(block=True)
            self._track()
        except (KeyboardInterrupt, BatchCancelled):
            self.summary.interrupted = True
            self._collect(block=False)  # keep what is finished (in order); the rest runs again on resume
            raise
        finally:
            blas.restore_original_limits()
            self.pools.shutdown(interrupted=self.summary.interrupted)
            self.writer.writer.close()
            self.bar.close()

    def _stop_if_cancelled(self) -> None:
        """Raise :class:`BatchCancelled` once the caller has set the run's ``cancel`` event."""
        if self.runner.cancel is not None and self.runner.cancel.is_set():
            raise BatchCancelled(f"the batch was cancelled after {self.writer.next_ordinal} of "
                                 f"{self.plan.pending} items; run it again to resume")

    def _track(self) -> None:
        """Peak sizes of everything held in memory (the runner's ``stats``; tests check they stay bounded)."""
        sizes = {**self.store.sizes(), "items_in_flight": len(self.decoding), "items_waiting": len(self.waiting),
                 "fits_pending": len(self.scoring), "records_held": len(self.writer.held)}
        stats = self.runner.stats
        for key, value in sizes.items():
            stats[f"peak_{key}"] = max(stats.get(f"peak_{key}", 0), value)
            stats[f"final_{key}"] = value

    # ------------------------------------------------------------------ decode
    def _decode_recipe(self) -> tuple[Any, bytes] | None:
        """The decode processes' recipe (its key, its bytes) when this run uses them, else None (decode threads).

        Processes do the plain part of decoding only: open, hash and prepare the images to encode,
        tokenize the texts. A run with a pixel, region, judge or feature stage needs the full-size
        images in this process, so it decodes in threads (items that need an attribute provider do so
        in any run).
        """
        runner = self.runner
        if self.sizes.decode_executor != "process" or not decodes_in_processes(runner.options):
            return None
        try:
            recipe = decode_worker.encoder_recipe(runner.encoder)
        except Exception as exc:  # a transform or tokenizer that cannot travel: threads do the work
            log.warning("decoding in threads: the model's transform or tokenizer cannot be pickled (%s)", exc)
            return None
        if recipe is None:
            log.info("decoding in threads: the model's transform cannot be split for decode processes")
        return recipe

    def _submit_decode(self, ordinal: int, item: ManifestItem) -> None:
        runner = self.runner
        keys = [image_key(path) for path in item.image_paths()] if runner.embedding_metrics else []
        claim = self.store.claim(keys)  # pixel metrics alone: nothing to encode
        needs_attributes = "attribute_embeddings" in runner.needs and item.attributes is None
        future = None
        if self.pools.decode_processes is not None and not needs_attributes:
            future = self._submit_to_processes(item, claim)
        if future is None:
            future = self._submit_to_threads(item, claim, needs_attributes)
        self.decoding[future] = (ordinal, item, claim)

    def _count(self, key: str) -> None:
        self.runner.stats[key] = self.runner.stats.get(key, 0) + 1

    def _submit_to_threads(self, item: ManifestItem, claim: set[str], needs_attributes: bool) -> cf.Future:
        runner = self.runner
        return self.pools.decode.submit(decode_item, item, claim, runner.encoder, runner.stages.all(),
                                        self.attribute_source if needs_attributes else None,
                                        runner.settings.max_image_pixels,
                                        runner.stages.parser if runner.stages.parses else None,
                                        runner.settings.max_image_side, runner.stages.parse_client)

    def _submit_to_processes(self, item: ManifestItem, claim: set[str]) -> cf.Future | None:
        """The item's claimed images and its new texts to a decode process (None: the pool broke)."""
        requests: dict[str, decode_worker.ImageRequest] = {}
        for label, path, written in item.labelled_images():
            key = image_key(path)
            if key in claim and key not in requests:
                requests[key] = decode_worker.ImageRequest(key, str(path), written, label)
        store, cache = self.store, self.runner.encoder.text_cache
        texts = sorted({text.strip() for text in item_static_texts(item, self.runner.needs)
                        if text not in store.texts and text not in store.text_queue and text not in cache})
        assert self.pools.decode_processes is not None
        try:
            future = self.pools.decode_processes.submit(decode_worker.prepare_item, list(requests.values()), texts,
                                                        self.runner.settings.max_image_pixels,
                                                        self.runner.settings.max_image_side)
            self.process_futures.add(future)
            future.add_done_callback(self.process_futures.discard)
            return future
        except (BrokenProcessPool, RuntimeError) as exc:  # RuntimeError: shut down (at exit, or replaced)
            self._decode_processes_failed(exc)
            return None

    def _decode_processes_failed(self, exc: BaseException, force: bool = False) -> None:
        pool = self.pools.decode_processes
        if pool is not None:
            log.warning("the decode worker processes stopped (%s); this run decodes in threads from here on",
                        str(exc) or type(exc).__name__)
            self.pools.decode_processes = None
            # the next run starts fresh workers (another run's new pool stays)
            DECODE_POOL.discard(pool, force=force)

    def _check_decode_processes(self) -> None:
        """While the loop waits for decoded items: a decode worker that died sends the run to threads.

        Python's pool notices a dead worker by itself, except when the worker died while sending a
        result: its manager thread then waits for the rest of the message forever (found by the test
        that kills a worker during a run), and the items in the processes would never come back.
        """
        pool = self.pools.decode_processes
        if pool is None or not SharedProcessPool.has_dead_worker(pool):
            return
        self._decode_processes_failed(RuntimeError("a worker process died"), force=True)
        for future, (ordinal, item, claim) in list(self.decoding.items()):
            if future in self.process_futures and not future.done():
                del self.decoding[future]
                self._resend_to_threads(ordinal, item, claim)

    def _resend_to_threads(self, ordinal: int, item: ManifestItem, claim: set[str]) -> None:
        """An item the decode processes did not return goes to a decode thread (its claim unchanged)."""
        self._count("resent_to_threads")
        self.decoding[self._submit_to_threads(item, claim, False)] = (ordinal, item, claim)

    def _from_prepared(self, prepared: decode_worker.PreparedItem) -> DecodedItem:
        """A decode process's result as the thread path gives it (embeddings already cached are taken)."""
        out = DecodedItem(failed_images=prepared.failed_images, error=prepared.error)
        for key, (sha, pixels) in prepared.images.items():
            out.shas[key] = sha
            cached = self.runner.encoder.image_cache.get(sha)
            out.images[key] = (sha, None, cached) if cached is not None else (sha, pixels, None)
        return out

    def _on_decoded(self, future: cf.Future, ordinal: int, item: ManifestItem, claim: set[str]) -> None:
        store = self.store
        tokens: dict[str, Any] = {}
        try:
            decoded = future.result()
            if isinstance(decoded, decode_worker.PreparedItem):
                tokens = decoded.tokens
                decoded = self._from_prepared(decoded)
                self._count("decoded_in_processes")
            else:
                self._count("decoded_in_threads")
        except (BrokenProcessPool, cf.CancelledError) as exc:
            # a worker died (killed, out of memory) or the pool was shut down under this run (another
            # run in this process asked for other workers): the item goes to a thread, nothing is lost
            self._decode_processes_failed(exc)
            self._resend_to_threads(ordinal, item, claim)
            return
        except Exception as exc:  # a bug in a metric or provider: record it, keep going
            log.warning("item %s failed unexpectedly", item.id, exc_info=True)
            decoded = DecodedItem(error=f"{type(exc).__name__}: {exc}")
            # nobody else will produce what this task claimed: items that share it fail with the same reason
            store.abandon_claims(claim, decoded.error)
        store.add_decoded(decoded)
        image_keys = [image_key(p) for p in item.image_paths()]
        if decoded.error is not None:
            self._fail(item, ordinal, decoded.error, image_keys=image_keys)
            return
        static = item_static_texts(item, self.runner.needs)
        dynamic: set[str] = set()
        attributes = item.attributes
        if decoded.attributes is not None:
            attributes = decoded.attributes
            dynamic = (set(attributes.source) | set(attributes.target)) - static
            store.add_text_uses(dynamic)
        self.runner.notes.extend(note for note in decoded.notes if note not in self.runner.notes)
        state = _ItemState(ordinal=ordinal, item=item, image_keys=image_keys, texts=static | dynamic,
                           attributes=attributes, shas=decoded.shas, stage_scores=decoded.stage_scores,
                           parse=decoded.parse)
        store.request_texts(state.texts, self.runner.encoder, tokens)
        self.waiting[ordinal] = state

    # ------------------------------------------------------------------ score
    def _submit_ready(self) -> None:
        runner, store = self.runner, self.store
        for ordinal in sorted(self.waiting):
            state = self.waiting[ordinal]
            failed = store.failure(state.image_keys)
            if failed is not None:
                del self.waiting[ordinal]
                self._fail(state.item, ordinal, failed, state)
                continue
            if not runner.embedding_metrics:  # nothing to encode or fit: the pixel metrics are all there is
                del self.waiting[ordinal]
                self.writer.put(ordinal, self._ok_record(state, ItemScores.empty(len(state.item.edits))))
                store.release(state.image_keys, state.texts)
                continue
            if not store.has_all(state.image_keys, state.texts):
                continue
            while len(self.scoring) >= self.sizes.max_pending_fits:
                self._collect(block=True, one=True)
                self._stop_if_cancelled()  # one pass can wait on the fits of thousands of decoded items
            del self.waiting[ordinal]
            inputs = embedding_inputs(state.item, state.attributes, [store.images[k] for k in state.image_keys],
                                      store.texts, runner.needs, asdict(runner.options.augclip))
            future = self.pools.fit.submit(score_embeddings, inputs, runner.embedding_metrics)
            self.scoring[ordinal] = (future, state)
            store.release(state.image_keys, state.texts)

    def _fail(self, item: ManifestItem, ordinal: int, error: str, state: _ItemState | None = None,
              image_keys: list[str] | None = None) -> None:
        # a failed item gives back its uses of images and texts, so shared embeddings are still freed
        keys = state.image_keys if state else (image_keys or [])
        self.store.release(keys, state.texts if state else item_static_texts(item, self.runner.needs))
        self.writer.put(ordinal, error_record(item, self.runner.dataset, error, self.run_info))

    def _ok_record(self, state: _ItemState, scores: ItemScores) -> dict[str, Any]:
        order = self.runner.options.metrics
        if state.stage_scores is not None:
            merge_scores(scores, state.stage_scores)
        scores = scores.merged(ItemScores.empty(len(scores.values)), order=order)  # the values in table order
        shas = [state.shas.get(key) for key in state.image_keys[1:]]
        extra = {"bpm_parse": state.parse} if self.runner.regions is not None else None
        return ok_record(state.item, self.runner.dataset, scores, shas, state.attributes, order, self.run_info, extra)

    # ------------------------------------------------------------------ write
    def _collect(self, block: bool, one: bool = False) -> None:
        """Records of finished fits, then every record whose turn has come is written."""
        if block and self.scoring:
            earliest = min(self.scoring)
            pending = [self.scoring[earliest][0]] if one else [f for f, _ in self.scoring.values()]
            cf.wait(pending, return_when=cf.FIRST_COMPLETED if one else cf.ALL_COMPLETED)
        for ordinal in [o for o, (f, _) in self.scoring.items() if f.done()]:
            future, state = self.scoring.pop(ordinal)
            try:
                self.writer.put(ordinal, self._ok_record(state, future.result()))
            except Exception as exc:
                log.warning("scoring item %s failed", state.item.id, exc_info=True)
                self.writer.put(ordinal, error_record(state.item, self.runner.dataset, f"{type(exc).__name__}: {exc}",
                                                      self.run_info))
        for record in self.writer.write_ready():
            self.summary.count(record)
            self.bar.update(1)
            if self.summary.n_failed:
                self.bar.set_postfix(failed=self.summary.n_failed, refresh=False)
            self._report_progress()

    def _report_progress(self) -> None:
        progress = self.runner.progress
        if progress is None:
            return
        now = time.perf_counter()
        written, total = self.writer.next_ordinal, max(1, self.plan.pending)
        if now - self._last_progress < 0.1 and written < total:
            return
        self._last_progress = now
        progress(written / total, f"{written}/{total} items scored"
                 + (f", {self.summary.n_failed} failed" if self.summary.n_failed else ""))


def _progress_bar(total: int, show: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="item", disable=not show, file=sys.stderr, dynamic_ncols=True,
                smoothing=0.05, desc="batch")


def run_batch(manifest: str | Path, out: str | Path, *, options: BatchOptions | None = None,
              settings: Settings | None = None, encoder: ClipEncoder | None = None, csv: str | Path | None = None,
              progress: ProgressFn | None = None, show_progress: bool = False,
              dataset: str | None = None, engine: str = "local", ray_options: Any = None,
              cancel: threading.Event | None = None) -> BatchSummary:
    """Score every item of ``manifest`` into ``out`` (JSONL, or a Parquet folder when it ends in
    ``.parquet``; resumes an existing one).

    ``progress(fraction, message)`` is called as items finish; ``dataset`` names items that have
    no ``dataset`` field (default: the manifest's file name without extension). ``engine="ray"``
    runs on Ray Data instead (:mod:`.ray_engine`; ``ray_options``: a ``RayOptions``). Setting ``cancel``
    stops the run within a loop turn (:class:`BatchCancelled`; finished items are kept and resume).
    """
    return BatchRunner(manifest, out, options=options, settings=settings, encoder=encoder, csv=csv,
                       progress=progress, show_progress=show_progress, dataset=dataset, engine=engine,
                       ray_options=ray_options, cancel=cancel).run()
