"""CUBIC congestion control (RFC 9438), byte-based.

Units: bytes and seconds; ``cwnd``, ``w_max``, ``w_est``, ``cwnd_epoch`` and
``cwnd_prior`` are bytes, ``k`` and ``t_epoch`` seconds.

The RFC states the window in segments: ``W_cubic(t) = C (t - K)^3 + W_max``
with ``C = 0.4`` segments/s^3. With windows in bytes, ``W = mss * w`` and so
``W_cubic(t) = C*mss (t - K)^3 + W_max`` [bytes] and
``K = cbrt((W_max - cwnd_epoch) / (C*mss))`` [s]. The per-ACK rules convert
the same way: the RFC adds ``(target - cwnd)/cwnd`` segments per acked
segment, i.e. ``(target - cwnd) * acked_bytes / cwnd`` bytes per
``acked_bytes``; the Reno-friendly estimate grows by
``alpha_cubic * acked_segments / cwnd`` segments, i.e.
``alpha_cubic * mss * acked_bytes / cwnd`` bytes.

Behaviour:

* slow start, recovery period and minimum/maximum window as NewReno; with
  ``hystart=True`` slow start also ends when the RTT rises (HyStart++, RFC
  9406, :mod:`envs.cc.hystart`), as tquic's and Linux's CUBIC do;
* congestion event: ``W_max = cwnd`` (fast convergence: ``cwnd*(1+beta)/2``
  if ``cwnd`` is below the previous ``W_max``), ``cwnd_prior = cwnd``,
  ``ssthresh = cwnd*beta`` (beta = 0.7), ``cwnd = max(ssthresh, min_window)``;
* the congestion-avoidance epoch starts at the first ACK that is neither in
  slow start nor in recovery (``t_epoch``, ``cwnd_epoch``, ``K``,
  ``W_est = cwnd_epoch``);
* per ACK: ``t = now - t_epoch``; if ``W_cubic(t) < W_est`` the window follows
  the Reno-friendly estimate, otherwise it moves towards
  ``target = W_cubic(t + srtt)`` clamped to ``[cwnd, 1.5 cwnd]``.
"""

from __future__ import annotations

import math

from .hystart import EXIT, HyStartPP
from .newreno import NewReno

#: RFC 9438 constants.
CUBIC_C = 0.4  # [segments / s^3]
CUBIC_BETA = 0.7  # multiplicative decrease factor


class Cubic(NewReno):
    """RFC 9438 CUBIC with Reno-friendly region and fast convergence."""

    name = "cubic"

    def __init__(
        self,
        mss: int,
        initial_window_packets: int = 32,
        min_window_packets: int = 2,
        max_window_bytes: float = float("inf"),
        group=None,
        *,
        c: float = CUBIC_C,
        beta: float = CUBIC_BETA,
        fast_convergence: bool = True,
        hystart: bool = False,
    ):
        super().__init__(mss, initial_window_packets, min_window_packets, max_window_bytes, group)
        #: HyStart++ state (:mod:`envs.cc.hystart`); None: slow start ends only on a loss
        self.hystart = HyStartPP() if hystart else None
        self.beta = float(beta)
        self.c = float(c)
        #: C scaled to bytes: [bytes / s^3]
        self.c_bytes = self.c * mss
        self.fast_convergence = bool(fast_convergence)
        #: RFC 9438 §4.3 alpha_cubic = 3 (1 - beta) / (1 + beta)
        self.alpha_reno = 3.0 * (1.0 - self.beta) / (1.0 + self.beta)
        self.w_max = 0.0  # [bytes] window at the last congestion event
        self.cwnd_prior = 0.0  # [bytes] cwnd just before the last reduction
        self.k = 0.0  # [s]
        self.t_epoch = -1.0  # [s]; < 0: no congestion-avoidance epoch yet
        self.cwnd_epoch = 0.0  # [bytes]
        self.w_est = 0.0  # [bytes] Reno-friendly estimate
        self._alpha_est = self.alpha_reno

    def w_cubic(self, t: float) -> float:
        """``W_cubic(t)`` [bytes], ``t`` [s] since the epoch start."""
        d = t - self.k
        return self.c_bytes * d * d * d + self.w_max

    def _start_epoch(self, now: float) -> None:
        cwnd = self.cwnd
        self.t_epoch = now
        self.cwnd_epoch = cwnd
        self.w_est = cwnd
        if self.w_max < cwnd:
            # Entered congestion avoidance above the last W_max (or without
            # any congestion event): start on the plateau, K = 0.
            self.w_max = cwnd
            if self.cwnd_prior < cwnd:
                self.cwnd_prior = cwnd
        self.k = math.cbrt((self.w_max - cwnd) / self.c_bytes)
        self._alpha_est = 1.0 if self.w_est >= self.cwnd_prior else self.alpha_reno

    def on_ack(self, now: float, acked_bytes: int, sent_time: float, rtt) -> None:
        """``acked_bytes`` [bytes] newly acked; ``rtt.srtt`` [s] sets the target
        horizon ``t + RTT`` (RFC 9438 §4.2)."""
        if sent_time <= self.recovery_start:
            return
        cwnd = self.cwnd
        if cwnd < self.ssthresh:
            hs = self.hystart
            if hs is None or hs.exited:  # (after a loss: plain slow start up to ssthresh)
                cwnd += acked_bytes
            else:
                divisor = hs.on_ack(now, sent_time, rtt.latest_rtt)
                if divisor == EXIT:
                    self.ssthresh = cwnd  # congestion avoidance from the next ACK on
                else:
                    cwnd += acked_bytes / divisor
        else:
            if self.t_epoch < 0.0:
                self._start_epoch(now)
            # Reno-friendly estimate (RFC 9438 §4.3), bytes.
            w_est = self.w_est + self._alpha_est * self.mss * acked_bytes / cwnd
            self.w_est = w_est
            if w_est >= self.cwnd_prior:
                self._alpha_est = 1.0
            d = now - self.t_epoch - self.k
            c = self.c_bytes
            w_max = self.w_max
            if c * d * d * d + w_max < w_est:
                # Reno-friendly region: follow W_est (never shrink on an ACK).
                if w_est > cwnd:
                    cwnd = w_est
            else:
                # Concave / convex region (RFC 9438 §4.4, §4.5).
                d += rtt.srtt
                target = c * d * d * d + w_max
                cap = 1.5 * cwnd
                if target > cap:
                    target = cap
                if target > cwnd:
                    cwnd += (target - cwnd) * acked_bytes / cwnd
        self.cwnd = cwnd if cwnd < self.max_window else self.max_window

    def _reduce(self, now: float) -> None:
        """RFC 9438 §4.6 multiplicative decrease and §4.7 fast convergence
        (a congestion event also ends HyStart++)."""
        if self.hystart is not None:
            self.hystart.on_congestion()
        cwnd = self.cwnd
        if self.fast_convergence and cwnd < self.w_max:
            self.w_max = cwnd * (1.0 + self.beta) * 0.5
        else:
            self.w_max = cwnd
        self.cwnd_prior = cwnd
        ssthresh = cwnd * self.beta
        if ssthresh < self.min_window:
            ssthresh = self.min_window
        self.ssthresh = ssthresh
        self.cwnd = ssthresh
        self.t_epoch = -1.0

    def on_persistent_congestion(self, now: float) -> None:
        """RFC 9002 §7.6.2 collapse; the next epoch restarts in congestion
        avoidance after slow start back to ``ssthresh``."""
        super().on_persistent_congestion(now)
        self.t_epoch = -1.0
