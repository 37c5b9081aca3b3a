"""Coupled multipath congestion control: LIA, OLIA and BALIA.

Units: bytes and seconds. Each subflow's controller holds ``cwnd`` [bytes]
and ``srtt`` [s]; the controllers of one connection share a
:class:`~envs.cc.base.CouplingGroup` and read the other members' ``cwnd``
and ``srtt`` through ``group.members`` (all members of a group should run
the same algorithm).

Slow start, the recovery period, the minimum/maximum window and (for LIA and
OLIA) the halving on loss are NewReno's (RFC 9002); only the
congestion-avoidance increase is coupled, plus BALIA's loss reduction.

Unit conversion used throughout. OLIA and BALIA are written with windows
``w`` in packets (of ``mss`` bytes) and give the increase ``f(w)`` [packets]
per acknowledged packet. Every such ``f`` is homogeneous of degree -1 in the
windows (each term has one more window in its denominator than in its
numerator; RTTs and the dimensionless alphas are unchanged), so with byte
windows ``W = mss * w``: ``f(W / mss) = mss * f(W)``. An increase of
``f(w)`` packets is ``mss * f(w) = mss^2 * f(W)`` bytes per acked packet, and
``b`` acked bytes are ``b / mss`` packets, so the byte increase is
``b * mss * f(W)``: the packet formula evaluated on byte windows, times
``b * mss``. A single path thus reduces to NewReno's ``b * mss / W``.
"""

from __future__ import annotations

import math

from .base import CouplingGroup, RttEstimate
from .newreno import NewReno

#: True in the compiled module (an extension's ``__file__`` is not the ``.py``)
COMPILED = not __file__.endswith(".py")


def floor_div(a: float, b: float) -> float:
    """``a // b`` for floats ``a >= 0``, ``b > 0``, computed as Python computes it
    (CPython's float floor division: ``fmod``, then the quotient rounded). The
    compiled module uses it instead of ``//``, which C compiles to ``floor(a / b)``:
    one more when ``a / b`` rounds up to a whole number."""
    div = (a - math.fmod(a, b)) / b
    q = math.floor(div)
    return q + 1.0 if div - q > 0.5 else q


class _Coupled(NewReno):
    """Common part: group membership, srtt refresh, inter-loss byte counters."""

    coupled = True

    def __init__(
        self,
        mss: int,
        initial_window_packets: int = 32,
        min_window_packets: int = 2,
        max_window_bytes: float = float("inf"),
        group: CouplingGroup | None = None,
    ):
        if group is None:
            group = CouplingGroup()
        super().__init__(mss, initial_window_packets, min_window_packets, max_window_bytes, group)
        #: bytes acked between the last two congestion events on this path
        self.l1 = 0.0
        #: bytes acked since the last congestion event on this path
        self.l2 = 0.0

    def on_ack(self, now: float, acked_bytes: int, sent_time: float, rtt) -> None:
        """``acked_bytes`` [bytes] newly acked; ``rtt.srtt`` [s] refreshes
        ``self.srtt`` so that the group sees it."""
        self.l2 += acked_bytes
        est = rtt if isinstance(rtt, RttEstimate) else None
        srtt = est.srtt if est is not None else rtt.srtt  # (compiled: a C field)
        if srtt > 0.0:
            self.srtt = srtt
        if sent_time <= self.recovery_start:
            return
        cwnd = self.cwnd
        if cwnd < self.ssthresh:
            cwnd += acked_bytes
        else:
            cwnd += self._ca_increase(acked_bytes, cwnd)
            if cwnd < self.min_window:
                cwnd = self.min_window
        self.cwnd = cwnd if cwnd < self.max_window else self.max_window

    def _ca_increase(self, acked_bytes: int, cwnd: float) -> float:
        """Congestion-avoidance increase [bytes] for ``acked_bytes`` acked."""
        raise NotImplementedError

    def on_loss(self, now: float, lost_bytes: int, sent_time: float) -> None:
        if sent_time <= self.recovery_start:
            return
        self.recovery_start = now
        self.l1 = self.l2
        self.l2 = 0.0
        self._reduce(now)


class Lia(_Coupled):
    """Linked Increases Algorithm (RFC 6356).

    Per ACK in congestion avoidance on subflow i::

        cwnd_i += min(alpha * b * mss / cwnd_total, b * mss / cwnd_i)
        alpha = cwnd_total * max_k(cwnd_k / rtt_k^2) / (sum_k cwnd_k / rtt_k)^2

    RFC 6356 is already byte-based; ``alpha`` is dimensionless with windows in
    bytes ([B * B/s^2 / (B/s)^2]). ``alpha / cwnd_total`` is computed directly
    as ``max_k(cwnd_k/rtt_k^2) / (sum_k cwnd_k/rtt_k)^2`` [1/bytes].
    """

    name = "lia"

    def alpha(self) -> float:
        """RFC 6356 ``alpha`` (dimensionless) over the current group."""
        best = 0.0
        rate_sum = 0.0
        total = 0.0
        for m in self.group.members:
            r = m.srtt
            if r <= 0.0:
                continue
            w = m.cwnd
            total += w
            rate_sum += w / r
            v = w / (r * r)
            if v > best:
                best = v
        return total * best / (rate_sum * rate_sum)

    def _ca_increase(self, acked_bytes: int, cwnd: float) -> float:
        best = 0.0
        rate_sum = 0.0
        for m in self.group.members:
            r = m.srtt
            if r <= 0.0:
                continue
            w = m.cwnd
            rate_sum += w / r
            v = w / (r * r)
            if v > best:
                best = v
        coupled = best / (rate_sum * rate_sum)  # alpha / cwnd_total [1/B]
        uncoupled = 1.0 / cwnd
        return self.mss * acked_bytes * (coupled if coupled < uncoupled else uncoupled)


