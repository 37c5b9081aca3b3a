"""The train / validation / test split of the shipped trace files (``data/traces/split.yaml``).

Every trace file under ``data/traces/`` that a scenario can load is listed
there once, by its path relative to ``data/traces/``::

    files:
      raca_5g_2020/download_driving/B_2019.12.16_07.22.43.csv:
        split: train          # train | validation | test
        sha256: 82bc3245...   # of the file's bytes (64 lowercase hex digits)
        about: "Raca 5G NSA, operator B, driving, 23.2 Mbit/s mean"

*train* files feed learning and the bank's tasks, *validation* files
selection and tuning, *test* files reporting only (:mod:`envs.traces.guard`
refuses them to anything that learns). A file is identified by its
content: :func:`split_of` hashes the bytes, so a renamed copy of a listed
file has that file's split. :func:`read_split` checks the file's form
(one-line :class:`~envs.errors.ConfigError` naming the key);
:func:`verify` also checks every listed file's SHA-256 against its bytes
(one-line :class:`~envs.errors.TraceError` naming the file).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

from envs.errors import ConfigError, TraceError
from envs.traces.catalog import SPLIT_FILE, resolve_trace_path, traces_dir

#: the splits, in the order they are used (learning, selection, reporting)
SPLITS = ("train", "validation", "test")
#: the keys of one file's entry
ENTRY_KEYS = ("split", "sha256", "about")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class SplitEntry:
    """One listed trace file: ``path`` (relative to ``data/traces/``), its
    ``split``, the ``sha256`` of its bytes and a one-line ``about``."""

    path: str
    split: str
    sha256: str
    about: str


@dataclass(frozen=True)
class TraceSplit:
    """The split file's content: ``entries`` by path, ``by_hash`` by SHA-256."""

    source: Path
    entries: dict[str, SplitEntry]
    by_hash: dict[str, SplitEntry]

    def files(self, split: str) -> list[str]:
        """The paths (relative to ``data/traces/``) of one split, sorted."""
        if split not in SPLITS:
            raise ConfigError(f"split: expected one of {', '.join(SPLITS)}, got {split!r}")
        return sorted(p for p, e in self.entries.items() if e.split == split)

    def entry_of(self, key) -> SplitEntry | None:
        """The entry of ``key`` (a SHA-256 hex string, the bytes of a file,
        or a trace path as :func:`~envs.traces.catalog.resolve_trace_path`
        takes it), found by content; None for an unlisted file."""
        return self.by_hash.get(content_hash(key))


def split_file() -> Path:
    """``data/traces/split.yaml`` (under ``$FALCON_DATA_DIR`` when set)."""
    return traces_dir() / SPLIT_FILE


def sha256_file(path) -> str:
    """SHA-256 (hex) of a file's bytes; remembered while the file's size and
    modification time stay the same."""
    p = Path(path).resolve()
    try:
        st = p.stat()
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror}") from None
    return _sha256_of(str(p), st.st_size, st.st_mtime_ns, st.st_ino)


@lru_cache(maxsize=256)
def _sha256_of(path: str, size: int, mtime_ns: int, ino: int) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def content_hash(key) -> str:
    """The SHA-256 of ``key``: a 64-digit hex string is taken as one, bytes
    are hashed, anything else is a trace path whose file is hashed."""
    if isinstance(key, bytes | bytearray | memoryview):
        return hashlib.sha256(key).hexdigest()
    if isinstance(key, str) and _HEX64.match(key):
        return key
    return sha256_file(resolve_trace_path(key))


