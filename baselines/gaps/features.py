"""GAPS's state: one token of features per subflow, in ascending sRTT order.

The GAPS paper lists RTT, CWND, PDR (undefined there; ours: delivery rate),
PLR, RWND and data ACKed per subflow. Three more are ours, because the
action is a *change* of the GAP and the reward is the out-of-order queue: without the current GAP
and OQS the state does not tell what the action changes (not Markov), and
without the window fill it does not tell whether a subflow is about to send.
``model_gap`` is the GAP a fluid model predicts (:func:`model_gaps`): what
the agent's ``gap_base: model`` variant starts from.

| feature | definition |
| --- | --- |
| ``rtt`` | sRTT / 0.1 s, clipped to [0, 10] |
| ``cwnd`` | cwnd [packets] / 100, clipped to [0, 100] |
| ``fill`` | bytes in flight / cwnd, clipped to [0, 2] |
| ``delivery_rate`` | payload bytes acknowledged per second, smoothed over one sRTT, / 100 Mbit/s |
| ``loss_rate`` | packets declared lost / (packets sent + 1) |
| ``rwnd`` | connection flow-control credit [bytes] / 1 MB, clipped to [0, 10] (the same for every subflow) |
| ``data_acked`` | payload packets acknowledged on the subflow since the previous decision / 10 |
| ``gap`` | the subflow's current GAP / max_gap |
| ``model_gap`` | the model GAP of the subflow (:func:`model_gaps`) / max_gap |
| ``oqs`` | the receiver's out-of-order queue as the latest ACK reported it [payload packets] / 100 |
"""

from __future__ import annotations

import math

import numpy as np

from baselines.rule_based.common import model_gap_bytes

FEATURES = (
    "rtt",
    "cwnd",
    "fill",
    "delivery_rate",
    "loss_rate",
    "rwnd",
    "data_acked",
    "gap",
    "model_gap",
    "oqs",
)
N_FEATURES = len(FEATURES)
#: delivery-rate unit [bytes/s]: 100 Mbit/s
RATE_UNIT = 12.5e6


def model_gaps(paths) -> list[float]:
    """Per path, its model GAP [payload packets]
    (:func:`baselines.rule_based.common.model_gap_bytes`: what the faster
    probed paths deliver during its extra one-way delay); 0 for an unprobed path."""
    return [
        model_gap_bytes(paths, i) / p.payload if p.has_rtt_sample else 0.0
        for i, p in enumerate(paths)
    ]


def rtt_order(paths) -> list[int]:
    """Path indices by ascending sRTT (ties: lower index first)."""
    return sorted(range(len(paths)), key=lambda i: (paths[i].srtt, i))


class SubflowObserver:
    """Builds the state of each decision (module docstring) and keeps the
    per-subflow history it needs (acknowledged bytes, smoothed delivery rate)."""

    def __init__(self, max_subflows: int):
        self.max_subflows = int(max_subflows)
        self.reset(0, 0.0)

    def reset(self, n_paths: int, now: float) -> None:
        self._acked = [0] * n_paths  # payload_bytes_acked at the previous decision
        self._rate = [0.0] * n_paths  # smoothed delivery rate [bytes/s]
        self._pending = [0] * n_paths  # bytes acked at the same instant as the previous decision
        self._t = now

    def observe(
        self, view, gaps: list[float], model: list[float], max_gap: float
    ) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """``(x [S, F] float32, mask [S] float32, order)``: ``order[r]`` is the
        path index of token r; ``gaps`` (the GAPs in force) and ``model``
        (:func:`model_gaps`) are per path index [packets]."""
        paths = view.paths
        n = len(paths)
        if len(self._acked) != n:
            self.reset(n, view.now)
        now = view.now
        dt = now - self._t
        payload = view.payload
        x = np.zeros((self.max_subflows, len(FEATURES)), np.float32)
        mask = np.zeros(self.max_subflows, np.float32)
        order = rtt_order(paths)
        rwnd = min(max(view.send_window / 1e6, 0.0), 10.0)
        oqs = view.peer_oqs / payload / 100.0
        for r, i in enumerate(order):
            p = paths[i]
            acked = p.payload_bytes_acked
            delta = acked - self._acked[i] + self._pending[i]
            self._acked[i] = acked
            if dt > 0.0:
                w = 1.0 - math.exp(-dt / max(p.srtt, 1e-3))
                self._rate[i] += w * (delta / dt - self._rate[i])
                self._pending[i] = 0
            else:
                self._pending[i] = delta
            cwnd = p.cwnd
            x[r] = (
                min(p.srtt / 0.1, 10.0),
                min(cwnd / p.mss / 100.0, 100.0),
                min(p.bytes_in_flight / cwnd, 2.0) if cwnd > 0 else 0.0,
                self._rate[i] / RATE_UNIT,
                p.packets_lost / (p.packets_sent + 1),
                rwnd,
                delta / payload / 10.0,
                gaps[i] / max_gap if max_gap > 0 else 0.0,
                model[i] / max_gap if max_gap > 0 else 0.0,
                oqs,
            )
            mask[r] = 1.0
        if dt > 0.0:
            self._t = now
        return x, mask, order


__all__ = ["FEATURES", "N_FEATURES", "SubflowObserver", "model_gaps", "rtt_order"]
