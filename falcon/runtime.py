"""Fan a list of jobs out: in this process, a local process pool, or a Ray cluster.

:func:`run_jobs` takes jobs (anything picklable with an ``index``, or plain
objects) and a worker callable (a module-level function, so that it pickles
by reference) and returns ``[worker(job) for job in jobs]`` in job order,
whatever order they finish in. With deterministic workers the three runtimes
therefore give identical results.

``on_result(i, result)``, when given, is called in this process as each
job's result arrives (completion order, ``i`` = the job's position), e.g. to
print a progress line per job on any runtime.

``runtime=local`` (``workers: 1``) runs everything in this process and needs
no Ray; ``workers: N`` uses N spawned processes. ``runtime=ray`` submits one
Ray task per job to the cluster at ``runtime.address`` (null: a private local
instance with ``runtime.num_cpus`` CPUs, shut down again afterwards).
"""

from __future__ import annotations

import functools
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from envs.errors import ConfigError, FalconInputError

#: off a terminal (a log file, CI), a progress line at most this often [s]
LOG_EVERY_S = 10.0


class LineProgress:
    """Progress for a stderr that is not a terminal: a plain line
    ``desc: done/total (percent) [elapsed s]`` at most every
    :data:`LOG_EVERY_S` seconds and at the end (tqdm's bar is only for a
    terminal). The context-manager and ``update`` interface of tqdm."""

    def __init__(self, total: int, desc: str, every_s: float = LOG_EVERY_S, file=None):
        self.total, self.desc, self.every_s = int(total), desc, float(every_s)
        self.file = file or sys.stderr
        self.n = 0
        self._t0 = self._last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self._line(now)

    def _line(self, now: float) -> None:
        pct = 100.0 * self.n / self.total if self.total else 100.0
        print(
            f"{self.desc}: {self.n}/{self.total} ({pct:.0f} %) [{now - self._t0:.0f} s]",
            file=self.file,
            flush=True,
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None and self.n and time.monotonic() - self._t0 >= self.every_s:
            self._line(time.monotonic())


def _progress(total: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    if enabled and not sys.stderr.isatty():
        return LineProgress(total, desc)
    return tqdm(
        total=total, desc=desc, unit="ep", file=sys.stderr, dynamic_ncols=True, disable=not enabled
    )


def run_jobs(
    jobs: Sequence,
    worker: Callable[[Any], Any],
    runtime: dict | None = None,
    *,
    progress: bool = True,
    desc: str = "episodes",
    on_result: Callable[[int, Any], None] | None = None,
) -> list:
    """``[worker(job) for job in jobs]``, run on the configured runtime, in job order."""
    runtime = dict(runtime or {})
    name = runtime.get("name", "local")
    report = on_result or (lambda i, result: None)
    if name == "local":
        workers = int(runtime.get("workers") or 1)
        if workers <= 1 or len(jobs) <= 1:
            return _run_inline(jobs, worker, progress, desc, report)
        return _run_pool(jobs, worker, workers, progress, desc, report)
    if name == "ray":
        return _run_ray(jobs, worker, runtime, progress, desc, report)
    raise ConfigError(f"runtime.name: unknown runtime {name!r} (known: local, ray)")


def _run_inline(jobs, worker, progress, desc, report) -> list:
    out = []
    with _progress(len(jobs), progress, desc) as bar:
        for i, job in enumerate(jobs):
            out.append(worker(job))
            bar.update(1)
            report(i, out[-1])
    return out


#: jobs handed to the pool per worker process and not yet collected: enough
#: to keep every worker busy, few enough that nothing scales with the job count
IN_FLIGHT_PER_WORKER = 4


def _run_pool(jobs, worker, workers, progress, desc, report) -> list:
    """The jobs on ``workers`` spawned processes, at most
    ``workers * IN_FLIGHT_PER_WORKER`` submitted at a time.

    Completions arrive through a done-callback on a ``queue.SimpleQueue``
    rather than ``concurrent.futures.wait``: ``wait`` takes every pending
    future's lock in turn, and a SIGTERM or Ctrl-C raised between two of
    those takes left locks held, so the pool's manager thread blocked on the
    next future and the shutdown waited for it forever."""
    import multiprocessing as mp
    import queue
    from concurrent.futures import ProcessPoolExecutor

    results: list = [None] * len(jobs)
    completed: queue.SimpleQueue = queue.SimpleQueue()
    ctx = mp.get_context("spawn")  # no fork of a process that may hold torch/MLflow threads
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    try:
        with _progress(len(jobs), progress, desc) as bar:
            submitted = in_flight = 0
            while submitted < len(jobs) or in_flight:
                while submitted < len(jobs) and in_flight < workers * IN_FLIGHT_PER_WORKER:
                    future = pool.submit(worker, jobs[submitted])
                    future.add_done_callback(functools.partial(_put_done, completed, submitted))
                    submitted += 1
                    in_flight += 1
                i, future = completed.get()
                in_flight -= 1
                results[i] = future.result()  # re-raises the worker's exception
                bar.update(1)
                report(i, results[i])
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return results


def _put_done(completed, i: int, future) -> None:
    completed.put((i, future))


def _stop_pool(pool) -> None:
    """End the pool now, without waiting for the jobs still running (one may
    train for minutes): its workers are terminated, the pool's manager thread
    sees them gone, fails what was pending and exits, and is joined."""
    stop = getattr(pool, "terminate_workers", None)  # public from Python 3.14
    if stop is not None:
        stop()
    else:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on an unreachable HOST:PORT (ray.init would retry for minutes)."""
    import socket

    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ConfigError(
            f"runtime.address: expected HOST:PORT, 'auto' or ray://HOST:PORT, got {address!r}"
        )
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"runtime.address: no Ray cluster reachable at {address!r} ({e})"
        ) from None


def _run_ray(jobs, worker, runtime, progress, desc, report) -> list:
    import logging

    import ray
    from ray.exceptions import RayTaskError

    started = False
    if not ray.is_initialized():
        kwargs = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.ERROR,
        }
        address = runtime.get("address") or None
        if address is None and runtime.get("num_cpus") is not None:
            kwargs["num_cpus"] = int(runtime["num_cpus"])
        if address and address != "auto" and "://" not in address:
            _check_reachable(address)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ray.init(address=address, **kwargs)
        except (ConnectionError, ValueError, RuntimeError, TimeoutError) as e:
            where = f"connect to Ray at {address!r}" if address else "start a local Ray instance"
            msg = " ".join(str(e).split())
            raise ConfigError(f"runtime: cannot {where}: {msg}") from None
        started = True
    try:
        task = ray.remote(num_cpus=1)(worker)
        refs = [task.remote(job) for job in jobs]
        where = {ref: i for i, ref in enumerate(refs)}
        results: list = [None] * len(jobs)
        pending = list(refs)
        with _progress(len(jobs), progress, desc) as bar:
            try:
                while pending:
                    done, pending = ray.wait(pending, num_returns=1)
                    for ref in done:
                        results[where[ref]] = ray.get(ref)
                        bar.update(1)
                        report(where[ref], results[where[ref]])
            except RayTaskError as e:
                for ref in pending:
                    ray.cancel(ref)
                cause = getattr(e, "cause", None)
                if isinstance(cause, FalconInputError | FileNotFoundError):
                    raise cause from None
                raise
        return results
    finally:
        if started:
            ray.shutdown()


__all__ = ["run_jobs"]
