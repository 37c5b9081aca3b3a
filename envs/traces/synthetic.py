"""Synthetic traces from summary statistics.

Rates are given in Mbit/s and returned as :class:`CapacityTrace` (bytes/s);
times in seconds. Every random generator takes ``seed`` (an int, a
``numpy.random.SeedSequence`` or a ``numpy.random.Generator``), so a seed
reproduces a trace exactly. Bad parameters raise :class:`ConfigError`.
"""

from __future__ import annotations

import math

import numpy as np

from envs.errors import ConfigError
from envs.traces.base import CapacityTrace, PathTrace, StepSeries

_BPS = 1e6 / 8  # bytes/s per Mbit/s


def _need(cond: bool, msg: str):
    if not cond:
        raise ConfigError(msg)


def _finite(**kw):
    for k, v in kw.items():
        _need(
            isinstance(v, (int, float)) and math.isfinite(v) and v >= 0,
            f"{k}={v!r} must be a finite number >= 0",
        )


def _grid(step_s: float, duration_s: float) -> int:
    _finite(step_s=step_s, duration_s=duration_s)
    _need(step_s > 0 and duration_s > 0, "step_s and duration_s must be > 0")
    return max(1, math.ceil(duration_s / step_s - 1e-9))


def _positive_samples(rng, mean: float, std: float, n: int, dist: str) -> np.ndarray:
    """``n`` samples >= 0 with the given mean/std (see :func:`gaussian_rate`)."""
    if std == 0:
        return np.full(n, float(mean))
    if dist == "lognormal":
        _need(mean > 0, "a lognormal needs mean > 0")
        s2 = math.log1p((std / mean) ** 2)
        return rng.lognormal(math.log(mean) - s2 / 2, math.sqrt(s2), n)
    _need(dist == "truncnorm", f"dist={dist!r}: use 'lognormal' or 'truncnorm'")
    x = rng.normal(mean, std, n)
    for _ in range(1000):  # rejection: redraw the negative ones
        bad = x < 0
        if not bad.any():
            return x
        x[bad] = rng.normal(mean, std, int(bad.sum()))
    return np.maximum(x, 0.0)


def _compact(t, v):
    keep = np.concatenate(([True], v[1:] != v[:-1]))
    return t[keep], v[keep]


def constant(rate_mbps: float, name: str = "constant") -> CapacityTrace:
    """A constant capacity of ``rate_mbps`` Mbit/s."""
    _finite(rate_mbps=rate_mbps)
    _need(rate_mbps > 0, "rate_mbps must be > 0")
    return CapacityTrace.constant(rate_mbps * _BPS, name)


def gaussian_rate(
    mean_mbps: float,
    std_mbps: float,
    step_s: float,
    duration_s: float,
    seed=None,
    dist: str = "lognormal",
    name: str = "gaussian",
) -> CapacityTrace:
    """I.i.d. rate per ``step_s`` interval with the given mean and std [Mbit/s].

    ``dist="lognormal"`` (default): a lognormal with exactly this mean and std,
    always > 0 (no outages). ``dist="truncnorm"``: a normal truncated at 0 by
    resampling; its mean exceeds ``mean_mbps`` when ``std_mbps`` is not small
    against it (by ~8% at std = mean). The period is ``ceil(duration_s /
    step_s) * step_s`` [s].
    """
    _finite(mean_mbps=mean_mbps, std_mbps=std_mbps)
    _need(mean_mbps > 0, "mean_mbps must be > 0")
    n = _grid(step_s, duration_s)
    x = _positive_samples(np.random.default_rng(seed), mean_mbps, std_mbps, n, dist)
    t, v = _compact(np.arange(n) * float(step_s), x * _BPS)
    return CapacityTrace(t, v, n * float(step_s), name)


