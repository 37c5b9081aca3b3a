"""Helpers shared by the rule-based schedulers.

Notation of the rule-based and bandit schedulers: *f* is the path with the lowest
smoothed RTT whether or not it has congestion-window room; *s* is the
lowest-RTT path among the others that has room; "room" means
``bytes_in_flight + mss <= cwnd`` (the view's ``has_room``).

Decisions taken here for every scheduler (the papers are silent on them):

* *f* is chosen among the paths that have an RTT sample: an unprobed path's
  ``srtt`` is the RFC 9002 initial guess (333 ms), not a measurement. Only
  when no path has a sample yet is *f* the lowest guess (i.e. path 0).
* Ties in srtt go to the lowest path index, in :func:`fastest` and in
  :func:`minrtt_choice` alike, so ``minrtt_choice(paths) == fastest(paths)``
  exactly when *f* has room (and no path is still unprobed).
* With more than two paths, *s* is the minRTT choice when *f* has no room,
  i.e. the lowest-srtt path with room, and BLEST/ECF compare that pair only
  (as the Linux MPTCP BLEST/ECF schedulers compare the lowest-RTT subflow with
  the lowest-RTT *available* one).

These functions run once per packet: plain loops, no allocation.
"""

from __future__ import annotations

from envs.scheduler import ConnectionView

INF = float("inf")


def fastest(paths) -> int:
    """Index of *f*: the lowest srtt among paths with an RTT sample (lowest
    index on ties); the lowest srtt of all paths if none has a sample; -1 if
    there are no paths."""
    best = -1
    best_srtt = INF
    for i, p in enumerate(paths):
        if p.has_rtt_sample and p.srtt < best_srtt:
            best = i
            best_srtt = p.srtt
    if best < 0:
        for i, p in enumerate(paths):
            if p.srtt < best_srtt:
                best = i
                best_srtt = p.srtt
        if best < 0 and paths:
            best = 0
    return best


def minrtt_choice(paths) -> int | None:
    """The minRTT decision: an unprobed path (no RTT sample) with room first,
    the one with the fewest packets sent; else the lowest-srtt path with room;
    ``None`` when no path has room."""
    best = -1
    best_srtt = INF
    probe = -1
    probe_sent = INF
    for i, p in enumerate(paths):
        if not p.has_room:
            continue
        if not p.has_rtt_sample:
            if p.packets_sent < probe_sent:
                probe = i
                probe_sent = p.packets_sent
        elif p.srtt < best_srtt:
            best = i
            best_srtt = p.srtt
    if probe >= 0:
        return probe
    return best if best >= 0 else None


def slow_candidate(paths) -> tuple[int | None, int | None]:
    """``(c, f)``: minRTT's choice ``c`` and, when ``c`` is a slower path
    with an RTT sample (the case BLEST and ECF weigh against waiting), the
    fastest path ``f``; ``(c, None)`` when ``c`` is None, the fastest path,
    or not probed yet (send there, or wait for room)."""
    c = minrtt_choice(paths)
    if c is None:
        return None, None
    f = fastest(paths)
    if c == f or not paths[c].has_rtt_sample:
        return c, None
    return c, f


def model_gap_bytes(paths, i: int) -> float:
    """The model GAP of path ``i`` [payload bytes]: the data the probed paths
    faster than ``i`` deliver during its extra one-way delay, sum over j with
    0 < srtt_j < srtt_i of cwnd_j / srtt_j x (srtt_i - srtt_j) / 2, in payload
    bytes (symmetric delays assumed). STMS starts from it; GAPS builds on it."""
    r_i = paths[i].srtt
    g = 0.0
    for j, p in enumerate(paths):
        if j != i and p.has_rtt_sample and p.srtt < r_i and p.srtt > 0.0:
            g += p.cwnd / p.srtt * (r_i - p.srtt) * 0.5 * p.payload / p.mss
    return g


def gap_limit(view: ConnectionView) -> int:
    """Largest gap [bytes] that still leaves a full packet of unsent data at
    the target offset, whatever stream the application's stream scheduler
    picks: the smallest ``remaining`` of the pending streams minus one
    payload (0 if none). A larger gap would make the transport send a short
    packet from the end of the stream.

    The gap is also kept within the connection flow-control credit:
    gap + payload <= ``view.send_window``. The stream's first unsent offset
    is at most the bytes sent so far, so this keeps the gapped packet below
    the receiver's offset limit (``max_data``), as a QUIC sender must
    (RFC 9000 §4.1). Without it a gapped packet can be placed beyond that
    limit; the emulator charges flow-control credit per byte sent, so the
    out-of-order data can then use up the credit while the hole the
    receiver waits for stays unsent: no window update ever comes and the
    connection stalls (observed with STMS, 50/20 + 10/200 Mbit/s/ms, 5 MB).
    With the cap the credit left always covers the holes below the highest
    offset sent, so they can still be filled."""
    smallest = INF
    for st in view.streams_pending():
        r = st.remaining
        if r < smallest:
            smallest = r
    if smallest == INF:
        return 0
    lim = int(smallest) - view.payload
    fc = int(view.send_window) - view.payload
    if fc < lim:
        lim = fc
    return lim if lim > 0 else 0


def round_to_packets(nbytes: float, payload: int) -> int:
    """Round a byte count to the nearest multiple of ``payload`` (>= 0), so
    that gapped packets stay aligned to packet boundaries."""
    if nbytes <= 0.0 or payload <= 0:
        return 0
    return int(nbytes / payload + 0.5) * payload
