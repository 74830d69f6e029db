"""The worker pools of a batch run: decode threads, and threads or processes for the metric fits."""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing
import os
import threading
from dataclasses import dataclass

from . import fit_worker
from .options import BatchOptions


@dataclass(frozen=True)
class PoolSizes:
    """How much runs at once; defaults depend on the device and the number of CPUs."""

    batch_size: int  # images per forward pass
    text_batch_size: int  # texts per forward pass
    workers: int  # decode threads
    max_inflight: int  # items being decoded at once
    fit_executor: str  # thread | process
    fit_workers: int

    @property
    def max_pending_fits(self) -> int:
        return 64 * self.fit_workers  # back-pressure on the loop that submits fits

    @classmethod
    def choose(cls, options: BatchOptions, gpu: bool, cpus: int | None = None) -> PoolSizes:
        cpus = cpus or os.cpu_count() or 1
        batch_size = options.batch_size or (256 if gpu else 64)
        workers = options.workers or max(2, min(16, cpus))
        executor = options.fit_executor
        if executor == "auto":
            executor = "process" if gpu and cpus >= 4 else "thread"
        return cls(
            batch_size=batch_size,
            text_batch_size=options.text_batch_size or (1024 if gpu else 64),  # CPU: smaller is faster
            workers=workers,
            max_inflight=options.max_inflight or max(batch_size, 4 * workers),
            fit_executor=executor,
            fit_workers=options.fit_workers or (max(1, min(16, cpus - 2)) if executor == "process" else 2),
        )


class WorkerPools:
    """A run's decode pool and fit pool; worker processes are shared by the runs of one process."""

    def __init__(self, sizes: PoolSizes):
        self.decode = cf.ThreadPoolExecutor(sizes.workers, thread_name_prefix="augclip-decode")
        self.owns_fit_pool = sizes.fit_executor != "process"
        self.fit: cf.Executor = (cf.ThreadPoolExecutor(sizes.fit_workers, thread_name_prefix="augclip-fit")
                                 if self.owns_fit_pool else shared_process_pool(sizes.fit_workers))

    def shutdown(self, interrupted: bool) -> None:
        """Wait for the workers after a normal end; after an interruption cancel what is queued."""
        self.decode.shutdown(wait=not interrupted, cancel_futures=True)
        if self.owns_fit_pool:
            self.fit.shutdown(wait=not interrupted, cancel_futures=True)
        elif interrupted:
            discard_process_pool()


_PROCESS_POOL: tuple[int, cf.ProcessPoolExecutor] | None = None
_PROCESS_POOL_LOCK = threading.Lock()
_READY: list[cf.Future] = []  # the start-up task of each worker of the shared pool


def shared_process_pool(workers: int) -> cf.ProcessPoolExecutor:
    """Fit worker processes, started once per process and reused by later runs (spawning costs seconds)."""
    global _PROCESS_POOL
    with _PROCESS_POOL_LOCK:
        if _PROCESS_POOL is None or _PROCESS_POOL[0] != workers:
            if _PROCESS_POOL is not None:
                _PROCESS_POOL[1].shutdown(wait=False, cancel_futures=True)
            # spawn, not fork: the parent holds torch and live threads, which fork would copy half-way
            context = multiprocessing.get_context("spawn")
            pool = cf.ProcessPoolExecutor(workers, mp_context=context, initializer=fit_worker.start,
                                          initargs=(context.Barrier(workers),))
            # Every worker starts now, one task each (a pool starts workers only as tasks find none
            # idle, i.e. during a run, on the cores its decoding needs); the barrier in their
            # initializer holds each ready task until all of them have started and imported.
            _READY[:] = [pool.submit(fit_worker.ready) for _ in range(workers)]
            _PROCESS_POOL = (workers, pool)
            atexit.register(discard_process_pool)
        return _PROCESS_POOL[1]


def wait_for_fit_workers(timeout: float | None = 300) -> list[int]:
    """Block until every worker of the shared process pool has started and imported the fit code.

    Returns the process ids that answered the start-up tasks ([] without a pool); one worker may
    answer two of them, but none answers before all have passed the barrier in :func:`fit_worker.start`.
    """
    with _PROCESS_POOL_LOCK:
        pending = list(_READY)
    done, _ = cf.wait(pending, timeout=timeout)
    return [future.result() for future in done if not future.cancelled() and future.exception() is None]


def discard_process_pool() -> None:
    global _PROCESS_POOL
    with _PROCESS_POOL_LOCK:
        if _PROCESS_POOL is not None:
            _PROCESS_POOL[1].shutdown(wait=False, cancel_futures=True)
            _PROCESS_POOL = None
            _READY.clear()