def mmwave_blockage(
    los_mbps: float,
    nlos_mbps: float,
    mean_los_s: float,
    mean_blockage_s: float,
    duration_s: float,
    seed=None,
    step_s: float | None = None,
    outage_prob: float = 0.0,
    outage_mbps: float = 0.0,
    name: str = "mmwave_blockage",
) -> CapacityTrace:
    """Two-state (line-of-sight / blocked) mmWave capacity process.

    The link alternates between LoS at ``los_mbps`` and blocked at
    ``nlos_mbps``, with exponential sojourns of mean ``mean_los_s`` and
    ``mean_blockage_s`` [s] (an alternating renewal, semi-Markov process; the
    first state is drawn from the stationary law, so the LoS time fraction is
    ``mean_los_s / (mean_los_s + mean_blockage_s)`` throughout). With
    probability ``outage_prob`` a blockage is a full outage at
    ``outage_mbps`` (e.g. 0) instead of ``nlos_mbps``.

    This is the blockage model of mobile-blocker studies of mmWave cellular
    links: human/vehicle blockers cross the LoS path as a Poisson process, so
    blocked and unblocked periods are (approximately) exponential; see I. K.
    Jain, R. Kumar, S. Panwar, "The Impact of Mobile Blockers on Millimeter
    Wave Cellular Systems", IEEE JSAC 37(4), 2019, and M. Gapeyenko et al.,
    "On the Temporal Effects of Mobile Blockers in Urban Millimeter-Wave
    Cellular Scenarios", IEEE Trans. Veh. Technol. 66(11), 2017. Measured
    commercial mmWave 5G (Lumos5G, 5Gophers) shows the same on/off swings.

    ``step_s=None``: exact switching times, period ``duration_s``. Otherwise
    the rate is averaged over each ``step_s`` interval (the mean rate is kept;
    steps that straddle a switch get an intermediate value), period
    ``ceil(duration_s / step_s) * step_s``.
    """
    _finite(
        los_mbps=los_mbps,
        nlos_mbps=nlos_mbps,
        mean_los_s=mean_los_s,
        mean_blockage_s=mean_blockage_s,
        duration_s=duration_s,
        outage_prob=outage_prob,
        outage_mbps=outage_mbps,
    )
    _need(
        mean_los_s > 0 and mean_blockage_s > 0 and duration_s > 0,
        "mean_los_s, mean_blockage_s and duration_s must be > 0",
    )
    _need(outage_prob <= 1, "outage_prob must be in [0, 1]")
    horizon = float(duration_s) if step_s is None else _grid(step_s, duration_s) * float(step_s)
    rng = np.random.default_rng(seed)
    los = rng.random() < mean_los_s / (mean_los_s + mean_blockage_s)
    batch = int(2 * horizon / (mean_los_s + mean_blockage_s)) + 16
    durs = np.empty(0)
    while durs.sum() < horizon:  # alternate LoS / blocked sojourns
        d = rng.exponential(1.0, batch)
        k = np.arange(len(durs), len(durs) + batch)
        d *= np.where((k % 2 == 0) == los, mean_los_s, mean_blockage_s)
        durs = np.concatenate((durs, d))
    k = np.arange(len(durs))
    is_los = (k % 2 == 0) == los
    outage = rng.random(len(durs)) < outage_prob
    rate = np.where(is_los, los_mbps, np.where(outage, outage_mbps, nlos_mbps)) * _BPS
    starts = np.concatenate(([0.0], np.cumsum(durs)[:-1]))
    keep = (starts < horizon) & np.concatenate(([True], np.diff(starts) > 0))
    t, v = starts[keep], rate[keep]
    if step_s is not None:
        edges = np.append(t, horizon)
        cum = np.concatenate(([0.0], np.cumsum(v * np.diff(edges))))
        grid = np.arange(round(horizon / step_s) + 1) * float(step_s)
        grid[-1] = horizon
        t, v = grid[:-1], np.maximum(np.diff(np.interp(grid, edges, cum)) / np.diff(grid), 0.0)
    t, v = _compact(t, v)
    _need(bool(np.any(v > 0)), "the generated trace has zero capacity throughout")
    return CapacityTrace(t, v, horizon, name)


def from_stats(
    rate_mbps: float,
    rate_std_mbps: float = 0.0,
    *,
    rtt_ms: float | None = None,
    rtt_std_ms: float = 0.0,
    loss: float | None = None,
    step_s: float = 1.0,
    duration_s: float = 60.0,
    seed=None,
    dist: str = "lognormal",
    name: str = "from_stats",
) -> PathTrace:
    """A :class:`PathTrace` from mean +- std of rate [Mbit/s] and RTT [ms].

    Capacity: :func:`constant` if ``rate_std_mbps == 0``, else
    :func:`gaussian_rate`. ``rtt_ms`` (round trip) gives a one-way delay of
    ``rtt/2`` [s], i.i.d. per ``step_s`` from a normal truncated at 0 when
    ``rtt_std_ms > 0``. ``loss``: a constant loss probability. Delay and loss
    stay ``None`` when not given (the scenario's values then apply).
    """
    rng = np.random.default_rng(seed)
    if rate_std_mbps:
        cap = gaussian_rate(rate_mbps, rate_std_mbps, step_s, duration_s, rng, dist, name)
    else:
        cap = constant(rate_mbps, name)
    delay = loss_s = None
    if rtt_ms is not None:
        _finite(rtt_ms=rtt_ms, rtt_std_ms=rtt_std_ms)
        n = _grid(step_s, duration_s) if rtt_std_ms else 1
        d = _positive_samples(rng, rtt_ms, rtt_std_ms, n, "truncnorm") / 2000.0
        period = n * float(step_s) if rtt_std_ms else 1.0
        delay = StepSeries(*_compact(np.arange(n) * float(step_s), d), period)
    if loss is not None:
        _finite(loss=loss)
        _need(loss < 1, "loss must be a probability < 1")
        loss_s = StepSeries([0.0], [float(loss)], 1.0)
    return PathTrace(cap, delay, loss_s, source=f"synthetic:{name}")
