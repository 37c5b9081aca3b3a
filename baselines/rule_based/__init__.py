"""Rule-based multipath schedulers: round robin, minRTT, BLEST, ECF, DAPS, STMS,
STTF and DEMS (the HOP paper's comparisons), the re-injecting and redundant
schedulers (minRTT with Linux MPTCP's opportunistic retransmission, XLINK-style
tail re-injection, redundant), and the references of the learnability suite
(the fixed split and the oracle's policy family).

Each is a :class:`envs.scheduler.Scheduler` with a registry ``name``; the
exact rules (reconstructed from the papers and the released implementations)
are in each module's docstring.
"""

from baselines.rule_based.blest import BLEST
from baselines.rule_based.daps import DAPS
from baselines.rule_based.dems import DEMS
from baselines.rule_based.ecf import ECF
from baselines.rule_based.fixed_split import FixedSplit
from baselines.rule_based.minrtt import MinRTT
from baselines.rule_based.policy_family import SplitThreshold
from baselines.rule_based.reinjection import MinRTTOpportunistic, MinRTTTailReinjection, Redundant
from baselines.rule_based.roundrobin import RoundRobin
from baselines.rule_based.stms import STMS
from baselines.rule_based.sttf import STTF

__all__ = [
    "RoundRobin",
    "MinRTT",
    "BLEST",
    "ECF",
    "DAPS",
    "STMS",
    "STTF",
    "DEMS",
    "FixedSplit",
    "MinRTTOpportunistic",
    "MinRTTTailReinjection",
    "Redundant",
    "SplitThreshold",
]
