"""A simplified BBR v1 (Cardwell et al., ACM Queue 2016; Linux ``tcp_bbr.c``).

Units: bytes, seconds and bytes/s. BBR paces at a rate it sets itself
(``pacing_rate``, read by the path's pacer) and caps the data in flight at
``cwnd``; both follow two estimates:

* ``bandwidth`` [bytes/s]: the windowed maximum, over the last 10 round
  trips, of delivery-rate samples. A sample is the standard BBR rate sample:
  at each send the controller records the bytes delivered so far and when
  (``delivered``, ``delivered_time``) and the send time of the latest acked
  packet (``first_sent_time``); the ACK of a packet then gives
  ``(delivered_now - delivered_at_send) / max(send interval, ACK interval)``.
  Samples over an interval shorter than the min RTT are dropped. A round trip
  ends when a packet sent after the previous round's end is acknowledged.
* ``min_rtt_estimate`` [s]: the windowed minimum of the RTT samples
  (``rtt.latest_rtt``) of the last 10 s.

States (pacing gain / cwnd gain):

* STARTUP (2/ln2 / 2/ln2): leaves when the bandwidth has not grown by 25 %
  in 3 rounds (the pipe is full);
* DRAIN (ln2/2 / 2/ln2): until the bytes in flight fall to one BDP;
* PROBE_BW (cycle 1.25, 0.75, 1 x 6 / 2): one phase per min RTT, starting on
  the 1.25 phase (Linux starts on a random phase).

``pacing_rate = pacing gain x bandwidth``; it starts at the first ACK as
``2/ln2 x cwnd / srtt`` and never decreases in STARTUP (as Linux). Before any
ACK it is 0 and the pacer does not pace, as for every controller before its
first RTT sample. ``cwnd = cwnd gain x
BDP`` (BDP = bandwidth x min RTT), reached by growing ``acked`` bytes per ACK
as Linux does, and at least 4 packets; before the first bandwidth sample it
grows as in slow start.

Simplifications against BBR v1: no PROBE_RTT state (the min-RTT window just
slides), no app-limited marking of rate samples (an application that sends
less than the path carries lowers the estimate after 10 rounds), no packet
conservation in loss recovery, no send-quantum allowance in the cwnd. Losses
do not reduce the window. ``ssthresh`` is infinite in STARTUP and the minimum
window afterwards, so ``in_slow_start`` reads "in STARTUP".
"""

from __future__ import annotations

import math
from collections import deque

from .base import CongestionController

