"""FALCON-S (paper Sec. VI-C): FALCON with a stream-aware state for web pages."""

from __future__ import annotations

import math

from envs.mdp import (
    COMPLETION_HIGH,
    COMPLETION_PATH_FEATURES,
    OBS_HIGH,
    RATE_SCALE_PKTS,
    RTT_SCALE_S,
    completion_features_into,
)
from falcon.online.scheduler import FalconScheduler


class FalconSScheduler(FalconScheduler):
    """FALCON-S (paper Sec. VI-C): FALCON with a stream-aware state for web pages.

    The state keeps FALCON's size and units (4 features per path, so the
    same bank serves both; :func:`envs.gym_env.observe_into`), two features
    change. Let ``s`` be the stream that the connection's smooth weighted
    round robin serves next (the active stream maximising ``swrr_current +
    weight``, first in order on ties, exactly the next pick of
    ``envs.streams.wrr_pick``), ``w_s`` its weight and ``W`` the summed weight
    of the streams with unsent data (the concurrent streams). Per path,
    with ``c = 1 / (srtt / 0.1 s * 1000)``:

    * ``cwnd`` feature: ``(cwnd / mss) * (w_s / W) * c``: the path's
      congestion window split by the weights of the concurrent streams, the
      share stream ``s`` gets;
    * ``swnd`` feature: ``min(remaining_s, send_window * w_s / W) /
      payload * c``: stream ``s``'s send window, its share of the
      connection's flow-control credit capped by its own unsent bytes;
    * in-flight packets and RTT: as FALCON.

    With no stream pending (retransmissions only) or one stream (bulk),
    ``w_s / W = 1`` and the swnd feature is capped by that stream's unsent
    bytes only. Every feature is clipped at ``OBS_HIGH`` like FALCON's.

    On a completion-MDP bank (:meth:`_completion_features`) the same idea:
    each path's rate feature uses its window share ``w_s / W``, and the
    unsent bytes and flow-control credit are stream ``s``'s (its unsent
    bytes, its send credit), so the state keeps its size.
    """

    name = "falcon_s"

    def _stream_share(self, view) -> tuple[float, float, float | None]:
        """``(w_s / W, stream s's send credit, its unsent bytes)`` of the
        stream served next [bytes]; with no stream pending ``(1, the
        connection's credit, None)``."""
        streams = view.streams_pending()
        credit = float(view.send_window)
        share = 1.0
        remaining = None
        if streams:
            best = None
            best_v = -math.inf
            total = 0.0
            for st in streams:
                w = st.weight
                total += w
                v = getattr(st, "swrr_current", 0.0) + w
                if v > best_v:
                    best, best_v = st, v
            share = best.weight / total if total > 0 else 1.0
            remaining = float(best.remaining)
            credit = min(remaining, credit * share)
        return share, credit, remaining

    def _completion_features(self, view, now: float, finish: float, vals: list) -> list:
        """Completion MDP: the same state with stream ``s``'s view of it: each
        path's rate feature from its window share ``w_s / W``, and the
        connection's unsent bytes and flow-control credit replaced by stream
        ``s``'s (its unsent bytes, its send credit)."""
        completion_features_into(view, now, finish, vals)
        share, credit, remaining = self._stream_share(view)
        per = len(COMPLETION_PATH_FEATURES)
        for i, p in enumerate(view.paths):
            vals[per * i] = min(
                math.log1p(p.cwnd * share / p.mss / p.srtt / 100.0), COMPLETION_HIGH
            )
        k = per * len(view.paths)
        vals[k + 1] = math.log1p((view.pending_bytes if remaining is None else remaining) / 1e5)
        vals[k + 2] = min(max(credit / 1e6, 0.0), 10.0)
        return vals

    def _observe(self, view) -> list:
        vals = self._vals
        share, credit, _ = self._stream_share(view)
        swnd = credit / view.payload
        k = 0
        for p in view.paths:
            rtt = p.srtt / RTT_SCALE_S
            c = 1.0 / (rtt * RATE_SCALE_PKTS)
            vals[k] = min(p.cwnd / p.mss * share * c, OBS_HIGH)
            vals[k + 1] = min(p.packets_in_flight * c, OBS_HIGH)
            vals[k + 2] = min(swnd * c, OBS_HIGH)
            vals[k + 3] = min(rtt, OBS_HIGH)
            k += 4
        return vals


__all__ = ["FalconSScheduler"]
