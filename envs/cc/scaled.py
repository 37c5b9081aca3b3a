"""A scaled window: another controller's window times a gain set from outside.

:class:`ScaledWindow` wraps an inner controller (LIA for Hybrid MPTCP's
``action: gain``, :mod:`baselines.hybrid.agent`). The path sends with
``cwnd = gain x inner.cwnd`` (clamped to [``min_window``, ``max_window``]);
the inner controller keeps its own dynamics as if it were a flow with its
own window: every ACK is forwarded with ``acked_bytes / gain`` (the bytes of
its share of the window), every loss and probe timeout as is,
so a loss still halves the path's window and the coupled increase (LIA's
``alpha``) still reads the inner windows of its group. ``gain`` changes only
through :meth:`set_gain`: an agent that sets a per-subflow aggressiveness on
top of a model-based controller, which keeps reacting to every loss between
the agent's decisions (a one-shot ``cwnd x 2^a`` on the inner controller is
undone by its next halvings).

Only window-based controllers can be wrapped: one with a per-packet hook
(``on_packet_sent``: BBR's pacing) is refused, so that the wrapper adds no
call to the emulator's per-packet loop.

Units: bytes and seconds; ``gain`` is dimensionless.
"""

from __future__ import annotations

from .base import CongestionController


class ScaledWindow(CongestionController):
    """``gain x inner.cwnd`` (module docstring)."""

    name = "scaled"

    def __init__(self, inner: CongestionController, gain: float = 1.0):
        super().__init__(inner.mss, 1, 1, inner.max_window, None)
        if not gain > 0.0:
            raise ValueError(f"ScaledWindow: the gain must be positive, got {gain!r}")
        if type(inner).on_packet_sent is not CongestionController.on_packet_sent:
            raise ValueError(
                f"ScaledWindow: {type(inner).__name__} has a per-packet hook; only window-based "
                "controllers can be wrapped"
            )
        self.inner = inner
        self.gain = float(gain)
        self.min_window = inner.min_window
        self.srtt = inner.srtt
        self._sync()

    def _sync(self) -> None:
        inner = self.inner
        w = self.gain * inner.cwnd
        self.cwnd = (
            self.min_window
            if w < self.min_window
            else (self.max_window if w > self.max_window else w)
        )
        self.ssthresh = self.gain * inner.ssthresh
        self.recovery_start = inner.recovery_start

    def set_gain(self, gain: float) -> None:
        """The new gain (> 0) from now on; the window follows at once."""
        if not gain > 0.0:
            raise ValueError(f"ScaledWindow: the gain must be positive, got {gain!r}")
        self.gain = float(gain)
        self._sync()

    def on_ack(self, now: float, acked_bytes: int, sent_time: float, rtt) -> None:
        inner = self.inner
        inner.srtt = self.srtt
        inner.on_ack(now, acked_bytes / self.gain, sent_time, rtt)
        self._sync()

    def on_loss(self, now: float, lost_bytes: int, sent_time: float) -> None:
        self.inner.on_loss(now, lost_bytes, sent_time)
        self._sync()

    def on_pto(self, now: float) -> None:
        self.inner.on_pto(now)
        self._sync()


__all__ = ["ScaledWindow"]
