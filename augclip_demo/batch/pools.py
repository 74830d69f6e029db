"""The worker pools of a batch run: decode threads or processes, and fit threads or processes."""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..metrics.suite import METRICS
from . import decode_worker, fit_worker
from .options import BatchOptions

# Below this many pending items decode processes would not pay off even where they help: spawning one and
# importing torchvision in it takes seconds of CPU, once per process that runs batches, which a short
# run does not win back (a GPU batch run of 256 items takes about a second). ``auto`` does not choose them
# at all (see PoolSizes.choose); the number is kept for the benchmark's figures and the docs.
PROCESS_DECODE_MIN_ITEMS = 256


@dataclass(frozen=True)
class PoolSizes:
    """How much runs at once; defaults depend on the device and the number of CPUs."""

    batch_size: int  # images per forward pass
    text_batch_size: int  # texts per forward pass
    workers: int  # decode threads or processes
    max_inflight: int  # items being decoded at once
    fit_executor: str  # thread | process
    fit_workers: int
    decode_executor: str = "thread"  # thread | process

    @property
    def max_pending_fits(self) -> int:
        return 64 * self.fit_workers  # back-pressure on the loop that submits fits

    @classmethod
    def choose(cls, options: BatchOptions, gpu: bool, cpus: int | None = None, items: int | None = None) -> PoolSizes:
        """Sizes for a run of ``items`` pending items (None: unknown, counted as many)."""
        cpus = cpus or os.cpu_count() or 1
        batch_size = options.batch_size or (256 if gpu else 64)
        workers = options.workers or max(2, min(16, cpus))
        # processes pay off where the encoder's thread must not wait for Python's GIL: a GPU fed by
        # a many-core host. On a CPU the model's own threads want the cores, and threads start at once.
        executor = options.fit_executor
        if executor == "auto":
            executor = "process" if gpu and cpus >= 4 else "thread"
        # Decode processes exist only for speed and were never measured on a GPU, the hardware they target
        # (docs/performance.md): until a GPU figure shows them faster, ``auto`` decodes in threads and
        # ``process`` is an explicit choice.
        decode = "thread" if options.decode_executor == "auto" else options.decode_executor
        return cls(
            batch_size=batch_size,
            text_batch_size=options.text_batch_size or (1024 if gpu else 64),  # CPU: smaller is faster
            workers=workers,
            max_inflight=options.max_inflight or max(batch_size, 4 * workers),
            fit_executor=executor,
            fit_workers=options.fit_workers or (max(1, min(16, cpus - 2)) if executor == "process" else 2),
            decode_executor=decode,
        )


def decodes_in_processes(options: BatchOptions) -> bool:
    """Whether decode processes can serve a run of these options: embedding metrics only.

    A pixel, region, judge or feature-network metric needs the full-size images in the main
    process, so such a run decodes in threads whatever ``decode_executor`` says.
    """
    bases = {METRICS[key].basis for key in options.metrics}
    return bases == {"embeddings"} and not options.feature_metrics


class WorkerPools:
    """A run's decode pools and fit pool; worker processes are shared by the runs of one process.

    ``decode_recipe`` ((its key, :func:`.decode_worker.recipe_bytes`)) turns on the decode processes; the decode
    threads serve every item the processes cannot (a pixel, region, judge or attribute stage), and
    all items once the process pool broke.
    """

    def __init__(self, sizes: PoolSizes, decode_recipe: tuple[Any, bytes] | None = None):
        self.decode = cf.ThreadPoolExecutor(sizes.workers, thread_name_prefix="augclip-decode")
        self.decode_processes: cf.ProcessPoolExecutor | None = None
        if decode_recipe is not None:
            self.decode_processes = decode_pool(sizes.workers, decode_recipe)
        self.owns_fit_pool = sizes.fit_executor != "process"
        self.fit: cf.Executor = (cf.ThreadPoolExecutor(sizes.fit_workers, thread_name_prefix="augclip-fit")
                                 if self.owns_fit_pool else FIT_POOL.get(sizes.fit_workers))

    def shutdown(self, interrupted: bool) -> None:
        """Wait for the workers after a normal end; after an interruption cancel what is queued."""
        self.decode.shutdown(wait=not interrupted, cancel_futures=True)
        if self.owns_fit_pool:
            self.fit.shutdown(wait=not interrupted, cancel_futures=True)
        elif interrupted:
            FIT_POOL.discard()
        if interrupted and self.decode_processes is not None:
            DECODE_POOL.discard()