class Olia(_Coupled):
    """Opportunistic Linked Increases Algorithm (Khalili et al., CoNEXT 2012;
    draft-khalili-mptcp-congestion-control).

    Per ACK in congestion avoidance on path r (packets)::

        w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + alpha_r / w_r

    In bytes (see module docstring) for ``b`` acked bytes::

        W_r += b * mss * ((W_r / rtt_r^2) / (sum_p W_p / rtt_p)^2 + alpha_r / W_r)

    ``alpha_r`` (dimensionless): with ``l_p = max(l1_p, l2_p)`` (bytes acked
    between the last two losses / since the last loss on p), B = paths with
    the largest ``l_p / rtt_p^2`` (presumably best paths; the estimate of the
    square of a path's TCP rate, as in the authors' Linux implementation),
    M = paths with the largest window in whole packets (``cwnd // mss``, the
    granularity of the authors' packet-based implementation; comparing float
    byte windows exactly would make M change on every ACK between two nearly
    equal windows and let both collect the positive alpha in turn); if
    B \\ M is empty all alpha are 0,
    else alpha_r = 1/(n |B\\M|) for r in B \\ M, -1/(n |M|) for r in M, 0
    otherwise (n = number of paths). Loss: halve (NewReno).
    """

    name = "olia"

    def alpha(self) -> float:
        """OLIA ``alpha_r`` of this path over the current group."""
        return self._scan()

    def _scan(self) -> float:
        """alpha_r over the group; leaves sum_p W_p / rtt_p [B/s] in ``rate_sum`` (a
        typed attribute of the compiled core: no tuple per ACK)."""
        members = self.group.members
        n = 0
        max_w = 0.0
        best = -1.0
        rate_sum = 0.0
        mss = self.mss
        for m in members:
            r = m.srtt
            if r <= 0.0:
                continue
            n += 1
            w = m.cwnd
            rate_sum += w / r
            w = floor_div(w, mss) if COMPILED else w // mss
            if w > max_w:
                max_w = w
            l1 = m.l1
            l2 = m.l2
            q = (l1 if l1 > l2 else l2) / (r * r)
            if q > best:
                best = q
        self.rate_sum = rate_sum
        if n < 2:
            return 0.0
        n_m = 0
        n_b_not_m = 0
        self_in_b = False
        for m in members:
            r = m.srtt
            if r <= 0.0:
                continue
            if (floor_div(m.cwnd, mss) if COMPILED else m.cwnd // mss) == max_w:
                n_m += 1
            else:
                l1 = m.l1
                l2 = m.l2
                if (l1 if l1 > l2 else l2) / (r * r) == best:
                    n_b_not_m += 1
                    if m is self:
                        self_in_b = True
        if n_b_not_m == 0:
            return 0.0
        if (floor_div(self.cwnd, mss) if COMPILED else self.cwnd // mss) == max_w:
            return -1.0 / (n * n_m)
        if self_in_b:
            return 1.0 / (n * n_b_not_m)
        return 0.0

    def _ca_increase(self, acked_bytes: int, cwnd: float) -> float:
        a = self._scan()
        rate_sum = self.rate_sum
        r = self.srtt
        return self.mss * acked_bytes * ((cwnd / (r * r)) / (rate_sum * rate_sum) + a / cwnd)


class Balia(_Coupled):
    """Balanced Linked Adaptation (Peng, Walid, Hwang, Low, IEEE/ACM ToN 2016).

    With ``x_k = w_k / rtt_k`` and ``alpha_r = max_k x_k / x_r``, per ACK in
    congestion avoidance on path r (packets)::

        w_r += (x_r / rtt_r) / (sum_k x_k)^2 * (1 + alpha_r)/2 * (4 + alpha_r)/5

    In bytes (``X_k = W_k / rtt_k`` [B/s]; alpha_r is dimensionless)::

        W_r += b * mss * (X_r / rtt_r) / (sum_k X_k)^2 * (1+alpha_r)/2 * (4+alpha_r)/5

    On a congestion event: ``W_r -= (W_r / 2) * min(alpha_r, 1.5)``; the result
    is the new ``ssthresh``; ``cwnd = max(ssthresh, min_window)``.
    """

    name = "balia"

    def alpha(self) -> float:
        """BALIA ``alpha_r = max_k x_k / x_r`` (>= 1) over the current group."""
        best = 0.0
        for m in self.group.members:
            r = m.srtt
            if r <= 0.0:
                continue
            x = m.cwnd / r
            if x > best:
                best = x
        return best / (self.cwnd / self.srtt)

    def _ca_increase(self, acked_bytes: int, cwnd: float) -> float:
        best = 0.0
        rate_sum = 0.0
        for m in self.group.members:
            r = m.srtt
            if r <= 0.0:
                continue
            x = m.cwnd / r
            rate_sum += x
            if x > best:
                best = x
        r = self.srtt
        x_r = cwnd / r
        a = best / x_r
        return (
            self.mss * acked_bytes * (x_r / r) / (rate_sum * rate_sum) * (1.0 + a) * (4.0 + a) * 0.1
        )

    def _reduce(self, now: float) -> None:
        a = self.alpha()
        if a > 1.5:
            a = 1.5
        cwnd = self.cwnd
        ssthresh = cwnd - 0.5 * cwnd * a
        self.ssthresh = ssthresh
        self.cwnd = ssthresh if ssthresh > self.min_window else self.min_window
