"""The mode MDP's scheduler: a traffic-split *mode* chosen once per epoch,
executed packet by packet in between.

A mode is a rule of the field run as it is (``"ecf"``, ``"blest"`` ...:
the rule decides every packet of the epoch) or ``(share, reinject)``: the share of the epoch's packets that go
on path 0 (the rest on path 1; the chosen path without window room is a
wait, so the split holds, as :class:`baselines.rule_based.fixed_split.FixedSplit`
does) and whether, once nothing new is left to send, the tail is re-injected
(:func:`baselines.rule_based.policy_family.tail_decision`). The modes of
``(0, off)`` and ``(1, off)`` are the two single paths; a constant mode is a
member of the learnability suite's oracle family, so every policy the oracle
picks from is one of this MDP's policies, and so are policies that change
mode as a path's delivery changes.

An epoch lasts one smoothed RTT of the slowest usable path, within
[:data:`MIN_EPOCH_S`, :data:`MAX_EPOCH_S`]; at its first decision after the
epoch's end the scheduler observes the state (:mod:`baselines.modes.features`)
and asks its ``chooser`` for the next mode. Every choice is kept in
:attr:`ModeScheduler.trace` (state, mode, time, unacknowledged bytes) for the
learner (:mod:`baselines.modes.learner`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from baselines.modes.features import EpochObserver
from baselines.rule_based.fixed_split import check_share
from baselines.rule_based.policy_family import tail_decision
from envs.errors import ConfigError
from envs.rules import rule_code
from envs.scheduler import ConnectionView, Decision, Scheduler

#: shortest and longest decision epoch [s]
MIN_EPOCH_S = 0.05
MAX_EPOCH_S = 0.5
#: the default modes: five shares x tail re-injection off / on
DEFAULT_SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: the rules of the field that are modes too, by default
DEFAULT_RULES = ("ecf", "blest", "minrtt", "minrtt_xlink")


def make_modes(
    shares: Sequence[float] = DEFAULT_SHARES,
    reinject: Sequence[bool] = (False, True),
    rules: Sequence[str] = (),
) -> list:
    """Every ``(share, reinject)`` pair, shares outermost, then the rule names; checked."""
    if (not shares or not reinject) and not rules:
        raise ConfigError("modes: needs at least one share and one reinject value, or a rule")
    for r in reinject:
        if not isinstance(r, bool):
            raise ConfigError(f"modes.reinject: expected true/false values, got {r!r}")
    modes: list = [(check_share(s), bool(r)) for s in shares for r in reinject]
    for name in rules:
        rule_scheduler(name)  # known, and one that a mode can run
        modes.append(str(name))
    if len(set(modes)) != len(modes):
        raise ConfigError(
            f"modes: a share, reinject value or rule is listed twice "
            f"({list(shares)}, {list(reinject)}, {list(rules)})"
        )
    return modes


def mode_lists(modes: Sequence) -> tuple[list, list, list]:
    """The ``shares``, ``reinject`` and ``rules`` lists in the order
    :func:`make_modes` takes them (its inverse on a list it made)."""
    pairs = [m for m in modes if not isinstance(m, str)]
    shares = list(dict.fromkeys(s for s, _ in pairs))
    reinject = list(dict.fromkeys(r for _, r in pairs))
    return shares, reinject, [m for m in modes if isinstance(m, str)]


def mode_index(modes: Sequence, name: str | None, owner: str) -> int | None:
    """The index of the rule mode ``name`` among ``modes`` (None: None); a name
    that is not one of them is an error naming ``owner`` and the rules it has."""
    if name is None:
        return None
    if name not in modes:
        raise ConfigError(
            f"{owner}: first_mode {name!r} is not one of its modes "
            f"(a rule of rules: {[m for m in modes if isinstance(m, str)]})"
        )
    return list(modes).index(name)


def rule_scheduler(name: str) -> Scheduler:
    """A fresh rule scheduler for a rule mode: one of the registry's, without
    per-packet feedback (a rule mode only sees the decisions of its epochs)."""
    from baselines import make_scheduler

    try:
        sched = make_scheduler(str(name))
    except (ConfigError, KeyError, ValueError) as e:
        raise ConfigError(f"modes.rules: {name!r}: {e}") from None
    if sched.wants_packet_feedback:
        raise ConfigError(
            f"modes.rules: {name!r} needs per-packet feedback; a rule mode cannot run it"
        )
    return sched


def mode_entries(mode, rule: Scheduler | None = None) -> tuple[float, float]:
    """The state's ``mode_share`` and ``mode_reinject`` of a mode (a rule mode,
    with its scheduler ``rule``: share -1)."""
    if isinstance(mode, str):
        return -1.0, 1.0 if rule.reinjects else 0.0
    return float(mode[0]), 1.0 if mode[1] else 0.0


def unacked_bytes(view: ConnectionView) -> float:
    """Data not yet acknowledged: unsent (retransmissions included) plus in flight [bytes]."""
    return float(view.pending_bytes + sum(p.bytes_in_flight for p in view.paths))


class ModeScheduler(Scheduler):
    """Two paths; ``chooser(state) -> mode index`` at every epoch boundary
    (module docstring). ``modes``: :func:`make_modes`' list; ``augment(state)
    -> state``: entries appended to the observed state before the chooser
    sees it and the trace keeps it (:class:`baselines.modes.history.DownloadHistory`)."""

    name = "modes"
    reinjects = True
    #: between epoch boundaries the compiled core runs the mode in force
    #: (envs.rules.mode_decision: the split and its tail copies, or the rule's own
    #: native rule), as :meth:`decide` does; an epoch's first decision calls :meth:`decide`
    native_rule = "modes"
    #: the mode scheduler envs.rules.mode_decision reads (None: this one)
    mode_scheduler = None

    def __init__(
        self,
        modes: Sequence,
        chooser: Callable[[np.ndarray], int],
        augment: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self.modes = list(modes)
        self.augment = augment
        self.rules = {m: rule_scheduler(m) for m in self.modes if isinstance(m, str)}
        self.entries = [mode_entries(m, self.rules.get(m)) for m in self.modes]
        # per mode, what envs.rules.mode_decision reads beside entries
        self._mode_rules = [self.rules.get(m) if isinstance(m, str) else None for m in self.modes]
        self._mode_codes = [rule_code(r) if r is not None else 0 for r in self._mode_rules]
        self.chooser = chooser
        self.observer = EpochObserver()
        self.trace: list[tuple[np.ndarray, int, float, float]] = []
        self._mode = 0
        self._epoch_end = -1.0
        self._counts = [0, 0]

    def reset(self, view: ConnectionView) -> None:
        if len(view.paths) != 2:
            raise ConfigError(
                f"{self.name}: needs exactly 2 paths, the scenario has {len(view.paths)}"
            )
        self.trace = []
        self._epoch_end = -1.0
        for rule in self.rules.values():
            rule.reset(view)

    def _epoch_length(self, view: ConnectionView) -> float:
        usable = [p.srtt for p in view.paths if p.is_open and p.has_rtt_sample]
        return min(max(max(usable, default=MIN_EPOCH_S), MIN_EPOCH_S), MAX_EPOCH_S)

    def _next_mode(self, view: ConnectionView) -> None:
        if self._epoch_end < 0:
            self.observer.reset(view)
        state = self.observer.observe(view, *self.entries[self._mode])
        if self.augment is not None:
            state = self.augment(state)
        self._mode = int(self.chooser(state))
        if not 0 <= self._mode < len(self.modes):
            raise ConfigError(f"{self.name}: mode {self._mode} chosen, there are {len(self.modes)}")
        self.trace.append((state, self._mode, view.now, unacked_bytes(view)))
        self._epoch_end = view.now + self._epoch_length(view)
        self._counts = [0, 0]

    def decide(self, view: ConnectionView) -> int | Decision | None:
        if self._epoch_end < 0 or view.now >= self._epoch_end:
            self._next_mode(view)
        else:
            self.observer.track(view)
        mode = self.modes[self._mode]
        if isinstance(mode, str):
            rule = self.rules[mode]
            return rule.decide(view) if rule.reinjects or not view.no_new_data else None
        share, reinject = mode
        p0, p1 = view.paths
        if view.no_new_data:
            return tail_decision(view, p0, p1) if reinject else None
        c0, c1 = self._counts
        t = 0 if c0 < share * (c0 + c1 + 1) else 1
        if not view.paths[t].has_room:
            return None
        self._counts[t] += 1
        return t


__all__ = [
    "ModeScheduler",
    "make_modes",
    "mode_lists",
    "mode_index",
    "rule_scheduler",
    "mode_entries",
    "unacked_bytes",
    "MIN_EPOCH_S",
    "MAX_EPOCH_S",
    "DEFAULT_SHARES",
    "DEFAULT_RULES",
]
