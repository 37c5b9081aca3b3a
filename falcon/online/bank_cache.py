"""The meta-model banks FALCON's schedulers read, once per process.

Reading a 729-cell bank takes seconds and every evaluation job builds its
scheduler: :func:`cached_bank` reads a bank file once (again when it
changes). FALCON-N shares the cached bank; FALCON's offline loop updates a
private copy of its parameters (copy on write).
"""

from __future__ import annotations

from pathlib import Path

from envs.errors import ConfigError

BUILD_HINT = "run python -m falcon.train experiment=build_bank first"

#: banks read in this process: resolved path -> ((mtime_ns, size), bank); reading
#: a 729-cell bank takes seconds, and every evaluation job builds its scheduler
_BANK_CACHE: dict[str, tuple[tuple[int, int], object]] = {}


def cached_bank(bank, private: bool = False):
    """A bank object as is, or read from an HDF5 path (relative paths: the
    working directory, then the repository root). A file is read once per
    process (and again when it changes); ``private=True`` returns a copy of
    its parameters that the caller may update (the offline loop; copy on
    write: :class:`metalearning.bank.CopyOnWriteBank`), otherwise the cached
    bank is shared."""
    if bank is None:
        raise ConfigError(
            "bank: not set; python -m falcon.train / falcon.evaluate give FALCON the run's "
            "bank= preset (built when missing), or set agent.bank=PATH"
        )
    if not isinstance(bank, (str, Path)):
        if not all(hasattr(bank, a) for a in ("select", "weights", "grid", "spec", "params")):
            raise ConfigError(
                f"bank: expected a path or a MetaModelBank, got {type(bank).__name__}"
            )
        return bank
    p = Path(bank).expanduser()
    if not p.is_absolute() and not p.exists():
        alt = Path(__file__).resolve().parents[2] / p
        if alt.exists():
            p = alt
    if not p.exists():
        raise ConfigError(f"bank: {bank} not found; {BUILD_HINT}")
    from metalearning.bank import MetaModelBank

    key = str(p.resolve())
    st = p.stat()
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _BANK_CACHE.get(key)
    if hit is None or hit[0] != stamp:
        hit = _BANK_CACHE[key] = (stamp, MetaModelBank.read(p))
    b = hit[1]
    return b.private_copy() if private else b


__all__ = ["cached_bank", "BUILD_HINT"]
