"""GAPS: a DDPG agent with a Transformer encoder that sets per-subflow
GAPs to keep the receiver's out-of-order queue small, the baselines as GAP
schedulers, and the TRUE GAP sweep.

The agent (``baselines.gaps.agent``) imports torch; import it by name (the
registry entry ``gaps`` is a ``"module:Class"`` string) so that ``import
baselines`` stays light.
"""
