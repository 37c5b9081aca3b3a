"""The meta-model bank: one Q-network per cell of the condition grid.

In memory a bank is the grid, the network architecture and one flat
parameter row per cell (``params [n_cells, P]`` float32, in the layout of
:meth:`baselines.dqn.learner.BatchedDQN.flat_weights`: ``W0, b0, W1, ...``
each flattened, ``W`` ``[in, out]``), so a batched learner loads or stores
the whole bank with one copy.

On disk it is a falcon-qnet HDF5 model file (:mod:`baselines.dqn.export`,
``docs/reference/formats/model_formats.md``, section "Meta-model bank file") with one model
per cell, named :meth:`ConditionGrid.name` (``cell_000`` ..), so every cell
is also an ordinary exportable model (``python -m falcon.export
model=bank.h5 names=[cell_000]``). The bank adds:

* file attributes ``bank_format = "falcon-bank"``, ``bank_format_version``,
  ``grid`` (JSON of :meth:`ConditionGrid.to_dict`), ``bank_meta_keys`` and
  ``bank_meta_json`` (which attributes hold the ``meta`` dict, and which of
  them are JSON), and one attribute per ``meta`` entry (scalars as they are,
  anything else as JSON: e.g. ``hyperparameters``, ``meta_iterations``,
  ``seed``, ``build_time_s``);
* per cell group: ``cell`` (its index), ``path_cells`` and ``ranges`` (JSON,
  per path ``{"loss": [lo, hi], "rtt_ms": .., "dev_ratio": ..}``, ``null`` for
  an open upper end), and ``meta_iterations`` when ``meta`` holds one count
  per cell.

:meth:`MetaModelBank.read` validates all of it; any mismatch or damage is a
one-line :class:`~baselines.dqn.files.ModelFileError`.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from baselines.dqn.export import ModelRecord, read_hdf5, write_hdf5
from baselines.dqn.files import ModelFileError
from baselines.dqn.network import NumpyQNet, QNetSpec
from envs.errors import ConfigError, FalconInputError
from envs.mdp import (
    COMPLETION,
    COMPLETION_UNIT,
    COMPLETION_UNITS,
    PACKET_RATE,
    n_inputs,
    reward_of_inputs,
)
from metalearning.grid import ConditionGrid, PathCondition

BANK_FORMAT = "falcon-bank"
BANK_FORMAT_VERSION = 1
#: file attributes written by the model file or the bank itself (not usable as ``meta`` keys)
RESERVED_ATTRS = frozenset(
    {
        "format",
        "format_version",
        "framework_version",
        "created",
        "n_models",
        "model_names",
        "bank_format",
        "bank_format_version",
        "grid",
        "bank_meta_keys",
        "bank_meta_json",
    }
)


def layer_shapes(spec: QNetSpec) -> list[tuple[int, ...]]:
    """Shapes of ``[W0, b0, W1, ...]`` (the order of a flat parameter row)."""
    out: list[tuple[int, ...]] = []
    for i, o in spec.layer_sizes:
        out += [(i, o), (o,)]
    return out


def split_row(row: np.ndarray, spec: QNetSpec) -> list[np.ndarray]:
    """``[W0, b0, ...]`` views into one flat parameter row (``BatchedDQN.split_flat``)."""
    out, off = [], 0
    for shape in layer_shapes(spec):
        n = int(np.prod(shape))
        out.append(row[off : off + n].reshape(shape))
        off += n
    return out


def flatten_weights(weights: Sequence[np.ndarray], spec: QNetSpec) -> np.ndarray:
    """One flat float32 row ``[P]`` of ``[W0, b0, ...]`` (inverse of :func:`split_row`)."""
    shapes = layer_shapes(spec)
    if len(weights) != len(shapes):
        raise ConfigError(f"expected {len(shapes)} weight arrays, got {len(weights)}")
    for w, s in zip(weights, shapes):
        if tuple(np.shape(w)) != s:
            raise ConfigError(f"weight shape {tuple(np.shape(w))} does not match {s}")
    return np.concatenate([np.asarray(w, np.float32).reshape(-1) for w in weights])


def _ranges_json(ranges: list[dict]) -> str:
    return json.dumps(
        [{d: [lo, None if math.isinf(hi) else hi] for d, (lo, hi) in r.items()} for r in ranges]
    )


def _json_default(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, Path):
        return str(v)
    raise TypeError(f"{type(v).__name__} is not JSON-able")


def _per_cell_counts(meta: Mapping, n_cells: int) -> list[int] | None:
    v = meta.get("meta_iterations")
    if v is None or isinstance(v, str | int | float | np.generic):
        return None
    counts = np.asarray(v)
    if counts.shape != (n_cells,) or counts.dtype.kind not in "iu":
        raise ConfigError(
            f"bank meta_iterations: expected one integer per cell ({n_cells}), got an array of "
            f"shape {counts.shape} and dtype {counts.dtype}"
        )
    return [int(x) for x in counts]


class MetaModelBank:
    """One Q-network per grid cell (module docstring).

    Args:
        grid: the :class:`ConditionGrid`.
        spec: the architecture of every cell's network (``n_actions`` = paths).
        params: ``[grid.n_cells, spec.n_parameters]`` parameter rows (float32;
            kept without a copy when already contiguous float32).
        meta: free-form JSON-able metadata written with the bank, e.g.
            ``hyperparameters`` (dict), ``meta_iterations`` (per cell),
            ``seed``, ``build_time_s``. Read back as JSON types (tuples and
            arrays become lists).
    """

    def __init__(
        self, grid: ConditionGrid, spec: QNetSpec, params: np.ndarray, meta: dict | None = None
    ):
        if not isinstance(grid, ConditionGrid):
            raise ConfigError(f"bank grid: expected a ConditionGrid, got {type(grid).__name__}")
        if not isinstance(spec, QNetSpec):
            raise ConfigError(f"bank spec: expected a QNetSpec, got {type(spec).__name__}")
        if spec.n_actions != grid.n_paths:
            raise ConfigError(
                f"bank: the networks have {spec.n_actions} actions but the grid {grid.n_paths} paths"
            )
        if reward_of_inputs(spec.n_inputs, spec.n_actions) is None:
            raise ConfigError(
                f"bank: networks of {spec.n_inputs} inputs for {spec.n_actions} paths match no MDP "
                f"(paper: {n_inputs(spec.n_actions, PACKET_RATE)}, completion: "
                f"{n_inputs(spec.n_actions, COMPLETION)}; envs/mdp.py)"
            )
        params = np.ascontiguousarray(params, dtype=np.float32)
        want = (grid.n_cells, spec.n_parameters)
        if params.shape != want:
            raise ConfigError(
                f"bank params: expected shape {want} (cells, parameters), got {params.shape}"
            )
        bad = ~np.isfinite(params).all(axis=1)
        if bad.any():
            raise ConfigError(
                f"bank params: cell {int(np.argmax(bad))} holds non-finite values "
                f"({int(bad.sum())} cells in all)"
            )
        meta = dict(meta or {})
        for k in meta:
            if not isinstance(k, str) or not k or "/" in k or k in RESERVED_ATTRS:
                raise ConfigError(
                    f"bank meta: key {k!r} is not usable (reserved: {sorted(RESERVED_ATTRS)})"
                )
        _per_cell_counts(meta, grid.n_cells)
        self.grid = grid
        self.spec = spec
        self.params = params
        self.meta = meta

    @classmethod
    def initial(
        cls, grid: ConditionGrid, spec: QNetSpec, seed: int = 0, meta: dict | None = None
    ) -> MetaModelBank:
        """A bank of freshly initialised networks: cell ``c`` holds model ``c``
        of :func:`baselines.dqn.network.init_params` ``(spec, n_cells, seed)``
        (what ``BatchedDQN(spec, n_cells, seed=seed)`` starts from)."""
        from baselines.dqn.network import init_params

        stacked = init_params(spec, grid.n_cells, seed)
        params = np.concatenate([p.reshape(grid.n_cells, -1).numpy() for p in stacked], axis=1)
        return cls(grid, spec, params, meta)

    # ---------------------------------------------------------- access
    @property
    def reward(self) -> str:
        """The MDP the meta-models were built on, as its reward kind
        (``"completion"`` or ``"packet_rate"``, :mod:`envs.mdp`): told by
        their input width, which differs between the two MDPs."""
        return reward_of_inputs(self.spec.n_inputs, self.spec.n_actions)

    @property
    def reward_unit(self) -> str:
        """The unit of the completion reward the meta-models learned
        (:data:`envs.mdp.COMPLETION_UNITS`): the build settings' ``reptile:
        reward_unit``; ``"time"`` for a bank whose settings predate it."""
        settings = self.meta.get("settings")
        reptile = settings.get("reptile") if isinstance(settings, dict) else None
        unit = reptile.get("reward_unit", "time") if isinstance(reptile, dict) else COMPLETION_UNIT
        if unit not in COMPLETION_UNITS:
            raise ConfigError(
                f"bank: its build settings name an unknown reward_unit {unit!r} "
                f"(known: {list(COMPLETION_UNITS)})"
            )
        return unit

    @property
    def n_cells(self) -> int:
        return self.grid.n_cells

    def __len__(self) -> int:
        return self.grid.n_cells

    def row(self, cell: int) -> np.ndarray:
        """``cell``'s flat parameters ``[P]`` (a view: do not write into it, use :meth:`set_row`)."""
        return self.params[self.grid.check_cell(cell)]

    def set_row(self, cell: int, row: np.ndarray) -> None:
        """Replace ``cell``'s flat parameters."""
        self.params[self.grid.check_cell(cell)] = row

    def private_copy(self) -> CopyOnWriteBank:
        """A bank that reads this one's parameters until it writes a cell
        (:class:`CopyOnWriteBank`): what an online learner that updates its
        bank (FALCON's offline loop) holds instead of a full copy."""
        return CopyOnWriteBank(self)

    def weights(self, cell: int) -> list[np.ndarray]:
        """Copies of ``cell``'s ``[W0, b0, ...]`` (``BatchedDQN.split_flat`` layout)."""
        return [w.copy() for w in split_row(self.row(cell), self.spec)]

    def qnet(self, cell: int) -> NumpyQNet:
        """A NumPy Q-network of ``cell``'s model (independent of later changes to :attr:`params`)."""
        return NumpyQNet(self.weights(cell), self.spec)

    def select(self, conds: Sequence[PathCondition]) -> int:
        """The cell covering the paths' conditions (:meth:`ConditionGrid.cell_index`)."""
        return self.grid.cell_index(conds)

    def records(self) -> list[ModelRecord]:
        """The cells as :class:`ModelRecord` (what :meth:`write` stores)."""
        counts = _per_cell_counts(self.meta, self.n_cells)
        out = []
        for c, name in enumerate(self.grid.names()):
            attrs = {
                "cell": c,
                "path_cells": list(self.grid.path_cells_of(c)),
                "ranges": _ranges_json(self.grid.ranges(c)),
            }
            if counts is not None:
                attrs["meta_iterations"] = counts[c]
            out.append(ModelRecord(name, self.spec, split_row(self.row(c), self.spec), attrs))
        return out

    # ---------------------------------------------------------- files
    def file_attrs(self) -> dict:
        """The bank's file attributes (module docstring)."""
        attrs: dict = {
            "bank_format": BANK_FORMAT,
            "bank_format_version": BANK_FORMAT_VERSION,
            "grid": json.dumps(self.grid.to_dict()),
        }
        keys, as_json = [], []
        for k, v in self.meta.items():
            keys.append(k)
            if isinstance(v, bool | np.bool_):
                attrs[k] = json.dumps(bool(v))
                as_json.append(k)
            elif isinstance(v, str | int | float | np.integer | np.floating):
                attrs[k] = v
            else:
                try:
                    attrs[k] = json.dumps(v, default=_json_default)
                except (TypeError, ValueError) as e:
                    raise ConfigError(f"bank meta {k!r}: not JSON-able ({e})") from None
                as_json.append(k)
        attrs["bank_meta_keys"] = json.dumps(keys)
        attrs["bank_meta_json"] = json.dumps(as_json)
        return attrs

    def write(self, path) -> Path:
        """Write the bank to ``path`` (HDF5, atomic: a failed write leaves no file)."""
        path = Path(path)
        records, attrs = self.records(), self.file_attrs()
        try:
            return write_hdf5(path, records, attrs)
        except FalconInputError:
            raise
        except (OSError, ValueError, TypeError, RuntimeError) as e:
            msg = " ".join(str(e).split())[:200]
            raise ModelFileError(
                f"meta-model bank {path}: cannot write it ({type(e).__name__}: {msg})"
            ) from None

    @classmethod
    def read(
        cls, path, grid: ConditionGrid | None = None, spec: QNetSpec | None = None
    ) -> MetaModelBank:
        """Read and validate a bank file; ``grid`` / ``spec``, when given, must
        equal the file's. Raises a one-line :class:`ModelFileError`."""
        path = Path(path)
        try:
            file_grid, meta, listed = _read_bank_header(path)
            where = f"meta-model bank {path}"
            if grid is not None and grid != file_grid:
                raise ModelFileError(
                    f"{where}: its grid {file_grid!r} is not the expected {grid!r}"
                )
            _check_names(where, listed, file_grid)  # before the seconds the models take
            records = read_hdf5(path)
            return cls._from_records(path, records, file_grid, spec, meta)
        except FalconInputError as e:
            if isinstance(e, ModelFileError):
                raise
            raise ModelFileError(f"meta-model bank {path}: {e}") from None
        except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
            msg = " ".join(str(e).split())[:200]
            raise ModelFileError(
                f"meta-model bank {path}: unreadable ({type(e).__name__}: {msg})"
            ) from None

    @classmethod
    def _from_records(
        cls,
        path,
        records: list[ModelRecord],
        grid: ConditionGrid,
        spec: QNetSpec | None,
        meta: dict,
    ) -> MetaModelBank:
        where = f"meta-model bank {path}"
        names = _check_names(where, [r.name for r in records], grid)
        by_name = {r.name: r for r in records}
        first = by_name[names[0]].spec
        if spec is not None and spec != first:
            raise ModelFileError(
                f"{where}: its networks are {_spec_str(first)}, expected {_spec_str(spec)}"
            )
        if first.n_actions != grid.n_paths:
            raise ModelFileError(
                f"{where}: the networks have {first.n_actions} actions for a "
                f"{grid.n_paths}-path grid"
            )
        params = np.empty((grid.n_cells, first.n_parameters), np.float32)
        for c, name in enumerate(names):
            rec = by_name[name]
            if rec.spec != first:
                raise ModelFileError(
                    f"{where}: {name} is {_spec_str(rec.spec)}, unlike {names[0]} "
                    f"({_spec_str(first)})"
                )
            cell = _py(rec.attrs.get("cell"))
            if isinstance(cell, bool) or not isinstance(cell, int | np.integer) or int(cell) != c:
                raise ModelFileError(f"{where}: {name} has cell attribute {cell!r}, expected {c}")
            ranges = rec.attrs.get("ranges")
            if not isinstance(ranges, str) or json.loads(ranges) != json.loads(
                _ranges_json(grid.ranges(c))
            ):
                raise ModelFileError(
                    f"{where}: {name} has ranges {ranges!r}, which are not the grid's "
                    f"{_ranges_json(grid.ranges(c))}"
                )
            params[c] = flatten_weights(rec.weights, first)
        return cls(grid, first, params, meta)


