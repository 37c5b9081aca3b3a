"""One process at a time: a lock file beside something several processes may make at once.

Jobs started together in one folder share its tracking store and its bank;
each would otherwise create the store (and break it) or build the same bank.
:func:`lock_beside` lets the first make it while the others wait, then look
again and find it made. The lock is the operating system's advisory lock on
``<path>.lock`` (``filelock``: ``flock`` on POSIX), so a process that dies,
even by SIGKILL, releases it. The empty lock file stays: removing it while
another process waits on it would let a third take a new one at once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def lock_path(path: str | Path) -> Path:
    """The lock file of ``path``: ``<path>.lock`` beside it."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


@contextmanager
def lock_beside(path: str | Path, waiting: str | None = None) -> Iterator[bool]:
    """Hold the lock of ``path`` (:func:`lock_path`; its folder is created)
    for the block. If another process holds it, print ``waiting`` (if given)
    as one line on stderr and wait for it. Yields whether it waited: the
    block should then look again for what it is about to make."""
    from filelock import FileLock, Timeout  # ~50 ms: paid only by a job that makes something

    lock_file = lock_path(path)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_file)
    try:
        lock.acquire(timeout=0)
        waited = False
    except Timeout:
        if waiting:
            print(waiting, file=sys.stderr, flush=True)
        lock.acquire()
        waited = True
    try:
        yield waited
    finally:
        lock.release()


__all__ = ["lock_beside", "lock_path"]
