"""HyStart++ (RFC 9406): slow start that ends on a rising round-trip time.

Plain slow start doubles the window every round trip until a loss; on a
path with a deep queue (a trace path's buffer is one BDP at its p95 rate)
that overshoots by up to a window and loses hundreds of packets at once.
Real stacks end slow start earlier, when the queue starts to build: tquic
and Linux CUBIC (HyStart, HyStart++), quic-go (Chromium's hybrid slow start).
:class:`HyStartPP` is RFC 9406's algorithm, as tquic 1.6.0 runs it in its
CUBIC (``hystart_plus_plus.rs``), for a controller that asks it at each ACK
in slow start (:class:`envs.cc.cubic.Cubic` with ``hystart=True``):

* **rounds**: a round ends when a packet sent after it began is acknowledged;
  each keeps the minimum RTT sample of its ACKs (``latest_rtt``);
* **standard slow start**: once a round has ``N_RTT_SAMPLE`` samples and its
  minimum exceeds the last round's by ``clamp(last / 8, 4 ms, 16 ms)``,
  enter conservative slow start (CSS) with that minimum as its baseline;
* **CSS**: the window grows by a quarter of the acknowledged bytes; a round
  whose minimum falls below the baseline was a spurious exit (back to
  standard slow start); after ``CSS_ROUNDS`` rounds in CSS slow start ends:
  the controller sets ``ssthresh = cwnd``;
* a congestion event ends it too (the controller's reduction).

RFC 9406's per-ACK growth limit ``L`` is infinite for a paced sender (the
emulator's default). Units: seconds.
"""

from __future__ import annotations

import math

#: RFC 9406 tuning constants (tquic's values)
N_RTT_SAMPLE = 8  # RTT samples a round needs before it is judged
MIN_RTT_THRESH_S = 0.004
MAX_RTT_THRESH_S = 0.016
MIN_RTT_DIVISOR = 8
CSS_GROWTH_DIVISOR = 4
CSS_ROUNDS = 5

#: phases; :meth:`HyStartPP.on_ack` returns the growth divisor of the ACK's bytes, or EXIT
STANDARD, CONSERVATIVE, EXITED = 0, 1, 2
#: :meth:`HyStartPP.on_ack`'s answer when slow start ends at this ACK
EXIT = 0


class HyStartPP:
    """RFC 9406's state for one path (module docstring)."""

    __slots__ = (
        "phase",
        "round_start",
        "last_round_min",
        "round_min",
        "samples",
        "css_rounds",
        "css_baseline",
    )

    def __init__(self):
        self.phase = STANDARD
        self.round_start = -math.inf  # [s] when the current round began
        self.last_round_min = math.inf  # [s]
        self.round_min = math.inf  # [s]
        self.samples = 0
        self.css_rounds = 0
        self.css_baseline = math.inf  # [s]

    @property
    def exited(self) -> bool:
        return self.phase == EXITED

    def on_ack(self, now: float, sent_time: float, latest_rtt: float) -> int:
        """One ACK in slow start (``sent_time``: of its newest acknowledged packet [s];
        ``latest_rtt``: its RTT sample [s]): the divisor of its bytes' window growth
        (1 standard, :data:`CSS_GROWTH_DIVISOR` in CSS), or :data:`EXIT` when slow start ends now."""
        if self.phase == EXITED:
            return EXIT
        if sent_time > self.round_start:  # a packet of the new round: the round ended
            self.round_start = now
            self.last_round_min = self.round_min
            self.round_min = math.inf
            self.samples = 0
            if self.phase == CONSERVATIVE:
                self.css_rounds += 1
                if self.css_rounds >= CSS_ROUNDS:
                    self.phase = EXITED
                    return EXIT
        if latest_rtt < self.round_min:
            self.round_min = latest_rtt
        self.samples += 1
        if self.samples >= N_RTT_SAMPLE:
            if self.phase == STANDARD:
                last = self.last_round_min
                if last < math.inf:
                    thresh = min(max(last / MIN_RTT_DIVISOR, MIN_RTT_THRESH_S), MAX_RTT_THRESH_S)
                    if self.round_min >= last + thresh:
                        self.css_baseline = self.round_min
                        self.phase = CONSERVATIVE
            elif self.round_min < self.css_baseline:  # the RTT fell back: a spurious exit
                self.css_baseline = math.inf
                self.css_rounds = 0
                self.phase = STANDARD
        return 1 if self.phase == STANDARD else CSS_GROWTH_DIVISOR

    def on_congestion(self) -> None:
        """A loss (or persistent congestion) ends HyStart++ for good."""
        self.phase = EXITED


__all__ = ["HyStartPP", "EXIT", "N_RTT_SAMPLE", "CSS_GROWTH_DIVISOR", "CSS_ROUNDS"]
