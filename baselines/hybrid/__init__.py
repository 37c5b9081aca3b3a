"""Hybrid MPTCP (Pokhrel, Choi, Walid, "Fair and Efficient Distributed Edge
Learning with Hybrid Multipath TCP", IEEE/ACM ToN 2023): a DDPG agent with an
LSTM over the subflows that sets the subflows' windows and schedule shares once
per time slot, the path's congestion control (LIA) moving the windows in
between; DRL-MPTCP is the same agent without that inner loop.

The agent (``baselines.hybrid.agent``) imports torch; import it by name (the
registry entries ``hybrid`` and ``drl_mptcp`` are ``"module:Class"`` strings)
so that ``import baselines`` stays light.
"""
