"""Comparison schedulers (rule-based, bandit, learning) and their registry.

``SCHEDULERS`` maps a registry name to a :class:`envs.scheduler.Scheduler`
subclass, or to a ``"module:Class"`` string that :func:`make_scheduler`
imports on first use. Heavy schedulers (anything importing torch) should
register as strings so that ``import baselines`` stays light, e.g.::

    SCHEDULERS["dqn_on"] = "baselines.dqn:DQNOn"

Names beyond this table: the schedulers of higher layers (``falcon``,
``falcon_s``: entry points of the project's own distribution) and plug-ins of
other installed packages (entry-point group ``falcon.schedulers``), or an
import path ``module:Class``; :func:`baselines.registry.resolve_scheduler`
says what a name means (docs/guide/plugins.md).
"""

from __future__ import annotations

from baselines.registry import resolve_scheduler
from baselines.rule_based import (
    BLEST,
    DAPS,
    DEMS,
    ECF,
    STMS,
    STTF,
    FixedSplit,
    MinRTT,
    MinRTTOpportunistic,
    MinRTTTailReinjection,
    Redundant,
    RoundRobin,
    SplitThreshold,
)

SCHEDULERS: dict = {
    "rr": RoundRobin,
    "minrtt": MinRTT,
    "blest": BLEST,
    "ecf": ECF,
    "daps": DAPS,
    "stms": STMS,
    "sttf": STTF,
    "dems": DEMS,
    "fixed_split": FixedSplit,
    "minrtt_or": MinRTTOpportunistic,
    "minrtt_xlink": MinRTTTailReinjection,
    "redundant": Redundant,
    "split_threshold": SplitThreshold,
    "peekaboo": "baselines.bandit.peekaboo:Peekaboo",
    "mpeekaboo": "baselines.bandit.mpeekaboo:MPeekaboo",
    "srpt_ecf": "baselines.stream_aware.srpt_ecf:SRPTECF",
    "sa_ecf": "baselines.stream_aware.sa_ecf:SAECF",
    "fcfs_minrtt": "baselines.stream_aware.fcfs_minrtt:FCFSMinRTT",
    "srpt_minrtt": "baselines.stream_aware.srpt_minrtt:SRPTMinRTT",
    "dqn_on": "baselines.dqn.dqn_on:DQNOn",
    "dqn_off": "baselines.dqn.dqn_off:DQNOff",
    "gaps": "baselines.gaps.agent:GAPS",
    "blest_gap": "baselines.gaps.gap_rules:BlestGap",
    "ecf_gap": "baselines.gaps.gap_rules:EcfGap",
    "fixed_gap": "baselines.gaps.gap_rules:FixedGap",
    "hybrid": "baselines.hybrid.agent:HybridMPTCP",
    "drl_mptcp": "baselines.hybrid.agent:DRLMPTCP",
    "dqn_modes": "baselines.modes.learner:DQNModes",
    "dqn_modes_on": "baselines.modes.online:DQNModesOn",
}


def scheduler_class(name: str):
    """The scheduler class ``name`` means: a built-in (imported on first use if
    registered as a ``"module:Class"`` string), a plug-in's entry-point name or
    an import path ``module:Class`` (:func:`baselines.registry.resolve_scheduler`;
    an unknown or ambiguous name is a one-line ConfigError)."""
    return resolve_scheduler(name).load()


def make_scheduler(name: str, **kwargs):
    """A new scheduler instance: ``make_scheduler("blest", lambda_init=1.1)``;
    ``name`` as :func:`scheduler_class` takes it (built-ins including
    ``falcon``, plug-ins, ``module:Class``)."""
    return scheduler_class(name)(**kwargs)


__all__ = [
    "SCHEDULERS",
    "make_scheduler",
    "scheduler_class",
    "resolve_scheduler",
    "RoundRobin",
    "MinRTT",
    "BLEST",
    "ECF",
    "DAPS",
    "STMS",
    "STTF",
    "DEMS",
    "FixedSplit",
]