class SharedProcessPool:
    """Worker processes started once per process and reused by later runs (spawning costs seconds).

    Every worker starts when the pool is created, with one start-up task each (a pool starts workers
    only as tasks find none idle, i.e. during a run, on the cores its decoding needs); the barrier in
    the initializer holds each start-up task until all workers have started and imported.
    """

    def __init__(self, initializer: Callable[..., None], ready: Callable[[], int]):
        self.initializer = initializer
        self.ready = ready
        self._pool: tuple[tuple[int, Any], cf.ProcessPoolExecutor] | None = None
        self._lock = threading.Lock()
        self._started: list[cf.Future] = []  # the start-up task of each worker
        atexit.register(self.discard)

    def get(self, workers: int, *initargs: Any, key: Any = None) -> cf.ProcessPoolExecutor:
        """The pool of ``workers`` processes started with ``initargs`` (a new one if either changed).

        ``key`` stands for ``initargs`` where their bytes vary between equal values (a tokenizer's
        pickle grows with its word cache): the pool is reused while ``workers`` and ``key`` are the same.
        """
        key = (workers, initargs if key is None else key)
        with self._lock:
            if self._pool is None or self._pool[0] != key:
                if self._pool is not None:  # its queued tasks still run: a run using it is not cut short
                    self._pool[1].shutdown(wait=False)
                # spawn, not fork: the parent holds torch and live threads, which fork would copy half-way
                context = multiprocessing.get_context("spawn")
                pool = cf.ProcessPoolExecutor(workers, mp_context=context, initializer=self.initializer,
                                              initargs=(*initargs, context.Barrier(workers)))
                self._started = [pool.submit(self.ready) for _ in range(workers)]
                self._pool = (key, pool)
            return self._pool[1]

    def wait(self, timeout: float | None = 300) -> list[int]:
        """Block until every worker has started and run its initializer.

        Returns the process ids that answered the start-up tasks ([] without a pool); one worker may
        answer two of them, but none answers before all have passed the barrier of the initializer.
        """
        with self._lock:
            pending = list(self._started)
        done, _ = cf.wait(pending, timeout=timeout)
        return [future.result() for future in done if not future.cancelled() and future.exception() is None]

    def discard(self, pool: cf.ProcessPoolExecutor | None = None, force: bool = False) -> None:
        """Shut the pool down, its queued tasks cancelled (``pool``: only if it is still that one).

        ``force`` (a worker died): also end the other workers and close this process's end of the
        result pipe, so that a manager thread stuck in the middle of a dead worker's message reads
        end-of-file, marks the pool broken and exits (else it would block the interpreter's exit).
        """
        with self._lock:
            if self._pool is None or (pool is not None and self._pool[1] is not pool):
                return
            current = self._pool[1]
            self._pool = None
            self._started.clear()
        current.shutdown(wait=False, cancel_futures=True)
        if force:
            _end_workers(current)

    @staticmethod
    def has_dead_worker(pool: cf.ProcessPoolExecutor) -> bool:
        """Whether a worker of ``pool`` has exited (workers live as long as their pool)."""
        try:
            processes = list((getattr(pool, "_processes", None) or {}).values())
        except RuntimeError:  # changed while read: the pool's own thread is handling it
            return False
        return any(process.exitcode is not None for process in processes)


def _end_workers(pool: cf.ProcessPoolExecutor) -> None:
    """Terminate a broken pool's workers and close the parent's writing end of its result pipe.

    Uses the executor's private attributes ``_processes`` and ``_result_queue`` (CPython's; checked on
    3.11, the version this project's machines run); a version without them only skips this clean-up.
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.exitcode is None:
            process.terminate()
    for process in processes:
        process.join(timeout=5)
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        writer.close()


FIT_POOL = SharedProcessPool(fit_worker.start, fit_worker.ready)  # numpy / scikit-learn only
DECODE_POOL = SharedProcessPool(decode_worker.start, decode_worker.ready)  # PIL, torchvision, the tokenizer


def decode_pool(workers: int, recipe: tuple[Any, bytes]) -> cf.ProcessPoolExecutor:
    """The shared decode processes for a recipe (:func:`.decode_worker.encoder_recipe`: its key, its bytes)."""
    return DECODE_POOL.get(workers, recipe[1], key=recipe[0])


def wait_for_workers(timeout: float | None = 300) -> list[int]:
    """Block until the workers of both shared pools (where started) have started; their process ids."""
    return FIT_POOL.wait(timeout) + DECODE_POOL.wait(timeout)
