"""The network-condition grid: which meta-model covers which path conditions.

FALCON (Wu et al., "FALCON: Fast and Accurate Multipath Scheduling using
Offline and Online Learning", arXiv:2201.08969, 2022, Sec. IV-A) splits each path's
conditions along three dimensions, each into three ranges:

=============  ==========================================  ======================
dimension      paper ranges                                 unit in code
=============  ==========================================  ======================
``loss``       [0, 1) %, [1, 5) %, [5, 100] %               probability (0..1)
``rtt_ms``     [0, 50), [50, 200), [200, inf) ms            milliseconds
``dev_ratio``  [0, 40), [40, 80), [80, inf) % of mean RTT   ratio std / mean (0..)
=============  ==========================================  ======================

i.e. 27 cells per path and ``27 ** n_paths`` cells (729 for two paths), one
meta-model each. Ranges are half-open ``[lo, hi)``, except that the top loss
range includes 1.0 and the open upper ranges take every value above their
lower bound.

Sub-ranges (the paper's Fig. 9): ``subranges=n`` (or ``(n_loss, n_rtt,
n_dev)``) splits every range of a dimension into ``n`` equal parts. An open
(or, for loss, very wide) top range is split over ``[lo, cap)`` instead, the
sampling cap below, and its last part stays open: with ``n = 2`` the RTT
ranges are [0, 25), [25, 50), [50, 125), [125, 200), [200, 400), [400, inf)
ms, and the loss ranges end in [0.05, 0.125), [0.125, 1.0].

Tasks for building a cell's meta-model are drawn uniformly inside the cell;
the open upper ranges are capped for sampling (our decision): loss
below 0.20, mean RTT below 600 ms, RTT std below 1.5 x the mean; the mean
RTT is at least 1 ms (the emulator needs a positive delay). A task's
bandwidths come from the Table I links (:data:`envs.scenario.LINKS`: 30,
140 and 1 100 Mbit/s, the paper's tasks) or, with ``bandwidth_mbps=(lo,
hi)`` (the bank presets: 1 to 1 200 Mbit/s), log-uniformly from a range.
The grid has no bandwidth dimension, so every cell's meta-model schedules
paths of any rate; trained on three rates only, FALCON's bank failed on the
others (learnability suite, quick bank, greedy FALCON: 1.105 with the
links, 1.051 with the range; 10 Mbit/s + 100 Mbit/s at 40 ms: 1.40 -> 1.13,
two 20 Mbit/s paths: 1.25 -> 1.02).

Indices are mixed-radix: per path ``path_cell = (i_loss * n_rtt_ranges +
i_rtt) * n_dev_ranges + i_dev``; a cell combines the path cells with path 0
most significant (``cell = path_cell_0 * n_path_cells + path_cell_1`` for two
paths), and is named ``cell_<index>`` zero-padded to the width of the
largest index (``cell_000`` .. ``cell_728``).
"""

from __future__ import annotations

import bisect
import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from envs.errors import ConfigError
from envs.scenario import LINKS, normalise_scenario
from metalearning.checks import plain

#: the three dimensions of a path's conditions, most significant first
DIMENSIONS = ("loss", "rtt_ms", "dev_ratio")
#: the paper's range edges per dimension (the last edge is the top range's upper end)
PAPER_EDGES: dict[str, tuple[float, ...]] = {
    "loss": (0.0, 0.01, 0.05, 1.0),
    "rtt_ms": (0.0, 50.0, 200.0, math.inf),
    "dev_ratio": (0.0, 0.4, 0.8, math.inf),
}
#: sampling caps of the top ranges (spec decision): loss 20 %, RTT 600 ms, std 150 % of the mean
DEFAULT_CAPS: dict[str, float] = {"loss": 0.20, "rtt_ms": 600.0, "dev_ratio": 1.5}
#: smallest sampled mean RTT [ms]
MIN_RTT_MS = 1.0
DEFAULT_LINKS = ("4g", "5g", "wlan")
GRID_FORMAT = "falcon-condition-grid"
GRID_VERSION = 1


