"""The state of the mode MDP (:mod:`baselines.modes`): what each path did
during the last decision epoch, beside what its estimates say.

The completion MDP (:mod:`envs.mdp`) describes a path by its congestion
controller's estimates (``cwnd / srtt``, ``srtt``), which stay where they were
while a path delivers nothing: a path in an outage looks as good as before it
(no ACK, no new RTT sample). The mode state adds what the transport measured
over the last epoch, per path:

========================  ==================================================
``log_rate``              ``log(1 + cwnd/srtt / 100 packets/s)`` (the estimate)
``srtt``                  smoothed RTT / 100 ms, in [0, 10]
``rtt_cv``                rttvar / srtt, in [0, 3]
``log_delivery``          ``log(1 + delivered / 100 packets/s)``: payload
                          acknowledged on the path during the epoch, per s
``ack_age``               time since the path's last newly acknowledged
                          payload while it has data in flight, / max(srtt,
                          10 ms), in [0, 20] (0 with nothing in flight)
``epoch_loss``            packets declared lost / (packets sent + 1) during
                          the epoch, in [0, 1]
``usable``                1 when the path is open and has an RTT sample
========================  ==================================================

then four connection entries: ``log(1 + unacknowledged bytes / 100 kB)``,
the time since the first decision / 1 s (in [0, 30]), and the mode in force
(its share of packets on path 0, -1 for a rule, and 1 if it re-injects).

Units: seconds and bytes from the view; every entry clipped to its range.
"""

from __future__ import annotations

import math

import numpy as np

from envs.scheduler import ConnectionView

PATH_FEATURES = ("log_rate", "srtt", "rtt_cv", "log_delivery", "ack_age", "epoch_loss", "usable")
GLOBAL_FEATURES = ("log_unacked", "elapsed", "mode_share", "mode_reinject")
#: packets/s unit of the rate entries
RATE_UNIT = 100.0
#: bytes unit of the unacknowledged-data entry
BYTES_UNIT = 1e5
#: floor of the RTT that scales the ACK age [s]
ACK_AGE_FLOOR_S = 0.01
#: per feature, the range :meth:`EpochObserver.observe` keeps it in
RANGES = {
    "log_rate": (0.0, 30.0),
    "srtt": (0.0, 10.0),
    "rtt_cv": (0.0, 3.0),
    "log_delivery": (0.0, 30.0),
    "ack_age": (0.0, 20.0),
    "epoch_loss": (0.0, 1.0),
    "usable": (0.0, 1.0),
    "log_unacked": (0.0, 30.0),  # not clipped: log(1 + bytes / 100 kB) reaches 30 at 1e18 bytes
    "elapsed": (0.0, 30.0),
    "mode_share": (-1.0, 1.0),
    "mode_reinject": (0.0, 1.0),
}
_LOG_RATE_MAX = RANGES["log_rate"][1]
_SRTT_MAX = RANGES["srtt"][1]
_RTT_CV_MAX = RANGES["rtt_cv"][1]
_LOG_DELIVERY_MAX = RANGES["log_delivery"][1]
_ACK_AGE_MAX = RANGES["ack_age"][1]
_ELAPSED_MAX = RANGES["elapsed"][1]


def n_inputs(n_paths: int) -> int:
    """Length of the mode state of ``n_paths`` paths."""
    return len(PATH_FEATURES) * n_paths + len(GLOBAL_FEATURES)


def feature_names(n_paths: int) -> list[str]:
    return [f"path{i}_{f}" for i in range(n_paths) for f in PATH_FEATURES] + list(GLOBAL_FEATURES)


def _clip(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


class EpochObserver:
    """Per-path counters at the start of the current epoch and the time each
    path last had payload newly acknowledged; :meth:`observe` writes the state
    and starts a new epoch."""

    def __init__(self) -> None:
        self.t0 = self.t_start = 0.0
        self.acked: list[int] = []
        self.sent: list[int] = []
        self.lost: list[int] = []
        self.last_ack: list[float] = []
        self.snapshot: list[int] = []

    def reset(self, view: ConnectionView) -> None:
        now = view.now
        self.t0 = self.t_start = now
        self.acked = [p.payload_bytes_acked for p in view.paths]
        self.sent = [p.packets_sent for p in view.paths]
        self.lost = [p.packets_lost for p in view.paths]
        self.last_ack = [now] * len(view.paths)
        self.snapshot = list(self.acked)

    def track(self, view: ConnectionView) -> None:
        """Note which paths had payload newly acknowledged (called at every decision)."""
        now = view.now
        for i, p in enumerate(view.paths):
            a = p.payload_bytes_acked
            if a != self.snapshot[i]:
                self.snapshot[i] = a
                self.last_ack[i] = now

    def observe(self, view: ConnectionView, mode_share: float, mode_reinject: float) -> np.ndarray:
        """The state (module docstring) at ``view.now``; a new epoch starts."""
        self.track(view)
        now = view.now
        dt = max(now - self.t0, 1e-6)
        out = []
        unacked = view.pending_bytes
        for i, p in enumerate(view.paths):
            srtt = p.srtt
            out.append(min(math.log1p(p.cwnd / p.mss / srtt / RATE_UNIT), _LOG_RATE_MAX))
            out.append(_clip(srtt / 0.1, 0.0, _SRTT_MAX))
            out.append(_clip(p.rttvar / srtt, 0.0, _RTT_CV_MAX))
            delivered = (p.payload_bytes_acked - self.acked[i]) / p.payload / dt
            out.append(min(math.log1p(delivered / RATE_UNIT), _LOG_DELIVERY_MAX))
            age = (
                (now - self.last_ack[i]) / max(srtt, ACK_AGE_FLOOR_S)
                if p.bytes_in_flight > 0
                else 0.0
            )
            out.append(_clip(age, 0.0, _ACK_AGE_MAX))
            out.append(
                _clip(
                    (p.packets_lost - self.lost[i]) / (p.packets_sent - self.sent[i] + 1.0),
                    0.0,
                    1.0,
                )
            )
            out.append(1.0 if p.is_open and p.has_rtt_sample else 0.0)
            unacked += p.bytes_in_flight
            self.acked[i] = p.payload_bytes_acked
            self.sent[i] = p.packets_sent
            self.lost[i] = p.packets_lost
        out.append(math.log1p(unacked / BYTES_UNIT))
        out.append(_clip(now - self.t_start, 0.0, _ELAPSED_MAX))
        out.append(float(mode_share))
        out.append(float(mode_reinject))
        self.t0 = now
        return np.asarray(out, dtype=np.float32)


__all__ = [
    "PATH_FEATURES",
    "GLOBAL_FEATURES",
    "RATE_UNIT",
    "BYTES_UNIT",
    "RANGES",
    "n_inputs",
    "feature_names",
    "EpochObserver",
]
