"""ECF: earliest completion first (Lim et al., CoNEXT 2017).

Rules (reconstructed from the paper and the released mp-quic ECF):

* Consulted when *f* has no room and minRTT would send on *s* (as in the
  mp-quic ECF). Unlike the released mp-quic version, whose send loop never
  lets it wait, a wait here is real: :meth:`ECF.decide` returns ``None`` and
  the connection asks again after the next ACK, loss or application event.
* x_f = max(k, c_f), x_s = max(k, c_s), delta = max(rttvar_f, rttvar_s),
  k = bytes not yet sent (``view.pending_bytes``, retransmissions included),
  c = cwnd, R = srtt, w = waiting flag (starts 0), beta = 0.25:

  - if R_f (x_f + c_f) < (1 + w beta) c_f (R_s + delta):
      if R_s x_s >= c_s (2 R_f + delta): w = 1, wait; else send on s (w kept);
  - else w = 0, send on s.

Units: both inequalities are homogeneous (bytes x seconds); k counts payload
bytes and is scaled to wire bytes (``mss / payload``) like the cwnds.

More than two paths: *f* and *s* as in :mod:`baselines.rule_based.common`
(*s* = the lowest-srtt path with room); one waiting flag per connection, as
in the kernel and mp-quic. Unprobed paths are probed as minRTT does, without
the check.
"""

from __future__ import annotations

from baselines.rule_based.common import slow_candidate
from envs.scheduler import ConnectionView, Decision, Scheduler


class ECF(Scheduler):
    name = "ecf"
    #: decide() is minRTT unless the slow-path check applies (envs.rules): only then is it called
    native_rule = "minrtt_unless_slower"

    def __init__(self, beta: float = 0.25) -> None:
        self.beta = float(beta)
        self.waiting = 0

    def reset(self, view: ConnectionView) -> None:
        self.waiting = 0

    def decide(self, view: ConnectionView) -> int | Decision | None:
        paths = view.paths
        c, fi = slow_candidate(paths)
        if fi is None:
            return c
        f = paths[fi]
        s = paths[c]
        k = view.pending_bytes * s.mss / s.payload
        c_f = f.cwnd
        c_s = s.cwnd
        r_f = f.srtt
        r_s = s.srtt
        delta = f.rttvar if f.rttvar > s.rttvar else s.rttvar
        x_f = k if k > c_f else c_f
        if r_f * (x_f + c_f) < (1.0 + self.waiting * self.beta) * c_f * (r_s + delta):
            x_s = k if k > c_s else c_s
            if r_s * x_s >= c_s * (2.0 * r_f + delta):
                self.waiting = 1
                return None
            return c
        self.waiting = 0
        return c
