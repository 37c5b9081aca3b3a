"""Hybrid MPTCP (seed 002, design/SPEC-hybrid.md): a DDPG agent with an LSTM
over the subflows that sets the subflows' windows and schedule shares once
per time slot, the path's congestion control (LIA) moving the windows in
between; DRL-MPTCP is the same agent without that inner loop.

The agent (``baselines.hybrid.agent``) imports torch; import it by name (the
registry entries ``hybrid`` and ``drl_mptcp`` are ``"module:Class"`` strings)
so that ``import baselines`` stays light.
"""
