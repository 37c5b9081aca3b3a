"""BLEST: blocking-estimation scheduler (Ferlin et al., IFIP Networking 2016).

Rules (reconstructed from the paper and the
Linux MPTCP v0.95 module, with floats instead of its fixed-point arithmetic):

* BLEST is evaluated only when minRTT would pick *s* over *f* (so *f* has no
  room). If sending on *s* would occupy so much of the connection send window
  that *f* could not send what it can during *s*'s linger time, BLEST sends
  nothing (returns ``None``: a real wait; the connection asks again after the
  next ACK or loss).
* lambda starts at 1.2, stays in [1.0, 1.3] and is updated at most once per
  min-sRTT of *s*: +0.04 if a retransmission happened since the last update
  (change of the sum of the paths' ``retransmissions`` counters), else -0.01.
  The first evaluation (or :meth:`reset`) only starts that clock.
* Linger time of *s*: n = inflight_s + 1 (packets); T = maxsrtt_s if
  n >= c_s, else minsrtt_s + (maxsrtt_s - minsrtt_s) n / c_s; T = max(T, srtt_s).
* Packets *f* sends in T: k = T / ((minsrtt_f + maxsrtt_f) / 2) + 1 (a float,
  not rounded); slow start: c_f (2^min(k, 16) - 1); congestion
  avoidance: (max(c_f, ssthresh_f + 1) + (k - 1) / 2) k.
  X = packets * MSS * lambda.
* Wait if X > max(0, send_wnd - (MSS + unacked bytes on s)).

Units: cwnd, ssthresh and bytes in flight count bytes on the wire, so they
are turned into packets with the path's ``mss``; MSS in X and in the window
term is the payload per packet (TCP's MSS is a payload size) and the unacked
bytes of *s* are scaled to payload, because the flow-control window counts
payload bytes.

``send_wnd`` is ``view.send_window`` (the connection's flow-control credit
left, what the released mp-quic BLEST uses) by default;
``send_window="total"`` uses the credit plus every path's bytes in flight,
closer to the kernel's ``meta_tp->snd_wnd`` (the window counted from the
cumulative data ACK).

More than two paths: *f* and *s* as in :mod:`baselines.rule_based.common`
(*s* = the lowest-srtt path with room); the check compares that pair.
Unprobed paths are probed as minRTT does, without the check.
"""

from __future__ import annotations

import math

from baselines.rule_based.common import slow_candidate
from envs.errors import ConfigError
from envs.scheduler import ConnectionView, Decision, Scheduler


class BLEST(Scheduler):
    name = "blest"
    #: decide() is minRTT unless the slow-path check applies (envs.rules): only then is it called
    native_rule = "minrtt_unless_slower"

    def __init__(
        self,
        lambda_init: float = 1.2,
        lambda_min: float = 1.0,
        lambda_max: float = 1.3,
        lambda_up: float = 0.04,
        lambda_down: float = 0.01,
        max_doublings: float = 16.0,
        send_window: str = "credit",
    ) -> None:
        if not lambda_min <= lambda_init <= lambda_max:
            raise ConfigError(
                f"blest: need lambda_min <= lambda_init <= lambda_max, got "
                f"{lambda_min}, {lambda_init}, {lambda_max}"
            )
        if send_window not in ("credit", "total"):
            raise ConfigError(
                f"blest: send_window must be 'credit' or 'total', got {send_window!r}"
            )
        self.lambda_init = float(lambda_init)
        self.lambda_min = float(lambda_min)
        self.lambda_max = float(lambda_max)
        self.lambda_up = float(lambda_up)
        self.lambda_down = float(lambda_down)
        self.max_doublings = float(max_doublings)
        self.send_window = send_window
        self.lam = self.lambda_init
        self._last_update: float | None = None
        self._last_retx = 0

    def reset(self, view: ConnectionView) -> None:
        self.lam = self.lambda_init
        self._last_update = view.now
        self._last_retx = _retransmissions(view.paths)

    # ------------------------------------------------------------------
    def decide(self, view: ConnectionView) -> int | Decision | None:
        paths = view.paths
        c, f = slow_candidate(paths)
        if f is None:
            return c
        s = paths[c]
        self._update_lambda(view, s)
        if self.fast_bytes(paths[f], s) > self.budget(view, s):
            return None
        return c

    def _update_lambda(self, view: ConnectionView, s) -> None:
        now = view.now
        retx = _retransmissions(view.paths)
        if self._last_update is None:
            self._last_update = now
            self._last_retx = retx
            return
        period = s.min_srtt if math.isfinite(s.min_srtt) else s.srtt
        if now - self._last_update < period:
            return
        if retx != self._last_retx:
            lam = self.lam + self.lambda_up
        else:
            lam = self.lam - self.lambda_down
        if lam > self.lambda_max:
            lam = self.lambda_max
        elif lam < self.lambda_min:
            lam = self.lambda_min
        self.lam = lam
        self._last_update = now
        self._last_retx = retx

    def linger_time(self, s) -> float:
        """T: how long a packet sent now on *s* occupies the send window [s]."""
        mss = s.mss
        c_s = s.cwnd / mss
        n = s.bytes_in_flight / mss + 1.0
        lo = s.min_srtt if math.isfinite(s.min_srtt) else s.srtt
        hi = s.max_srtt if s.max_srtt > 0.0 else s.srtt
        if n >= c_s:
            t = hi
        else:
            t = lo + (hi - lo) * n / c_s
        return t if t > s.srtt else s.srtt

    def fast_bytes(self, f, s) -> float:
        """X: payload bytes *f* can send during *s*'s linger time, times lambda."""
        t = self.linger_time(s)
        lo = f.min_srtt if math.isfinite(f.min_srtt) else f.srtt
        hi = f.max_srtt if f.max_srtt > 0.0 else f.srtt
        avg = (lo + hi) / 2.0
        if avg <= 0.0:
            return math.inf
        k = t / avg + 1.0
        mss = f.mss
        c_f = f.cwnd / mss
        if f.in_slow_start:
            packets = c_f * (2.0 ** min(k, self.max_doublings) - 1.0)
        else:
            ss = f.ssthresh / mss
            base = max(c_f, ss + 1.0) if math.isfinite(ss) else c_f
            packets = (base + (k - 1.0) / 2.0) * k
        return packets * f.payload * self.lam

    def budget(self, view: ConnectionView, s) -> float:
        """max(0, send_wnd - (MSS + unacked bytes on s)) [payload bytes]."""
        wnd = view.send_window
        if self.send_window == "total":
            for p in view.paths:
                wnd += p.bytes_in_flight * p.payload / p.mss
        b = wnd - (s.payload + s.bytes_in_flight * s.payload / s.mss)
        return b if b > 0.0 else 0.0


def _retransmissions(paths) -> int:
    total = 0
    for p in paths:
        total += p.retransmissions
    return total
