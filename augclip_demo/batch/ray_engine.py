"""The Ray engine: a batch run on Ray Data, for manifests larger than one machine scores in a day.

The same manifest, options and results as the local runner (:mod:`.runner`), spread over a Ray
cluster (or a local Ray instance). The stages are the local runner's stage functions
(:mod:`.item_steps`) run in Ray actors; nothing of the scoring is re-implemented here.

The dataset flows through these operators:

1. **Read.** The driver validates the manifest (the local runner's planning pass: every line and
   file, resume against ``--out``) and makes a dataset of the pending items, one row each
   (``ordinal``, ``id``, the parsed item).
2. **Attributes** (only when some item has none and a metric needs them): a small actor pool,
   one provider per actor. Its size bounds the concurrent LLM calls, each actor spaces its
   extractions (``extractions_per_second`` shared by the pool; one ``openai`` extraction is about
   three chat requests; cache hits are spaced too), and answers go through the provider's on-disk
   cache, so a rerun asks the model nothing twice.
3. **Models** (only with BPM, HATIE or the judge): its own actor pool, one set of region models (and
   the run's judge client) per actor, running the pipeline's BPM, HATIE and judge stages
   (:func:`~.stages.decode_item` with the model stages of :func:`~.stages.run_stages`).
4. **Score**: an actor pool, one loaded CLIP encoder per actor (``num_gpus`` per actor when the
   cluster has GPUs; the pool size follows the cluster's GPUs or CPUs), a batch of items per call:
   decode, the pixel stage (pixel metrics and feature networks), encode every image and text of the
   batch once, fit and score each item, and build its record (:func:`~.stages.ok_record` /
   :func:`~.stages.error_record`).
5. **Write**: records stream back to the driver in manifest order, and the driver is the only
   writer. It writes each item id once (ids already in ``--out`` or written in this run are
   skipped), to a JSONL file or a folder of Parquet parts (:mod:`.results_parquet`).

Why this is exactly once: a dead actor is restarted by Ray Data and its unfinished batch runs again
(``max_restarts`` / ``max_task_retries`` are unlimited for Ray Data's actors), so every item is
delivered; a batch that ran twice still reaches the driver once, and the driver's id check makes a
second delivery harmless anyway. Records are written only by the driver, atomically (a flushed
line; a renamed part), so a killed driver loses only records not yet written, and those items run
again on resume. Items Ray gave up on are listed in the summary and run again on resume.

Ray is optional: this module imports it only when a run starts.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import pickle
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from ..errors import AugclipError, InputError, ManifestError
from ..metrics.suite import ItemScores
from .fit_worker import score_embeddings
from .item_steps import (
    AttributeSource,
    HatieFeatureSpecs,
    decode_item,
    embedding_inputs,
    encode_images,
    encode_texts,
    error_record,
    merge_scores,
    ok_record,
    run_stages,
    unit_row,
)
from .manifest import ManifestItem
from .options import BatchOptions, BatchSummary
from .plan import image_key, item_static_texts, make_plan, planned_items
from .results import (
    RunLock,
    apply_resume_state,
    export_csv,
    no_empty_results_on_failure,
    open_results_writer,
    read_resume_state,
)

log = logging.getLogger(__name__)

_RAY_EXTRA_HINT = "the ray engine needs Ray Data: pip install 'augclip-demo[ray]'"


@dataclass
class RayOptions:
    """How a run uses the Ray cluster (the CLI's ``--ray-*`` flags map one to one)."""

    address: str | None = None  # None: RAY_ADDRESS or a new local instance; "auto": the running cluster
    actors: int | None = None  # scoring actors (default: from the cluster's GPUs, else its CPUs)
    num_gpus: float | None = None  # GPUs per scoring actor (default: 1 when the cluster has GPUs, else 0)
    num_cpus: float = 1.0  # CPUs per scoring actor
    items_per_batch: int = 16  # items per scoring call (each has 1 + edits images)
    attribute_actors: int = 1  # concurrent attribute providers (bounds concurrent LLM calls)
    extractions_per_second: float | None = None  # attribute extractions per second, whole pool (None: no cap)
    bpm_actors: int | None = None  # region (BPM) actors (default: as many as scoring actors)
    local_cpus: int | None = None  # CPUs of a local instance this run starts (default: all)
    rows_per_part: int = 512  # Parquet results: records per part file

    def __post_init__(self) -> None:
        for name in ("actors", "items_per_batch", "attribute_actors", "bpm_actors", "local_cpus", "rows_per_part"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise InputError(f"ray {name.replace('_', ' ')} must be a positive integer, got {value!r}")
        for name in ("num_gpus", "num_cpus", "extractions_per_second"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InputError(f"ray {name.replace('_', ' ')} must be a number >= 0, got {value!r}")
        if self.extractions_per_second == 0:
            raise InputError("ray extractions per second must be > 0 (leave it out for no cap)")


@dataclass(frozen=True)
class PoolPlan:
    """Actors and resources per stage, from the cluster's resources and the options."""

    score_actors: int
    score_gpus: float
    score_cpus: float
    bpm_actors: int
    attribute_actors: int
    attribute_cpus: float = 0.25  # providers mostly wait on HTTP; a clip-vocab provider shares the actor's CPU


def plan_pools(resources: dict[str, float], options: RayOptions, *, use_gpu: bool, bpm: bool,
               attributes: bool) -> PoolPlan:
    """How many actors each stage gets. GPUs when the cluster has them (and the device allows):
    ``floor(GPUs / num_gpus)`` scoring actors; else ``floor((CPUs - what the attribute stage
    reserves) / num_cpus)``, at least one. The BPM stage shares the same devices, so by default it
    gets as many actors and each stage is given half of every device."""
    gpus = float(resources.get("GPU", 0.0)) if use_gpu else 0.0
    cpus = float(resources.get("CPU", 1.0))
    attribute_cpus = PoolPlan.__dataclass_fields__["attribute_cpus"].default
    reserved = options.attribute_actors * attribute_cpus if attributes else 0.0
    num_gpus = options.num_gpus if options.num_gpus is not None else (1.0 if gpus >= 1 else 0.0)
    share = 2 if bpm else 1  # the regions and scoring actors share the devices
    if options.actors is not None:
        actors = options.actors
    elif num_gpus > 0:
        actors = max(1, int(gpus // num_gpus))
    else:
        actors = max(1, int((cpus - reserved) // (options.num_cpus * share)))
    return PoolPlan(score_actors=actors, score_gpus=num_gpus / share, score_cpus=options.num_cpus,
                    bpm_actors=(options.bpm_actors or actors) if bpm else 0,
                    attribute_actors=options.attribute_actors if attributes else 0)


# ---------------------------------------------------------------------------------------------- stages
def _items(batch: dict[str, Any]) -> list[ManifestItem]:
    return [pickle.loads(blob) for blob in batch["item"]]


def _passthrough(batch: dict[str, Any], **columns: list[Any]) -> dict[str, Any]:
    out = {key: list(values) for key, values in batch.items()}
    out.update(columns)
    return out


class _RateLimiter:
    """At most ``per_second`` calls per second from this process (calls are spaced evenly)."""

    def __init__(self, per_second: float | None):
        self.interval = 1.0 / per_second if per_second else 0.0
        self.next_at = 0.0
        self.lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self.lock:
            now = time.monotonic()
            delay = self.next_at - now
            self.next_at = max(now, self.next_at) + self.interval
        if delay > 0:
            time.sleep(delay)


class _AttributeStage:
    """Ray Data callable class: attributes for items that have none (one provider per actor)."""

    def __init__(self, settings: Settings, provider: str, needs: set[str], per_actor_rate: float | None):
        from ..inference.clip_encoder import get_encoder
        from ..pipeline import Evaluator

        self.settings = settings
        self.needs = needs
        self.source = AttributeSource(Evaluator(settings=settings, encoder=get_encoder(settings)), provider)
        self.limiter = _RateLimiter(per_actor_rate)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from ..io import open_image

        found: list[bytes] = []
        errors: list[str] = []
        for item in _items(batch):
            attributes, error = None, ""
            if "attribute_embeddings" in self.needs and item.attributes is None:
                try:
                    source = open_image(item.source_path, name=item.source, max_pixels=self.settings.max_image_pixels,
                                        max_side=self.settings.max_image_side)
                except AugclipError:
                    source = None  # the scoring stage opens it again and records the image's error
                if source is not None:
                    self.limiter.wait()
                    try:
                        attributes = self.source.extract(source, item)
                    except AugclipError as exc:
                        error = str(exc)
            found.append(pickle.dumps(attributes) if attributes is not None else b"")
            errors.append(error)
        return _passthrough(batch, found_attributes=found, attribute_error=errors)


class _ModelStage:
    """Ray Data callable class: the pipeline's BPM, HATIE and judge stages of every item, one set of region
    models (and one judge client) per actor."""

    def __init__(self, settings: Settings, options: BatchOptions):
        from ..inference.clip_encoder import get_encoder

        self.settings = settings
        self.encoder = get_encoder(settings)
        self.stages = run_stages(options, settings, self.encoder)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        scores: list[bytes] = []
        errors: list[str] = []
        parser = self.stages.parser if self.stages.parses else None
        for item in _items(batch):
            decoded = decode_item(item, set(), self.encoder, self.stages.with_models(), None,
                                  self.settings.max_image_pixels, parser, self.settings.max_image_side,
                                  self.stages.parse_client)
            # an image that cannot be opened is the scoring stage's error to report (it opens every image too)
            error = "" if decoded.failed_images or decoded.error is None else decoded.error
            scores.append(pickle.dumps((decoded.stage_scores, decoded.parse)))
            errors.append(error)
        return _passthrough(batch, regions=scores, region_error=errors)


class ScoreStage:
    """Ray Data callable class: one loaded CLIP encoder per actor; a batch of items in, their records out."""

    def __init__(self, settings: Settings, options: BatchOptions, run_info: dict[str, Any], dataset: str,
                 needs: set[str], bpm: bool, threads: int = 1):
        from concurrent.futures import ThreadPoolExecutor

        from threadpoolctl import threadpool_limits

        from ..inference.clip_encoder import get_encoder
        from ..metrics.suite import METRICS

        self.settings = settings
        self.options = options
        self.run_info = run_info
        self.dataset = dataset
        self.needs = needs
        self.bpm = bpm
        try:
            self.encoder = get_encoder(settings).load()
        except AugclipError as exc:  # re-raised plain, so the driver can unpickle it and show the message
            raise AugclipError(str(exc)) from None
        pixels = run_stages(options, settings, self.encoder).pixels
        self.pixel_stages = [pixels] if pixels is not None else []
        self.embedding_metrics = [k for k in options.metrics if METRICS[k].basis == "embeddings"
                                  and (pixels is None or k not in pixels.keys)]
        self.augclip = asdict(options.augclip)
        gpu = self.encoder.device.type == "cuda"
        self.batch_size = options.batch_size or (256 if gpu else 64)
        self.text_batch_size = options.text_batch_size or (1024 if gpu else 64)
        threadpool_limits(limits=1, user_api="blas")  # the fits' matrices are tiny (as in the local runner)
        # decoding and fits use the actor's CPUs as the local runner's decode and fit threads do
        self.pool = ThreadPoolExecutor(max_workers=max(1, threads)) if threads > 1 else None

    def _map(self, fn: Any, *columns: list[Any]) -> list[Any]:
        return list(self.pool.map(fn, *columns)) if self.pool is not None else list(map(fn, *columns))

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        items = _items(batch)
        n = len(items)
        found = batch.get("found_attributes", [b""] * n)
        attribute_errors = batch.get("attribute_error", [""] * n)
        regions = batch.get("regions", [b""] * n)
        region_errors = batch.get("region_error", [""] * n)
        claim_all = bool(self.embedding_metrics)

        def decode(item: ManifestItem) -> Any:
            keys = {image_key(path) for path in item.image_paths()} if claim_all else set()
            return decode_item(item, keys, self.encoder, self.pixel_stages, None, self.settings.max_image_pixels,
                               max_side=self.settings.max_image_side)

        decoded = self._map(decode, items)
        # every image and text of the batch encoded once (the encoder's forward passes have a fixed size,
        # so an embedding is bit-identical to the local runner's whatever the batch holds)
        images: dict[str, np.ndarray] = {}
        todo: dict[str, Any] = {}
        for dec in decoded:
            for sha, pixels, cached in dec.images.values():
                if cached is not None:
                    images.setdefault(sha, unit_row(cached, "image embeddings"))
                elif sha not in images:
                    todo.setdefault(sha, pixels)
        if todo:
            rows = encode_images(self.encoder, list(todo.values()), list(todo), self.batch_size)
            images.update(zip(todo, rows))
        attributes = [pickle.loads(blob) if len(blob) else item.attributes for blob, item in zip(found, items)]
        texts_of = []
        for item, attrs in zip(items, attributes):
            texts = item_static_texts(item, self.needs)
            if "attribute_embeddings" in self.needs and attrs is not None:
                texts |= set(attrs.source) | set(attrs.target)
            texts_of.append(texts)
        wanted = sorted(set().union(*texts_of)) if texts_of else []
        texts = dict(zip(wanted, encode_texts(self.encoder, wanted, self.text_batch_size))) if wanted else {}
        records = self._map(lambda i: self._record(items[i], decoded[i], attributes[i], texts, images,
                                                   attribute_errors[i], regions[i], region_errors[i]), range(n))
        import json

        return {"ordinal": list(batch["ordinal"]), "id": list(batch["id"]),
                "record": [json.dumps(r, ensure_ascii=False, allow_nan=False) for r in records]}

    def _record(self, item: ManifestItem, decoded: Any, attributes: Any, texts: dict[str, np.ndarray],
                images: dict[str, np.ndarray], attribute_error: str, regions: bytes, region_error: str) -> dict:
        """The item's record, with the local runner's precedence of errors (images, BPM, attributes)."""
        if decoded.error is not None:
            return error_record(item, self.dataset, decoded.error, self.run_info)
        if region_error:
            return error_record(item, self.dataset, region_error, self.run_info)
        if attribute_error:
            return error_record(item, self.dataset, attribute_error, self.run_info)
        keys = [image_key(path) for path in item.image_paths()]
        try:
            if self.embedding_metrics:
                rows = [images[decoded.shas[key]] for key in keys]
                inputs = embedding_inputs(item, attributes, rows, texts, self.needs, self.augclip)
                scores = score_embeddings(inputs, self.embedding_metrics)
            else:
                scores = ItemScores.empty(len(item.edits))
        except Exception as exc:  # a bug in a metric: record it, keep going (as the local runner does)
            log.warning("scoring item %s failed", item.id, exc_info=True)
            return error_record(item, self.dataset, f"{type(exc).__name__}: {exc}", self.run_info)
        model_scores, parse = pickle.loads(regions) if len(regions) else (None, None)
        order = self.options.metrics
        for stage_scores in (decoded.stage_scores, model_scores):  # in the local runner's stage order
            if stage_scores is not None:
                merge_scores(scores, stage_scores)
        scores = scores.merged(ItemScores.empty(len(scores.values)), order=order)  # the values in table order
        shas = [decoded.shas.get(key) for key in keys[1:]]
        extra = {"bpm_parse": parse} if self.bpm else None
        return ok_record(item, self.dataset, scores, shas, attributes, order, self.run_info, extra)


# ---------------------------------------------------------------------------------------------- driver
def _our_error(exc: BaseException) -> AugclipError | None:
    """The AugclipError inside a Ray error (``cause`` of a task error, the ``__cause__`` chain, or the
    traceback text of an actor that died in its constructor), if any."""
    import re

    found = re.findall(r"augclip_demo\.errors\.\w+: ([^\n]+)", str(exc))
    if found:
        return AugclipError(found[-1].strip())
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, AugclipError):
            return current
        todo.extend([getattr(current, "cause", None), current.__cause__, current.__context__])
    return None


def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise InputError(_RAY_EXTRA_HINT) from None
    return ray


def connect(options: RayOptions) -> bool:
    """Connect to the cluster (``address``, else ``RAY_ADDRESS``) or start a local instance; returns
    whether this call started Ray (then :func:`disconnect` stops it)."""
    ray = _import_ray()
    if ray.is_initialized():
        return False
    address = options.address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address)
        return True
    # A local instance: workers import this very package (the checkout it runs from), not another copy.
    package_root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH", "")]))
    ray.init(num_cpus=options.local_cpus, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    return True


class RayExecution:
    """One run of a configured :class:`~.runner.BatchRunner` (``engine="ray"``) on Ray Data: the same
    validation, resume and records as the local loop, the work done by Ray actors."""

    def __init__(self, config: Any, ray_options: RayOptions | None = None):
        self.config = config  # the BatchRunner: metrics by stage, run signature, untrained (one place for them)
        self.ray_options = ray_options or RayOptions()
        self.summary: BatchSummary | None = None
        self.pools: PoolPlan | None = None
        self.lost: list[str] = []  # pending ids no record came back for (run again on resume)
        self.duplicates = 0  # records delivered twice (written once)
        self.timings: dict[str, float] = {}  # seconds: connect, first_record (actors starting), stream (the rest)

    def run(self) -> BatchSummary:
        config, opts = self.config, self.config.options
        start = time.perf_counter()
        manifest, out = config.manifest, config.out
        if not manifest.is_file():
            raise InputError(f"manifest {manifest}: file not found")
        if out.resolve() == manifest.resolve():
            raise InputError("--out must not be the manifest itself")
        ray = _import_ray()
        run = config.run_signature()
        with RunLock(out), no_empty_results_on_failure(out):
            resume = read_resume_state(out, run, overwrite=opts.overwrite, retry_failed=opts.retry_failed)
            plan = make_plan(manifest, resume.done, config.needs)
            if plan.problems and not opts.skip_invalid:
                raise ManifestError(str(manifest), plan.problems)
            if plan.n_items == 0 and not plan.problems:
                raise ManifestError(str(manifest), ["the manifest has no items (one JSON object per line expected)"])
            apply_resume_state(out, resume, overwrite=opts.overwrite, retry_failed=opts.retry_failed)
            summary = BatchSummary(manifest=str(manifest), out=str(out), n_items=plan.n_items,
                                   n_skipped=plan.n_items - plan.pending, invalid=list(plan.problems),
                                   model=config.encoder.spec.raw, untrained=config.untrained)
            self.summary = config.summary = summary
            if resume.dropped_torn_line:
                summary.notes.append("the results file ended in a torn line (interrupted write); it was removed and "
                                     "that item runs again")
            if resume.dropped_failed:
                summary.notes.append(f"{resume.dropped_failed} failed item(s) from the last run are retried")
            if plan.pending:
                clock = time.perf_counter()
                started = connect(self.ray_options)
                self.timings["connect"] = time.perf_counter() - clock
                try:
                    self._execute(ray, plan, resume.done, run, summary)
                finally:
                    if started:
                        ray.shutdown()
                    summary.seconds = time.perf_counter() - start
        if config.csv is not None:
            summary.csv = str(export_csv(out, config.csv))
        summary.seconds = time.perf_counter() - start
        return summary

    def _dataset(self, ray: Any, plan: Any, done: set[str], run: dict[str, Any]) -> Any:
        from ray.data import ActorPoolStrategy, DataContext

        config, ropts = self.config, self.ray_options
        # what travels to the actors: HATIE's networks by spec (each actor builds its own; the loaded ones do not pickle)
        options = dataclasses.replace(config.options, hatie_features=HatieFeatureSpecs.of(config.options.hatie_features))
        rows = [{"ordinal": ordinal, "id": item.id, "item": pickle.dumps(item)}
                for ordinal, item in planned_items(config.manifest, plan, done)]
        use_gpu = config.settings.device != "cpu"
        bpm = bool(config.stages.with_models())  # the model stages get their own actors
        self.pools = pools = plan_pools(ray.cluster_resources(), ropts, use_gpu=use_gpu, bpm=bpm,
                                        attributes=plan.needs_provider)
        context = DataContext.get_current()
        context.execution_options.preserve_order = True  # records come back in manifest order
        context.enable_progress_bars = False  # the run's own bar counts written records
        context.print_on_execution_start = False
        per_batch = ropts.items_per_batch
        blocks = max(1, min(len(rows), math.ceil(len(rows) / per_batch)))
        ds = ray.data.from_items(rows, override_num_blocks=blocks)
        if pools.attribute_actors:
            provider = config.options.provider or config.settings.attribute_provider
            rate = ropts.extractions_per_second / pools.attribute_actors if ropts.extractions_per_second else None
            ds = ds.map_batches(_AttributeStage, batch_size=per_batch, batch_format="numpy",
                                compute=ActorPoolStrategy(size=pools.attribute_actors),
                                num_cpus=pools.attribute_cpus,
                                fn_constructor_kwargs={"settings": config.settings, "provider": provider,
                                                       "needs": config.needs, "per_actor_rate": rate})
        if bpm:
            ds = ds.map_batches(_ModelStage, batch_size=per_batch, batch_format="numpy",
                                compute=ActorPoolStrategy(size=pools.bpm_actors),
                                num_cpus=pools.score_cpus, num_gpus=pools.score_gpus,
                                fn_constructor_kwargs={"settings": config.settings, "options": options})
        return ds.map_batches(ScoreStage, batch_size=per_batch, batch_format="numpy",
                              compute=ActorPoolStrategy(size=pools.score_actors),
                              num_cpus=pools.score_cpus, num_gpus=pools.score_gpus,
                              fn_constructor_kwargs={"settings": config.settings, "options": options,
                                                     "run_info": run, "dataset": config.dataset,
                                                     "needs": config.needs, "bpm": config.stages.parses,
                                                     "threads": max(1, int(pools.score_cpus))})

    def _execute(self, ray: Any, plan: Any, done: set[str], run: dict[str, Any], summary: BatchSummary) -> None:
        import json
        import sys

        from tqdm import tqdm

        config = self.config
        ds = self._dataset(ray, plan, done, run)
        pending = {item.id for _, item in planned_items(config.manifest, plan, done)}
        written: set[str] = set()
        writer = open_results_writer(config.out, self.ray_options.rows_per_part)
        bar = tqdm(total=plan.pending, unit="item", disable=not config.show_progress, file=sys.stderr,
                   dynamic_ncols=True, smoothing=0.05, desc="batch (ray)")
        clock = time.perf_counter()
        try:
            for batch in ds.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=1):
                if "first_record" not in self.timings:
                    self.timings["first_record"] = time.perf_counter() - clock
                for item_id, text in zip(batch["id"], batch["record"]):
                    item_id = str(item_id)
                    if item_id in written or item_id in done or item_id not in pending:
                        self.duplicates += 1  # delivered twice: the first one is written, once
                        continue
                    record = json.loads(str(text))
                    writer.write(record)
                    written.add(item_id)
                    summary.count(record)
                    bar.update(1)
        except KeyboardInterrupt:
            summary.interrupted = True
            raise
        except Exception as exc:  # Ray's errors wrap ours: say what failed; what was written is kept
            cause = _our_error(exc)
            what = str(cause) if cause is not None else f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
            raise AugclipError(f"the Ray run stopped after {len(written)} of {len(pending)} item(s): {what}. The "
                               f"written records are kept in {config.out}; rerun the same command to resume")\
                from exc
        finally:
            writer.close()
            bar.close()
            self.timings["stream"] = time.perf_counter() - clock - self.timings.get("first_record", 0.0)
        self.lost = sorted(pending - written)
        if self.lost and not summary.interrupted:
            summary.notes.append(f"{len(self.lost)} item(s) came back from no Ray worker (e.g. {self.lost[0]}); "
                                 "rerun the same command to score them")
        if self.duplicates:
            summary.notes.append(f"{self.duplicates} record(s) were delivered twice by retried Ray tasks and written "
                                 "once")