@dataclass(frozen=True)
class PathCondition:
    """One path's network conditions.

    Attributes:
        loss: packet loss probability (0..1).
        rtt_ms: mean round-trip time [ms].
        rtt_std_ms: standard deviation of the RTT [ms].
    """

    loss: float
    rtt_ms: float
    rtt_std_ms: float

    @property
    def dev_ratio(self) -> float:
        """RTT standard deviation / mean RTT (0 when both are 0, inf for a
        deviation around a zero mean)."""
        if self.rtt_ms == 0:
            return 0.0 if self.rtt_std_ms == 0 else math.inf
        return self.rtt_std_ms / self.rtt_ms

    def as_dict(self) -> dict[str, float]:
        return {
            "loss": float(self.loss),
            "rtt_ms": float(self.rtt_ms),
            "rtt_std_ms": float(self.rtt_std_ms),
        }


def _positive_int(v, key: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or int(v) < 1:
        raise ConfigError(f"{key}: expected a positive integer, got {v!r}")
    return int(v)


def _split_edges(base: Sequence[float], n: int, cap: float) -> tuple[float, ...]:
    """Edges of ``base``'s ranges each split into ``n`` parts; the top range
    is split over ``[lo, cap)`` and keeps its upper end (module docstring)."""
    out = []
    last = len(base) - 2
    for k in range(len(base) - 1):
        lo, hi = base[k], (cap if k == last else base[k + 1])
        # 12 significant digits: 0.6 rather than 0.6000000000000001 in files and messages
        out += [float(f"{lo + (hi - lo) * j / n:.12g}") for j in range(n)]
    return (*out, base[-1])


def _bandwidth_range(v) -> tuple[float, float] | None:
    if v is None:
        return None
    try:
        lo, hi = (float(x) for x in v)
    except (TypeError, ValueError):
        raise ConfigError(
            f"grid.bandwidth_mbps: expected [lo, hi] in Mbit/s or null, got {v!r}"
        ) from None
    if not (0.0 < lo <= hi < math.inf):
        raise ConfigError(f"grid.bandwidth_mbps: need 0 < lo <= hi < inf [Mbit/s], got {v!r}")
    return lo, hi


def _json_float(x: float):
    return None if math.isinf(x) else float(x)


class ConditionGrid:
    """The grid of path conditions (module docstring).

    Args:
        n_paths: number of paths (the cells are the product of the per-path cells).
        subranges: parts per paper range, one int for every dimension or
            ``(n_loss, n_rtt, n_dev)``.
        caps: sampling caps of the top ranges, ``{"loss", "rtt_ms",
            "dev_ratio"}`` (missing keys: :data:`DEFAULT_CAPS`).
        links: Table I link presets a task's paths draw their bandwidth from.
        bandwidth_mbps: ``(lo, hi)`` [Mbit/s]: draw every task path's
            bandwidth log-uniformly in this range instead of from ``links``
            (None: the links, the paper's tasks).
    """

    def __init__(
        self,
        n_paths: int = 2,
        subranges: int | Sequence[int] = 1,
        caps: Mapping[str, float] | None = None,
        links: Sequence[str] = DEFAULT_LINKS,
        bandwidth_mbps: Sequence[float] | None = None,
    ):
        self.n_paths = _positive_int(n_paths, "grid.n_paths")
        if isinstance(subranges, int | np.integer) and not isinstance(subranges, bool):
            sub = (_positive_int(subranges, "grid.subranges"),) * 3
        elif (
            isinstance(subranges, Sequence)
            and not isinstance(subranges, str)
            and len(subranges) == 3
        ):
            sub = tuple(_positive_int(v, f"grid.subranges[{i}]") for i, v in enumerate(subranges))
        else:
            raise ConfigError(
                f"grid.subranges: expected a positive integer or three of them "
                f"(loss, rtt, dev), got {subranges!r}"
            )
        self.subranges: tuple[int, int, int] = sub
        if caps is not None and not isinstance(caps, Mapping):
            raise ConfigError(f"grid.caps: expected a mapping of {list(DIMENSIONS)}, got {caps!r}")
        given = dict(caps or {})
        unknown = set(given) - set(DIMENSIONS)
        if unknown:
            raise ConfigError(
                f"grid.caps: unknown key(s) {sorted(unknown)}; known: {list(DIMENSIONS)}"
            )
        self.caps: dict[str, float] = {}
        for dim in DIMENSIONS:
            v = given.get(dim, DEFAULT_CAPS[dim])
            try:
                cap = float(v)
            except (TypeError, ValueError):
                raise ConfigError(f"grid.caps.{dim}: expected a number, got {v!r}") from None
            top_lo = PAPER_EDGES[dim][-2]
            hi = 1.0 if dim == "loss" else math.inf
            if not (top_lo < cap < hi):
                raise ConfigError(
                    f"grid.caps.{dim}: {v!r} must lie in ({top_lo}, {hi}) "
                    f"(above the top range's lower bound{', below 1' if dim == 'loss' else ''})"
                )
            self.caps[dim] = cap
        if isinstance(links, str) or not isinstance(links, Sequence) or not links:
            raise ConfigError(
                f"grid.links: expected a non-empty list of link presets, got {links!r}"
            )
        bad = [x for x in links if str(x).lower() not in LINKS]
        if bad:
            raise ConfigError(f"grid.links: unknown link(s) {bad}; known: {sorted(LINKS)}")
        self.links: tuple[str, ...] = tuple(str(x).lower() for x in links)
        self.bandwidth_mbps: tuple[float, float] | None = _bandwidth_range(bandwidth_mbps)
        self._edges = {
            dim: _split_edges(PAPER_EDGES[dim], n, self.caps[dim])
            for dim, n in zip(DIMENSIONS, self.subranges)
        }
        self._inner = {dim: e[1:-1] for dim, e in self._edges.items()}
        if self._edges["rtt_ms"][1] <= MIN_RTT_MS:
            raise ConfigError(
                f"grid.subranges: {self.subranges[1]} RTT sub-ranges make the lowest "
                f"[0, {self._edges['rtt_ms'][1]:g}) ms, below the {MIN_RTT_MS:g} ms minimum RTT"
            )
        #: ranges per dimension (3 x sub-ranges each)
        self.n_ranges: tuple[int, int, int] = tuple(3 * n for n in self.subranges)
        self.n_path_cells = int(np.prod(self.n_ranges))
        self.n_cells = self.n_path_cells**self.n_paths
        self._width = len(str(self.n_cells - 1))

    # ---------------------------------------------------------- structure
    def edges(self, dim: str) -> tuple[float, ...]:
        """Range edges of a dimension, lowest first; the last is the top
        range's upper end (``inf``, or 1.0 for loss)."""
        if dim not in self._edges:
            raise ConfigError(f"grid: unknown dimension {dim!r}; known: {list(DIMENSIONS)}")
        return self._edges[dim]

    def check_cell(self, cell) -> int:
        """``cell`` as an int, or a :class:`ConfigError` if it is no cell index of this grid."""
        if (
            isinstance(cell, bool)
            or not isinstance(cell, int | np.integer)
            or not 0 <= int(cell) < self.n_cells
        ):
            raise ConfigError(f"cell: expected an integer in [0, {self.n_cells}), got {cell!r}")
        return int(cell)

    def path_cells_of(self, cell: int) -> tuple[int, ...]:
        """The per-path cells of ``cell``, path 0 first."""
        c = self.check_cell(cell)
        out = []
        for _ in range(self.n_paths):
            c, r = divmod(c, self.n_path_cells)
            out.append(r)
        return tuple(reversed(out))

    def cell_of_path_cells(self, path_cells: Sequence[int]) -> int:
        """Inverse of :meth:`path_cells_of`."""
        if len(path_cells) != self.n_paths:
            raise ConfigError(f"expected {self.n_paths} path cells, got {len(path_cells)}")
        cell = 0
        for pc in path_cells:
            cell = cell * self.n_path_cells + self._check_path_cell(pc)
        return cell

    def _check_path_cell(self, pc) -> int:
        if (
            isinstance(pc, bool)
            or not isinstance(pc, int | np.integer)
            or not 0 <= int(pc) < self.n_path_cells
        ):
            raise ConfigError(
                f"path cell: expected an integer in [0, {self.n_path_cells}), got {pc!r}"
            )
        return int(pc)

    def range_indices(self, path_cell: int) -> tuple[int, int, int]:
        """``(i_loss, i_rtt, i_dev)`` of a path cell."""
        _, n_rtt, n_dev = self.n_ranges
        rest, i_dev = divmod(self._check_path_cell(path_cell), n_dev)
        i_loss, i_rtt = divmod(rest, n_rtt)
        return i_loss, i_rtt, i_dev

    def path_ranges(self, path_cell: int) -> dict[str, tuple[float, float]]:
        """``{"loss": (lo, hi), "rtt_ms": ..., "dev_ratio": ...}`` of a path cell (``hi`` may be inf)."""
        idx = self.range_indices(path_cell)
        return {
            dim: (self._edges[dim][i], self._edges[dim][i + 1]) for dim, i in zip(DIMENSIONS, idx)
        }

    def ranges(self, cell: int) -> list[dict[str, tuple[float, float]]]:
        """Per path, the ranges of ``cell`` (see :meth:`path_ranges`)."""
        return [self.path_ranges(pc) for pc in self.path_cells_of(cell)]

    def name(self, cell: int) -> str:
        """``cell_<index>``, zero-padded to the width of ``n_cells - 1``."""
        return f"cell_{self.check_cell(cell):0{self._width}d}"

    def names(self) -> list[str]:
        return [f"cell_{c:0{self._width}d}" for c in range(self.n_cells)]

    # ---------------------------------------------------------- lookup
    def path_cell(self, cond: PathCondition) -> int:
        """The path cell covering one path's conditions. Values above a cap
        map into the top range; a negative or NaN value, a loss above 1 or an
        infinite RTT raise :class:`ConfigError`."""
        loss, rtt, std = (float(getattr(cond, k)) for k in ("loss", "rtt_ms", "rtt_std_ms"))
        if not 0.0 <= loss <= 1.0:
            raise ConfigError(f"path condition: loss {cond.loss!r} is not a probability in [0, 1]")
        for key, v in (("rtt_ms", rtt), ("rtt_std_ms", std)):
            if not 0.0 <= v < math.inf:
                raise ConfigError(
                    f"path condition: {key} {getattr(cond, key)!r} must be finite and >= 0"
                )
        dev = PathCondition(loss, rtt, std).dev_ratio
        i_loss, i_rtt, i_dev = (
            bisect.bisect_right(self._inner[dim], v) for dim, v in zip(DIMENSIONS, (loss, rtt, dev))
        )
        _, n_rtt, n_dev = self.n_ranges
        return (i_loss * n_rtt + i_rtt) * n_dev + i_dev

    def cell_index(self, conds: Sequence[PathCondition]) -> int:
        """The cell covering every path's conditions (path 0 most significant)."""
        if isinstance(conds, PathCondition) or len(conds) != self.n_paths:
            got = 1 if isinstance(conds, PathCondition) else len(conds)
            raise ConfigError(f"grid: expected conditions of {self.n_paths} paths, got {got}")
        cell = 0
        for cond in conds:
            cell = cell * self.n_path_cells + self.path_cell(cond)
        return cell

    # ---------------------------------------------------------- sampling
    def sample_bounds(self, path_cell: int) -> dict[str, tuple[float, float]]:
        """Where conditions of a path cell are drawn: its ranges with the top
        ones capped and the RTT at least :data:`MIN_RTT_MS` (``[lo, hi)``)."""
        out = {}
        for dim, (lo, hi) in self.path_ranges(path_cell).items():
            hi = min(hi, self.caps[dim])
            if dim == "rtt_ms":
                lo = max(lo, MIN_RTT_MS)
            out[dim] = (lo, hi)
        return out

    def sample_conditions(self, cell: int, rng: np.random.Generator) -> list[PathCondition]:
        """Conditions drawn uniformly inside ``cell`` (within the sampling
        bounds), one per path; ``rtt_std_ms = dev_ratio * rtt_ms``. Uses
        ``rng.random((n_paths, 3))`` once, so it is deterministic for an rng state."""
        pcs = self.path_cells_of(cell)
        u = rng.random((self.n_paths, 3))
        out = []
        for p, pc in enumerate(pcs):
            b = self.sample_bounds(pc)
            loss, rtt, dev = (
                _inside(lo + u[p, k] * (hi - lo), lo, hi)
                for k, (lo, hi) in enumerate(b[d] for d in DIMENSIONS)
            )
            out.append(PathCondition(loss, rtt, _std_for(dev, rtt, *b["dev_ratio"])))
        return out

    def sample_task(self, cell: int, rng: np.random.Generator, base: Mapping | None = None) -> dict:
        """A normalised scenario (:func:`envs.normalise_scenario`) inside ``cell``.

        Per path: a link preset drawn from :attr:`links` (its bandwidth; one
        ``rng.integers`` call after :meth:`sample_conditions`) with ``rtt_ms``,
        ``rtt_std_ms`` and ``loss`` set from the sampled conditions; with
        :attr:`bandwidth_mbps` set, instead a bandwidth drawn log-uniformly in
        that range (one ``rng.uniform`` call) on the default path. ``base``
        holds further scenario keys (e.g. ``{"cc": "olia", "max_duration_s":
        30}``); its optional ``paths`` (one mapping for every path, or a list
        of one per path) adds path keys the grid does not set (e.g.
        ``buffer_bdp``). The scenario is named ``grid-<cell name>`` unless
        ``base`` names it.
        """
        conds = self.sample_conditions(cell, rng)
        if self.bandwidth_mbps is None:
            link_keys = [
                {"link": self.links[int(i)]}
                for i in rng.integers(len(self.links), size=self.n_paths)
            ]
        else:
            lo, hi = np.log(self.bandwidth_mbps)
            link_keys = [
                {"bandwidth_mbps": float(np.exp(x))} for x in rng.uniform(lo, hi, size=self.n_paths)
            ]
        base = copy.deepcopy(dict(base or {}))
        extra = base.pop("paths", None)
        if extra is None:
            extra = [{}] * self.n_paths
        elif isinstance(extra, Mapping):
            extra = [extra] * self.n_paths
        elif (
            not isinstance(extra, Sequence) or isinstance(extra, str) or len(extra) != self.n_paths
        ):
            raise ConfigError(
                f"task base.paths: expected one mapping or a list of {self.n_paths}, got {extra!r}"
            )
        paths = []
        for i, (cond, link, more) in enumerate(zip(conds, link_keys, extra)):
            more = dict(more or {})
            clash = sorted(
                set(more)
                & {
                    "link",
                    "rtt_ms",
                    "rtt_std_ms",
                    "loss",
                    "bandwidth_mbps",
                    "trace",
                    "synthetic",
                    "loss_model",
                    "ge",
                }
            )
            if clash:
                raise ConfigError(f"task base.paths[{i}]: {clash} are set by the grid")
            paths.append({**more, **link, **cond.as_dict()})
        scenario = {"name": f"grid-{self.name(cell)}", **base, "paths": paths}
        return normalise_scenario(scenario, keep=False)  # a task is drawn once: nothing to keep

    # ---------------------------------------------------------- (de)serialisation
    def to_dict(self) -> dict:
        """JSON-able description (``inf`` written as ``null``); :meth:`from_dict` reads it."""
        return {
            "format": GRID_FORMAT,
            "version": GRID_VERSION,
            "n_paths": self.n_paths,
            "subranges": list(self.subranges),
            "caps": dict(self.caps),
            "links": list(self.links),
            "bandwidth_mbps": None if self.bandwidth_mbps is None else list(self.bandwidth_mbps),
            "min_rtt_ms": MIN_RTT_MS,
            "dimensions": list(DIMENSIONS),
            "edges": {d: [_json_float(x) for x in e] for d, e in self._edges.items()},
            "n_path_cells": self.n_path_cells,
            "n_cells": self.n_cells,
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> ConditionGrid:
        """The grid of a :meth:`to_dict` mapping; the derived entries (edges,
        counts), when present, must match what this code derives."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"grid: expected a mapping, got {type(d).__name__}")
        d = dict(d)
        known = {
            "format",
            "version",
            "n_paths",
            "subranges",
            "caps",
            "links",
            "bandwidth_mbps",
            "min_rtt_ms",
            "dimensions",
            "edges",
            "n_path_cells",
            "n_cells",
        }
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"grid: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
        if d.get("format", GRID_FORMAT) != GRID_FORMAT:
            raise ConfigError(f"grid: format {d['format']!r} is not {GRID_FORMAT!r}")
        version = d.get("version", GRID_VERSION)
        if (
            isinstance(version, bool)
            or not isinstance(version, int)
            or not 1 <= version <= GRID_VERSION
        ):
            raise ConfigError(
                f"grid: version {version!r} is not supported (this reader: {GRID_VERSION})"
            )
        if "n_paths" not in d:
            raise ConfigError("grid: n_paths is missing")
        grid = cls(
            n_paths=d["n_paths"],
            subranges=d.get("subranges", 1),
            caps=d.get("caps"),
            links=d.get("links", DEFAULT_LINKS),
            bandwidth_mbps=d.get("bandwidth_mbps"),
        )
        mine = grid.to_dict()
        for key in ("min_rtt_ms", "dimensions", "edges", "n_path_cells", "n_cells"):
            if key in d and plain(d[key]) != mine[key]:
                raise ConfigError(
                    f"grid: {key} {d[key]!r} does not match the grid it describes ({mine[key]!r})"
                )
        return grid

    def _key(self):
        return (
            self.n_paths,
            self.subranges,
            tuple(self.caps[d] for d in DIMENSIONS),
            self.links,
            self.bandwidth_mbps,
        )

    def __eq__(self, other) -> bool:
        return isinstance(other, ConditionGrid) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"ConditionGrid(n_paths={self.n_paths}, subranges={self.subranges}, caps={self.caps}, "
            f"links={self.links}, bandwidth_mbps={self.bandwidth_mbps})"
        )


def _inside(x: float, lo: float, hi: float) -> float:
    """``x`` kept inside ``[lo, hi)`` (``lo + u * (hi - lo)`` may round up to ``hi``)."""
    x = float(x)
    return float(np.nextafter(hi, lo)) if x >= hi else max(x, lo)


def _std_for(dev: float, rtt: float, lo: float, hi: float) -> float:
    """``dev * rtt``, nudged by ulps so that ``std / rtt`` stays in ``[lo, hi)``
    (the ratio the grid reads back)."""
    std = dev * rtt
    for _ in range(8):
        r = std / rtt
        if r < lo:
            std = float(np.nextafter(std, math.inf))
        elif r >= hi:
            std = float(np.nextafter(std, 0.0))
        else:
            break
    return std


def conditions_of_scenario(scenario: Mapping) -> list[PathCondition]:
    """Per path, the configured conditions of a scenario (normalised first,
    so presets apply): ``loss`` (for Gilbert-Elliott loss, the stationary
    mean loss), ``rtt_ms``, ``rtt_std_ms``. Delay or loss read from a trace
    path's own series is not reflected."""
    out = []
    for p in normalise_scenario(scenario)["paths"]:
        loss = float(p["loss"])
        ge = p.get("ge")
        if p.get("loss_model") == "gilbert_elliott" and isinstance(ge, Mapping):
            moves = ge["p_gb"] + ge["p_bg"]
            bad = ge["p_gb"] / moves if moves > 0 else 0.0
            loss = (1.0 - bad) * ge["loss_good"] + bad * ge["loss_bad"]
        out.append(PathCondition(loss, float(p["rtt_ms"]), float(p["rtt_std_ms"])))
    return out


__all__ = [
    "PathCondition",
    "ConditionGrid",
    "conditions_of_scenario",
    "DIMENSIONS",
    "PAPER_EDGES",
    "DEFAULT_CAPS",
    "MIN_RTT_MS",
    "DEFAULT_LINKS",
]
