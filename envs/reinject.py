"""Re-injection (:mod:`envs.scheduler`): copies of data in flight on one path
sent on another, for the connection of :mod:`envs.transport`. Units: seconds
and bytes.

The copy is of the frame in flight longest (earliest sent) among those that
are in flight as their only copy on the other paths; marking its record
*shared* (:mod:`envs.sent`) lets the connection count an acknowledgement of
either copy once and skip the retransmission of a lost copy whose twin was
acknowledged. The receiver keeps the first copy to arrive. The connection
asks :func:`possible` at every decision with nothing new to send when its
scheduler re-injects, so these functions are part of the compiled core
(``reinject.pxd``): a re-injecting scheduler (the mode MDP's, ``minrtt_or``,
the oracle family's tail copies) spends most of a download's tail there.
"""

from __future__ import annotations

import math


def candidate(conn, path: int):
    """``(source path, packet number)`` of the frame a re-injection on ``path`` would copy
    (module docstring; ties: the lower path index); None if there is none. Each path's search
    resumes at ``conn._reinject_from`` (only re-injection and loss change which of its frames
    are single copies in flight, and never back)."""
    best = None
    best_t = math.inf
    cursor = conn._reinject_from
    for q in conn.paths:
        i = q.index
        if i == path:
            continue
        pn = q.sent.first_single(cursor[i])
        if pn < 0:
            cursor[i] = q.sent.hi
            continue
        cursor[i] = pn
        t = q.sent.time_sent(pn)
        if t < best_t:
            best_t = t
            best = (i, pn)
    return best


def source(conn, path: int):
    """The path whose frame a re-injection on ``path`` would copy; None if none."""
    c = candidate(conn, path)
    return None if c is None else c[0]


def sent_time(conn, path: int):
    """When the frame a re-injection on ``path`` would copy was sent [s]; None if none."""
    c = candidate(conn, path)
    return None if c is None else conn.paths[c[0]].sent[c[1]][0]


def possible(conn) -> bool:
    """Some open path could carry a copy of a frame in flight on another path."""
    for p in conn.paths:  # a loop, not any() over a generator: the compiled core runs it in C
        if p.is_open and candidate(conn, p.index) is not None:
            return True
    return False


def send_copy(conn, ps) -> bool:
    """Send on path sender ``ps`` a copy of the frame :func:`candidate` names; False if none."""
    c = candidate(conn, ps.index)
    if c is None:
        return False
    sent = conn.paths[c[0]].sent
    _t, _size, sid, off, length = sent[c[1]]
    sent.mark_shared(c[1])  # two copies of its frame now (envs.sent)
    conn.reinjected_bytes += length
    conn.reinjected_packets += 1
    conn._transmit(ps, sid, off, length, True)
    return True


def penalise(conn, path: int) -> bool:
    """Linux MPTCP's penalisation of ``path`` (``mptcp_rcv_buf_optimization``): halve its
    congestion window (:meth:`envs.cc.base.CongestionController.penalise`), at most once per
    its smoothed RTT; returns whether it did."""
    ps = conn.paths[path]
    now = conn.sim.now
    if now - conn._penalised_at[path] < ps.srtt:
        return False
    conn._penalised_at[path] = now
    ps.cc.penalise()
    return True


__all__ = ["candidate", "source", "sent_time", "possible", "send_copy", "penalise"]