class CopyOnWriteBank(MetaModelBank):
    """A private bank over a shared one: reads the shared parameters until
    :meth:`set_row` writes a cell, which then lives in this bank only. The
    shared bank is never modified. FALCON's offline loop touches a few cells
    of 729; a full copy per scheduler held 27 MB of a quick bank
    (``experiment=overhead``), this holds the touched rows."""

    def __init__(self, base: MetaModelBank):
        if isinstance(base, CopyOnWriteBank):
            rows = {c: r.copy() for c, r in base._rows.items()}
            base = base._base
        else:
            rows = {}
        self.grid = base.grid
        self.spec = base.spec
        self.meta = copy.deepcopy(base.meta)
        self._base = base
        self._rows: dict[int, np.ndarray] = rows

    @property
    def params(self) -> np.ndarray:
        """A full ``[cells, P]`` array of the current parameters (a copy: write with :meth:`set_row`)."""
        out = self._base.params.copy()
        for c, r in self._rows.items():
            out[c] = r
        return out

    @property
    def written_cells(self) -> list[int]:
        """The cells this bank holds its own parameters for."""
        return sorted(self._rows)

    def row(self, cell: int) -> np.ndarray:
        c = self.grid.check_cell(cell)
        r = self._rows.get(c)
        return self._base.params[c] if r is None else r

    def set_row(self, cell: int, row: np.ndarray) -> None:
        row = np.asarray(row, np.float32)
        if row.shape != (self.spec.n_parameters,) or not np.isfinite(row).all():
            raise ConfigError(
                f"bank row: expected {self.spec.n_parameters} finite parameters, got {row.shape}"
            )
        self._rows[self.grid.check_cell(cell)] = row.copy()


