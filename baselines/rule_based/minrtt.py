"""minRTT: the default scheduler of MPTCP and MPQUIC."""

from __future__ import annotations

from baselines.rule_based.common import minrtt_choice
from envs.scheduler import ConnectionView, Decision, Scheduler


class MinRTT(Scheduler):
    """Among the paths with room, the lowest smoothed RTT; paths without an
    RTT sample yet are tried first, the one with the fewest packets sent
    (quic-go's probing rule). Waits when no path has room. Any number of paths.

    The kernel's optional opportunistic retransmission and penalisation
    (re-send the data holding the window back on the fast path, halve the
    slow path's window) is :class:`baselines.rule_based.reinjection.MinRTTOpportunistic`
    (``minrtt_or``); this class is minRTT without them, our default.
    """

    name = "minrtt"
    #: decide() is envs.rules.minrtt_pick: the compiled core takes it without a Python call
    native_rule = "minrtt"

    def decide(self, view: ConnectionView) -> int | Decision | None:
        return minrtt_choice(view.paths)
