"""Opening an MLflow tracking store, from any number of processes at once.

MLflow creates a SQLite store in place, by some seventy schema migrations,
when its first client opens the file. Jobs started together in a new folder
each ran those migrations on the same file and broke it ("table
_alembic_tmp_metrics already exists"). Here the first process to ask makes
the store in a temporary file beside it and renames it into place, under a
lock file (``mlflow.db.lock``, :mod:`falcon.locks`); the others wait for the
lock, find the store and open it. A store is therefore never seen
half-made, and one whose making was interrupted is not there at all.

Every failure of a store (a bad URI, a server that does not answer, a store
broken by an interrupted migration) is a :class:`TrackingError`: one line
that names the store and the cause, and says how to recover a broken store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MAX_CAUSE_LEN = 500
#: MLflow's batch migrations on SQLite copy a table into this, drop the old one and rename it back
MIGRATION_TMP_PREFIX = "_alembic_tmp_"


class TrackingError(RuntimeError):
    """A tracking store that cannot be used (one line: the store and the cause)."""

    def __init__(self, uri: str, cause: str):
        super().__init__(f"tracking store {uri}: {cause}")
        self.uri = uri
        self.cause = cause

    def __reduce__(self):
        return (type(self), (self.uri, self.cause))


def cause_of(exc: BaseException) -> str:
    """One line for an exception: its type and message (a TrackingError: its cause),
    without SQLAlchemy's statement and link."""
    if isinstance(exc, TrackingError):
        return exc.cause
    msg = " ".join(str(exc).split()).split(" [SQL: ")[0].split(" (Background on this error")[0]
    return f"{type(exc).__name__}: {msg}"[:MAX_CAUSE_LEN] if msg else type(exc).__name__


@contextmanager
def reported(uri: str) -> Iterator[None]:
    """Any failure of the block as a :class:`TrackingError` of the store ``uri``."""
    try:
        yield
    except TrackingError:
        raise
    except Exception as e:
        raise TrackingError(uri, cause_of(e)) from e


def sqlite_file(uri: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` URI (relative to the working directory
    unless absolute), None for any other store."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///") :].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def open_client(uri: str):
    """An ``MlflowClient`` of the store ``uri``, a new SQLite store made first
    (once across processes, module docstring); a :class:`TrackingError` if
    the store cannot be opened."""
    db = sqlite_file(uri)
    try:
        from mlflow.tracking import MlflowClient

        if db is not None and not store_made(db):
            _make_sqlite_store(db)
        return MlflowClient(tracking_uri=uri)
    except Exception as e:
        advice = broken_store_advice(db) if db is not None else None
        if advice is None:
            raise TrackingError(uri, cause_of(e)) from e
        raise TrackingError(uri, advice) from e


def store_made(db: Path) -> bool:
    """Whether the SQLite store ``db`` is there (an empty file, as ``sqlite3.connect``
    leaves one, is not a store yet)."""
    return db.is_file() and db.stat().st_size > 0


def _make_sqlite_store(db: Path) -> None:
    """Make the store ``db`` unless another process has (module docstring)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    from baselines.dqn.files import atomic_path
    from falcon.locks import lock_beside
    from falcon.tracking import default_artifact_location

    with lock_beside(db):
        if store_made(db):
            return
        with atomic_path(db) as tmp:
            # the default experiment's artifacts next to the store, as FALCON's experiments'
            store = SqlAlchemyStore(
                f"sqlite:///{tmp}", default_artifact_location(f"sqlite:///{db}")
            )
            store.engine.dispose()  # every connection closed: the file is complete


def broken_store_advice(db: Path) -> str | None:
    """What is wrong with a SQLite store that MLflow could not open, and how
    to recover, when a schema migration was interrupted in it (tables left
    by MLflow's batch migrations, or a schema without its version); None
    when it is not such a store."""
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {
                r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            version = (
                _first(con, "SELECT version_num FROM alembic_version")
                if "alembic_version" in tables
                else None
            )
            runs = _first(con, "SELECT COUNT(*) FROM runs") if "runs" in tables else 0
        finally:
            con.close()
    except sqlite3.Error:
        return None
    leftover = sorted(t for t in tables if t.startswith(MIGRATION_TMP_PREFIX))
    if not leftover and (version is not None or not {"experiments", "runs"} <= tables):
        return None
    what = [f"leftover tables {', '.join(leftover)}"] if leftover else []
    what.append(f"schema version {version}" if version else "no schema version")
    state = f"half-migrated by an interrupted schema migration ({'; '.join(what)})"
    if not runs:
        return f"{state}; it holds no runs: delete {db} and run again"
    return (
        f"{state}; it holds {runs} runs: restore {db} from a backup, or move it aside "
        f"to start a new store there"
    )


def _first(con: sqlite3.Connection, sql: str):
    row = con.execute(sql).fetchone()
    return row[0] if row else None


__all__ = [
    "TrackingError",
    "open_client",
    "reported",
    "cause_of",
    "sqlite_file",
    "store_made",
    "broken_store_advice",
]