def _entry(where: str, rel, raw) -> SplitEntry:
    if (
        not isinstance(rel, str)
        or not rel
        or PurePosixPath(rel).is_absolute()
        or ".." in PurePosixPath(rel).parts
    ):
        raise ConfigError(f"{where}: expected a path relative to data/traces/, got {rel!r}")
    where = f"{where}.{rel}"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping {{split, sha256, about}}, got {raw!r}")
    unknown = sorted(set(raw) - set(ENTRY_KEYS))
    missing = [k for k in ENTRY_KEYS if k not in raw]
    if unknown or missing:
        raise ConfigError(
            f"{where}: unknown key(s) {unknown}, missing key(s) {missing}; expected {list(ENTRY_KEYS)}"
        )
    if raw["split"] not in SPLITS:
        raise ConfigError(
            f"{where}.split: expected one of {', '.join(SPLITS)}, got {raw['split']!r}"
        )
    if not isinstance(raw["sha256"], str) or not _HEX64.match(raw["sha256"]):
        raise ConfigError(
            f"{where}.sha256: expected 64 lowercase hex digits, got {raw['sha256']!r}"
        )
    if (
        not isinstance(raw["about"], str)
        or not raw["about"].strip()
        or "\n" in raw["about"].strip()
    ):
        raise ConfigError(f"{where}.about: expected a one-line description, got {raw['about']!r}")
    return SplitEntry(rel, raw["split"], raw["sha256"], raw["about"].strip())


def read_split(path=None) -> TraceSplit:
    """The split file at ``path`` (default :func:`split_file`), its form
    checked (not the checksums: :func:`verify`); remembered while the file
    is unchanged."""
    p = Path(path) if path is not None else split_file()
    try:
        st = p.stat()
    except OSError as exc:
        raise TraceError(p, f"cannot read the trace split: {exc.strerror}") from None
    return _read_split(str(p.resolve()), st.st_size, st.st_mtime_ns)


def _load_yaml(path: str):
    """The YAML document at ``path``; a key given twice in one mapping is an
    error (a file listed twice would otherwise keep its last entry only)."""
    import yaml

    class _Unique(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
        twice = sorted({str(k) for k in keys if keys.count(k) > 1})
        if twice:
            raise ConfigError(f"{path}: {', '.join(twice)} listed twice")
        return loader.construct_mapping(node, deep=deep)

    _Unique.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(
            Path(path).read_text(), Loader=_Unique
        )  # a SafeLoader: no arbitrary objects
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not a readable YAML file ({type(exc).__name__})") from None


@lru_cache(maxsize=8)
def _read_split(path: str, size: int, mtime_ns: int) -> TraceSplit:
    doc = _load_yaml(path)
    if (
        not isinstance(doc, Mapping)
        or set(doc) != {"files"}
        or not isinstance(doc["files"], Mapping)
    ):
        raise ConfigError(
            f"{path}: expected one key 'files', a mapping of path -> {{split, sha256, about}}"
        )
    entries = {rel: _entry(f"{path}: files", rel, raw) for rel, raw in doc["files"].items()}
    by_hash: dict[str, SplitEntry] = {}
    for e in entries.values():
        other = by_hash.setdefault(e.sha256, e)
        if other.split != e.split:
            raise ConfigError(
                f"{path}: files.{e.path}: the same bytes as {other.path} (split {other.split}) "
                f"but split {e.split}"
            )
    return TraceSplit(Path(path), entries, by_hash)


def verify(path=None) -> TraceSplit:
    """:func:`read_split`, then every listed file's SHA-256 checked against
    its bytes (files resolved under the split file's folder)."""
    split = read_split(path)
    root = split.source.parent
    for e in split.entries.values():
        f = root / e.path
        if not f.is_file():
            raise TraceError(f, f"listed in {split.source.name} (split {e.split}) but missing")
        got = sha256_file(f)
        if got != e.sha256:
            raise TraceError(
                f,
                f"SHA-256 {got[:12]}... does not match {split.source.name} "
                f"({e.sha256[:12]}..., split {e.split}): the file changed",
            )
    return split


def split_of(key, path=None) -> str | None:
    """The split of ``key`` (a trace path, a file's bytes or their SHA-256
    hex), found by content in the split file at ``path`` (default
    :func:`split_file`); None for a file the split does not list."""
    return getattr(read_split(path).entry_of(key), "split", None)


__all__ = [
    "SPLITS",
    "SPLIT_FILE",
    "ENTRY_KEYS",
    "SplitEntry",
    "TraceSplit",
    "split_file",
    "sha256_file",
    "content_hash",
    "read_split",
    "verify",
    "split_of",
]