def _check_names(where: str, got: list[str], grid: ConditionGrid) -> list[str]:
    """Every cell's name exactly once; returns the grid's names."""
    names = grid.names()
    if len(got) != len(set(got)) or sorted(got) != names:
        missing = sorted(set(names) - set(got))
        extra = sorted(set(got) - set(names))
        raise ModelFileError(
            f"{where}: holds {len(got)} models for {grid.n_cells} cells (missing "
            f"{_few(missing)}, unexpected {_few(extra)}"
            f"{', duplicates' if len(got) != len(set(got)) else ''})"
        )
    return names


def _few(items: list[str], n: int = 3) -> str:
    if not items:
        return "none"
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def _spec_str(spec: QNetSpec) -> str:
    s = f"{spec.n_inputs}->{'x'.join(map(str, spec.hidden))}->{spec.n_actions} ({spec.activation})"
    return s + (" with input normalisation" if spec.normalises else "")


def _py(v):
    """NumPy scalars (what h5py returns) as Python scalars, for checks and messages."""
    return v.item() if isinstance(v, np.generic) else v


def _str(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _read_bank_header(path: Path) -> tuple[ConditionGrid, dict, list[str]]:
    """The grid, the meta and the listed model names of a bank file (raises
    ModelFileError if it is none)."""
    import h5py

    from baselines.dqn.export import FORMAT

    where = f"meta-model bank {path}"
    if not path.is_file():
        raise ModelFileError(f"{where}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ModelFileError(
            f"{where}: not a readable HDF5 file ({str(e).splitlines()[0]})"
        ) from None
    with f:
        attrs = f.attrs
        fmt = _str(attrs.get("format", ""))
        if fmt != FORMAT:
            raise ModelFileError(
                f"{where}: not a FALCON model file (format {fmt!r}, expected {FORMAT!r})"
            )
        tag = _str(attrs.get("bank_format", ""))
        if tag != BANK_FORMAT:
            raise ModelFileError(
                f"{where}: a model file but not a meta-model bank (bank_format {tag!r}, "
                f"expected {BANK_FORMAT!r})"
            )
        version = _py(attrs.get("bank_format_version"))
        if (
            not isinstance(version, int | np.integer)
            or not 1 <= int(version) <= BANK_FORMAT_VERSION
        ):
            raise ModelFileError(
                f"{where}: bank format version {version!r} is not supported "
                f"(this reader: 1..{BANK_FORMAT_VERSION})"
            )
        try:
            grid = ConditionGrid.from_dict(json.loads(_str(attrs["grid"])))
        except (KeyError, json.JSONDecodeError, ConfigError) as e:
            raise ModelFileError(f"{where}: unusable grid attribute ({e})") from None
        try:
            keys = json.loads(_str(attrs.get("bank_meta_keys", "[]")))
            as_json = set(json.loads(_str(attrs.get("bank_meta_json", "[]"))))
        except json.JSONDecodeError as e:
            raise ModelFileError(f"{where}: unusable bank_meta_keys/bank_meta_json ({e})") from None
        meta = {}
        for k in keys:
            if k not in attrs:
                raise ModelFileError(f"{where}: meta attribute {k!r} is listed but missing")
            v = attrs[k]
            if k in as_json:
                try:
                    meta[k] = json.loads(_str(v))
                except json.JSONDecodeError as e:
                    raise ModelFileError(
                        f"{where}: meta attribute {k!r} is not valid JSON ({e})"
                    ) from None
            else:
                meta[k] = _str(v) if isinstance(v, bytes | str) else _py(v)
        listed = [_str(x) for x in attrs.get("model_names", [])]
    return grid, meta, listed


def read_bank_header(path) -> tuple[ConditionGrid, dict]:
    """The grid and the metadata of a bank file without reading its models
    (milliseconds, against seconds for :meth:`MetaModelBank.read`): e.g. to
    compare a build fingerprint. Raises a one-line :class:`ModelFileError`."""
    path = Path(path)
    try:
        grid, meta, _ = _read_bank_header(path)
        return grid, meta
    except ModelFileError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
        msg = " ".join(str(e).split())[:200]
        raise ModelFileError(
            f"meta-model bank {path}: unreadable ({type(e).__name__}: {msg})"
        ) from None


def load_bank(
    path, grid: ConditionGrid | None = None, spec: QNetSpec | None = None
) -> MetaModelBank:
    """:meth:`MetaModelBank.read`."""
    return MetaModelBank.read(path, grid=grid, spec=spec)


__all__ = [
    "MetaModelBank",
    "load_bank",
    "read_bank_header",
    "BANK_FORMAT",
    "BANK_FORMAT_VERSION",
    "split_row",
    "flatten_weights",
    "layer_shapes",
]
