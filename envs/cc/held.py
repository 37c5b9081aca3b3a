"""A held window: no congestion control of its own.

:class:`HeldWindow` ignores ACKs, losses and probe timeouts; its ``cwnd``
[bytes] changes only when something outside sets it (the DRL-MPTCP baseline
of ``baselines/hybrid``: an agent sets every subflow's window once per time
slot and nothing moves it in between). It starts at the initial window (the
scenario's ``initial_window_packets`` x ``mss``), is never in slow start
(``ssthresh`` = 0) and keeps the path's sRTT in ``srtt`` as every controller
does. Setting ``cwnd`` from outside should respect ``min_window`` and
``max_window``; the controller does not clamp what it is given.
"""

from __future__ import annotations

from .base import CongestionController


class HeldWindow(CongestionController):
    """The window stays where it was set (module docstring); ``group`` is ignored."""

    name = "held"

    def __init__(
        self,
        mss: int,
        initial_window_packets: int = 32,
        min_window_packets: int = 2,
        max_window_bytes: float = float("inf"),
        group=None,
    ):
        super().__init__(mss, initial_window_packets, min_window_packets, max_window_bytes, None)
        self.ssthresh = 0.0

    def on_ack(self, now: float, acked_bytes: int, sent_time: float, rtt) -> None:
        srtt = rtt.srtt
        if srtt > 0.0:
            self.srtt = srtt

    def on_loss(self, now: float, lost_bytes: int, sent_time: float) -> None:
        pass
