"""minRTT: the default scheduler of MPTCP and MPQUIC."""

from __future__ import annotations

from baselines.rule_based.common import minrtt_choice
from envs.scheduler import Scheduler


class MinRTT(Scheduler):
    """Among the paths with room, the lowest smoothed RTT; paths without an
    RTT sample yet are tried first, the one with the fewest packets sent
    (quic-go's probing rule). Waits when no path has room. Any number of paths.

    Not implemented: the optional kernel behaviour of the spec (when the
    connection send window is full, reinject the head segment on the fast
    path and halve the slow path's cwnd at most once per RTT). It needs two
    transport hooks that :mod:`envs.transport` does not offer: re-sending a
    segment that is still in flight on another path, and capping another
    path's congestion window. It is off by default in the spec, so this class
    is the spec's default minRTT.
    """

    name = "minrtt"
    #: decide() is envs.rules.minrtt_pick: the compiled core takes it without a Python call
    native_rule = "minrtt"

    def decide(self, view):
        return minrtt_choice(view.paths)
