"""Rule-based baselines as GAP schedulers, as the GAPS paper casts them (Liao et al., IFIP Networking 2020).

A GAP scheduler picks a path and, for a path slower than the fastest, how
many not-yet-sent packets at the head of the send queue it leaves for the
faster path(s) (``Decision(path, gap=bytes)``, :mod:`envs.scheduler`).
minRTT (gap 0), DAPS and STMS are GAP schedulers already
(:mod:`baselines.rule_based`); this module adds a static GAP
(:class:`FixedGap`, for the TRUE GAP sweep of :mod:`baselines.gaps.true_gap`)
and BLEST and ECF turned into GAP schedulers (:class:`BlestGap`,
:class:`EcfGap`).

Common rules (:class:`GapScheduler`), *f* = the fastest path
(:func:`baselines.rule_based.common.fastest`):

* Path choice: minRTT (:func:`~baselines.rule_based.common.minrtt_choice`:
  unprobed paths probed first, else the lowest srtt with room; wait when no
  path has room).
* A plain ``int`` (gap 0) when the choice is *f*, an unprobed path, or
  retransmissions are pending (the transport sends them first and ignores a
  gap).
* Otherwise the rule gives G_i in packets for the chosen slower path i;
  G_i is rounded to whole packets, clamped to [0, ``max_gap_packets``] and
  to :func:`~baselines.rule_based.common.gap_limit` (a larger gap would send
  a short packet from the end of the stream, or place data beyond the
  receiver's flow-control limit and stall the connection: read its
  docstring), and the decision is ``Decision(i, gap=G_i * payload)``.
  A rule may also answer "wait" (``None``), as BLEST and ECF do.
* Any number of paths: every slower path has its own gap, computed against
  the paths faster than it (by srtt rank).

Packets are payload packets (``view.payload`` bytes): the unit of the GAP in
the GAPS paper ("about 1KB").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from baselines.rule_based.blest import BLEST
from baselines.rule_based.common import fastest, gap_limit, minrtt_choice
from baselines.rule_based.ecf import ECF
from envs.errors import ConfigError
from envs.scheduler import ConnectionView, Decision, Scheduler

#: default upper bound of a GAP [packets]: at 50 Mbit/s a 40 ms one-way
#: delay difference (RTT 20 vs 100 ms) is ~190 packets of 1290 bytes
DEFAULT_MAX_GAP_PACKETS = 256


def check_max_gap(name: str, max_gap_packets) -> int:
    """``max_gap_packets`` as an int >= 0, else a one-line ConfigError."""
    if (
        isinstance(max_gap_packets, bool)
        or not isinstance(max_gap_packets, (int, float))
        or not math.isfinite(max_gap_packets)
        or max_gap_packets < 0
        or max_gap_packets != int(max_gap_packets)
    ):
        raise ConfigError(
            f"{name}.max_gap_packets: expected a whole number of packets >= 0, got {max_gap_packets!r}"
        )
    return int(max_gap_packets)


def gap_bytes(view: ConnectionView, packets: float, max_gap_packets: int) -> int:
    """``packets`` rounded to whole packets, clamped to [0, max_gap_packets]
    and to :func:`gap_limit` (rounded down to whole packets), in bytes."""
    if not packets > 0.0:  # also NaN
        return 0
    n = int(packets + 0.5) if packets < max_gap_packets else max_gap_packets
    if n <= 0:
        return 0
    payload = view.payload
    gap = n * payload
    lim = gap_limit(view)
    if gap > lim:
        gap = lim - lim % payload
    return gap


def srtt_rank(paths, i: int) -> int:
    """Rank of path ``i`` by srtt among the probed paths (0 = fastest; ties
    by index, as :func:`fastest`)."""
    r_i = paths[i].srtt
    rank = 0
    for j, p in enumerate(paths):
        if j != i and p.has_rtt_sample and (p.srtt < r_i or (p.srtt == r_i and j < i)):
            rank += 1
    return rank


class GapScheduler(Scheduler):
    """minRTT path choice plus a per-path GAP from :meth:`gap_packets`."""

    name = "gap"

    def __init__(self, max_gap_packets: int = DEFAULT_MAX_GAP_PACKETS) -> None:
        self.max_gap_packets = check_max_gap(self.name, max_gap_packets)

    def target(self, view: ConnectionView):
        """``(c, f)``: the minRTT choice ``c`` and the fastest path ``f`` when
        ``c`` is a slower probed path; ``(c, None)`` when ``c`` is None (wait),
        the fastest path or unprobed (plain decision, no gap)."""
        paths = view.paths
        c = minrtt_choice(paths)
        if c is None or not paths[c].has_rtt_sample:
            return c, None
        f = fastest(paths)
        return (c, None) if c == f else (c, f)

    def decide(self, view: ConnectionView) -> int | Decision | None:
        c, f = self.target(view)
        if f is None:
            return c
        g = self.gap_packets(view, f, c)
        if g is None:
            return None
        if view.retransmit_bytes > 0:
            return c
        return Decision(c, gap=gap_bytes(view, g, self.max_gap_packets))

    def gap_packets(self, view: ConnectionView, f: int, i: int) -> float | None:
        """GAP of slower path ``i`` [packets, unrounded], or None: wait."""
        raise NotImplementedError


class FixedGap(GapScheduler):
    """A static GAP per slower path: ``gap_packets`` is one number (every
    slower path) or a list by srtt rank (``[G_1, G_2, ...]`` for the 2nd,
    3rd, ... fastest path; the last value repeats for further paths)."""

    name = "fixed_gap"

    def __init__(
        self, gap_packets: int | Sequence[int] = 0, max_gap_packets: int = DEFAULT_MAX_GAP_PACKETS
    ) -> None:
        super().__init__(max_gap_packets)
        gaps = (
            [gap_packets]
            if not isinstance(gap_packets, Sequence) or isinstance(gap_packets, str)
            else list(gap_packets)
        )
        if not gaps:
            raise ConfigError(
                f"fixed_gap.gap_packets: expected a number or a non-empty list, got {gap_packets!r}"
            )
        for g in gaps:
            if (
                isinstance(g, bool)
                or not isinstance(g, (int, float))
                or not math.isfinite(g)
                or g != int(g)
            ):
                raise ConfigError(
                    f"fixed_gap.gap_packets: expected whole packets, got {gap_packets!r}"
                )
            if g < 0:
                raise ConfigError(
                    f"fixed_gap.gap_packets: a GAP cannot be negative, got {gap_packets!r}"
                )
            if g > self.max_gap_packets:
                raise ConfigError(
                    f"fixed_gap.gap_packets: {gap_packets!r} exceeds max_gap_packets "
                    f"{self.max_gap_packets}"
                )
        self.gaps = [int(g) for g in gaps]

    def gap_packets(self, view: ConnectionView, f: int, i: int) -> float:
        k = srtt_rank(view.paths, i) - 1
        return float(self.gaps[k if k < len(self.gaps) else -1])


class BlestGap(BLEST):
    """BLEST as a GAP scheduler (the GAPS paper's form). For the chosen slower path s
    and the fastest path f:

    X = MSS_f * (CWND_f + (RTT_s/RTT_f - 1)/2) * (RTT_s/RTT_f) * lambda
    [payload bytes], MSS_f = payload, CWND_f in packets, RTT = srtt.

    If X exceeds the free send window, ``max(0, send_wnd - (MSS + unacked
    bytes on s))`` (:meth:`BLEST.budget`), s is skipped (``None``: wait);
    otherwise s sends with gap X (in packets X / payload, rounded and
    clamped as :class:`GapScheduler` does). lambda adapts as in
    :class:`~baselines.rule_based.blest.BLEST` (starts at 1.2, in [1.0,
    1.3], +0.04 after a retransmission, -0.01 otherwise, at most once per
    min-sRTT of s).

    Our decisions: the wait check comes before the retransmission rule (as
    in BLEST, which checks whatever the next segment is); with more than two
    paths X compares each slower path with f only (BLEST's pair)."""

    name = "blest_gap"

    def __init__(
        self,
        lambda_init: float = 1.2,
        lambda_min: float = 1.0,
        lambda_max: float = 1.3,
        lambda_up: float = 0.04,
        lambda_down: float = 0.01,
        send_window: str = "credit",
        max_gap_packets: int = DEFAULT_MAX_GAP_PACKETS,
    ) -> None:
        super().__init__(
            lambda_init=lambda_init,
            lambda_min=lambda_min,
            lambda_max=lambda_max,
            lambda_up=lambda_up,
            lambda_down=lambda_down,
            send_window=send_window,
        )
        self.max_gap_packets = check_max_gap(self.name, max_gap_packets)

    target = GapScheduler.target
    decide = GapScheduler.decide

    def gap_x(self, f, s) -> float:
        """X [payload bytes] of the module docstring (inf if srtt_f is 0)."""
        if f.srtt <= 0.0:
            return math.inf
        ratio = s.srtt / f.srtt
        return f.payload * (f.cwnd / f.mss + (ratio - 1.0) / 2.0) * ratio * self.lam

    def gap_packets(self, view: ConnectionView, f: int, i: int) -> float | None:
        paths = view.paths
        s = paths[i]
        self._update_lambda(view, s)
        x = self.gap_x(paths[f], s)
        if x > self.budget(view, s):
            return None
        return x / view.payload


class EcfGap(ECF):
    """ECF as a GAP scheduler. The wait rule is ECF's
    (:class:`~baselines.rule_based.ecf.ECF`, waiting flag and beta
    included); when ECF sends on the slower path i the GAP is **our
    decision** (the paper gives none): the data the faster paths deliver
    during i's extra one-way delay, plus ECF's margin delta =
    max(rttvar_f, rttvar_i):

    G_i = sum over probed j with srtt_j < srtt_i of
          cwnd_j / srtt_j * ((srtt_i + delta) - srtt_j) / 2   [wire bytes]

    turned into packets with each path's ``mss``. With two paths this is
    cwnd_f / srtt_f * ((srtt_s + delta) - srtt_f) / 2, STMS's model gap
    plus half of ECF's delta worth of fast-path data."""

    name = "ecf_gap"

    def __init__(self, beta: float = 0.25, max_gap_packets: int = DEFAULT_MAX_GAP_PACKETS) -> None:
        super().__init__(beta=beta)
        self.max_gap_packets = check_max_gap(self.name, max_gap_packets)

    target = GapScheduler.target

    def decide(self, view: ConnectionView) -> int | Decision | None:
        c, f = self.target(view)
        if f is None:
            return c
        if ECF.decide(self, view) is None:  # ECF's wait rule on (f, s = c): same pair
            return None
        if view.retransmit_bytes > 0:
            return c
        return Decision(c, gap=gap_bytes(view, self.gap_packets(view, f, c), self.max_gap_packets))

    def gap_packets(self, view: ConnectionView, f: int, i: int) -> float:
        paths = view.paths
        pi = paths[i]
        r_i = pi.srtt
        g = 0.0
        for j, p in enumerate(paths):
            if j == i or not p.has_rtt_sample or not 0.0 < p.srtt < r_i:
                continue
            delta = p.rttvar if p.rttvar > pi.rttvar else pi.rttvar
            g += p.cwnd / p.mss / p.srtt * ((r_i + delta) - p.srtt) * 0.5
        return g


__all__ = [
    "GapScheduler",
    "FixedGap",
    "BlestGap",
    "EcfGap",
    "gap_bytes",
    "srtt_rank",
    "check_max_gap",
    "DEFAULT_MAX_GAP_PACKETS",
]