STARTUP_GAIN = 2.0 / math.log(2.0)  # ~2.885: pacing and cwnd gain of STARTUP
DRAIN_GAIN = 1.0 / STARTUP_GAIN  # pacing gain of DRAIN
CWND_GAIN = 2.0  # cwnd gain after STARTUP: cwnd = 2 BDP
PROBE_BW_GAINS = (1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
BW_WINDOW_ROUNDS = 10  # bandwidth: max over this many round trips
MIN_RTT_WINDOW_S = 10.0  # min RTT: min over this many seconds
FULL_BW_GROWTH = 1.25  # STARTUP ends when the bandwidth grows less than this...
FULL_BW_ROUNDS = 3  # ...for this many rounds
MIN_CWND_PACKETS = 4

STARTUP, DRAIN, PROBE_BW = "startup", "drain", "probe_bw"


class BBR(CongestionController):
    """Simplified BBR v1 (module docstring); uncoupled, ``group`` is ignored."""

    name = "bbr"

    def __init__(
        self,
        mss: int,
        initial_window_packets: int = 32,
        min_window_packets: int = 2,
        max_window_bytes: float = float("inf"),
        group=None,
    ):
        super().__init__(
            mss,
            initial_window_packets,
            max(min_window_packets, MIN_CWND_PACKETS),
            max_window_bytes,
            None,
        )
        self.initial_window = self.cwnd
        self.state = STARTUP
        self.pacing_gain = STARTUP_GAIN
        self.cwnd_gain = STARTUP_GAIN
        self.filled_pipe = False
        self.round_count = 0
        self.delivered = 0  # [bytes] acknowledged so far
        self.delivered_time = -1.0  # [s] of the latest ACK (or of a send from idle)
        self.first_sent_time = -1.0  # [s] send time of the latest acked packet
        self.inflight = 0  # [bytes] sent, neither acked nor lost
        self._next_round_delivered = 0
        #: per packet in flight, in send order: (send time, delivered, delivered_time, first_sent_time)
        self._sent: deque[tuple[float, int, float, float]] = deque()
        self._bw = deque()  # (round, rate): rates decreasing, front = window max
        self._rtt = deque()  # (time, rtt): rtts increasing, front = window min
        self._full_bw = 0.0
        self._full_bw_count = 0
        self._cycle_index = 0
        self._cycle_stamp = 0.0

    # -- estimates ----------------------------------------------------------
    @property
    def bandwidth(self) -> float:
        """Bottleneck bandwidth estimate [bytes/s]; 0 before the first sample."""
        return self._bw[0][1] if self._bw else 0.0

    @property
    def min_rtt_estimate(self) -> float:
        """Min RTT estimate [s] (last 10 s); infinite before the first sample."""
        return self._rtt[0][1] if self._rtt else math.inf

    def bdp(self) -> float:
        """Bandwidth-delay product [bytes]; 0 before both estimates exist."""
        bw = self.bandwidth
        return bw * self._rtt[0][1] if bw > 0.0 else 0.0

    def _add_bw_sample(self, rate: float) -> None:
        bw, r = self._bw, self.round_count
        while bw and bw[-1][1] <= rate:
            bw.pop()
        bw.append((r, rate))
        while bw[0][0] <= r - BW_WINDOW_ROUNDS:
            bw.popleft()

    def _add_rtt_sample(self, now: float, rtt: float) -> None:
        q = self._rtt
        while q and q[-1][1] >= rtt:
            q.pop()
        q.append((now, rtt))
        while q[0][0] < now - MIN_RTT_WINDOW_S:
            q.popleft()

    # -- transport callbacks --------------------------------------------------
    def on_packet_sent(self, now: float, size: int) -> None:
        if self.inflight == 0:
            # (re)start from idle: rate intervals begin now, not at the last ACK
            self.delivered_time = now
            self.first_sent_time = now
        self._sent.append((now, self.delivered, self.delivered_time, self.first_sent_time))
        self.inflight += size

    def on_ack(self, now: float, acked_bytes: int, sent_time: float, rtt) -> None:
        """``sent_time`` [s]: send time of the latest-sent newly acked packet."""
        self.delivered += acked_bytes
        self.delivered_time = now
        self.inflight = max(0, self.inflight - acked_bytes)
        if rtt.latest_rtt > 0.0:
            self._add_rtt_sample(now, rtt.latest_rtt)
        record = None
        sent = self._sent
        while sent and sent[0][0] <= sent_time:  # older ones were lost or acked already
            record = sent.popleft()
        round_start = False
        if record is not None:
            t_sent, delivered0, delivered_time0, first_sent0 = record
            self.first_sent_time = t_sent
            if delivered0 >= self._next_round_delivered:
                self._next_round_delivered = self.delivered
                self.round_count += 1
                round_start = True
            interval = max(t_sent - first_sent0, now - delivered_time0)
            if interval > 0.0 and interval >= self.min_rtt_estimate:
                self._add_bw_sample((self.delivered - delivered0) / interval)
        self._update_state(now, round_start)
        self._update_cwnd(acked_bytes)
        self._update_pacing_rate(rtt)

    def on_loss(self, now: float, lost_bytes: int, sent_time: float) -> None:
        """BBR v1 does not reduce the window on loss; only the flight shrinks."""
        self.inflight = max(0, self.inflight - lost_bytes)

    # -- state machine ------------------------------------------------------------
    def _update_state(self, now: float, round_start: bool) -> None:
        if not self.filled_pipe and round_start:
            bw = self.bandwidth
            if bw >= self._full_bw * FULL_BW_GROWTH:
                self._full_bw, self._full_bw_count = bw, 0
            else:
                self._full_bw_count += 1
                self.filled_pipe = self._full_bw_count >= FULL_BW_ROUNDS
        if self.state == STARTUP and self.filled_pipe:
            self.state, self.pacing_gain = DRAIN, DRAIN_GAIN
            self.ssthresh = self.min_window
        if self.state == DRAIN and self.inflight <= self.bdp():
            self.state, self.cwnd_gain = PROBE_BW, CWND_GAIN
            self._cycle_index, self._cycle_stamp = 0, now
            self.pacing_gain = PROBE_BW_GAINS[0]
        elif self.state == PROBE_BW and now - self._cycle_stamp > self.min_rtt_estimate:
            self._cycle_index = (self._cycle_index + 1) % len(PROBE_BW_GAINS)
            self._cycle_stamp = now
            self.pacing_gain = PROBE_BW_GAINS[self._cycle_index]

    def _update_cwnd(self, acked_bytes: int) -> None:
        cwnd = self.cwnd
        if self.bandwidth == 0.0:
            cwnd += acked_bytes  # no estimate yet: slow start
        else:
            target = self.cwnd_gain * self.bdp()
            if self.filled_pipe:
                cwnd = min(cwnd + acked_bytes, target)
            elif cwnd < target or self.delivered < self.initial_window:
                cwnd += acked_bytes
        self.cwnd = min(max(cwnd, self.min_window), self.max_window)

    def _update_pacing_rate(self, rtt) -> None:
        if self.pacing_rate == 0.0 and rtt.srtt > 0.0:  # first ACK: from the initial window
            self.pacing_rate = STARTUP_GAIN * self.cwnd / rtt.srtt
        bw = self.bandwidth
        if bw > 0.0:
            rate = self.pacing_gain * bw
            if self.filled_pipe or rate > self.pacing_rate:
                self.pacing_rate = rate


__all__ = ["BBR"]
