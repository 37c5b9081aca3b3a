"""Rule-based path choices on the connection's own path senders, in the
compiled core: minRTT, round robin, and the minRTT step BLEST and ECF begin
with. With them, an episode of these schedulers makes no Python call per
packet (``python -m benchmarks.emulator_speed``).

A scheduler opts in with a class attribute ``native_rule`` naming what its
``decide`` does (:data:`envs.rule_codes.RULES`); :meth:`envs.transport.Connection.try_send`
then takes the decision here instead of calling ``decide``:

* ``"minrtt"``: ``decide`` returns :func:`minrtt_pick` (``-1``: wait);
* ``"rr"``: round robin from the scheduler's cursor ``_next`` (the first path
  with room at or after it, cyclically), which it advances past the path
  chosen, as ``baselines.rule_based.roundrobin.RoundRobin.decide`` does;
* ``"minrtt_unless_slower"``: ``decide`` returns minRTT's choice unless that
  is a probed path slower than the fastest one (BLEST's and ECF's check,
  ``baselines.rule_based.common.slow_candidate``); only then is ``decide``
  called;
* ``"minrtt_until_tail"``: ``decide`` returns minRTT's choice while new data
  can be sent (``view.no_new_data`` false), as the re-injecting rules
  ``minrtt_or`` and ``minrtt_xlink`` of ``baselines.rule_based.reinjection``
  do; ``decide`` is called for the rest, their copies at the tail;
* ``"fixed_split"`` and ``"split_threshold"`` (two paths): the split of
  ``baselines.rule_based.fixed_split.FixedSplit`` (path 0 while its packets
  sent < ``share`` x (both paths' + 1), the chosen path without room a
  wait), and for ``split_threshold`` the exit of
  ``baselines.rule_based.policy_family.SplitThreshold`` (the other path
  while the chosen one's predicted delivery exceeds ``threshold`` times the
  other's): :func:`split_pick`, and the tail re-injection of a
  ``SplitThreshold`` that re-injects: :func:`tail_copy`. The learnability
  suite's fixed splits and its oracle's family run these on every seed of
  every condition;
* ``"modes"`` (two paths): the mode MDP's scheduler
  (``baselines.modes.scheduler.ModeScheduler``, or a scheduler whose
  ``mode_scheduler`` is one) between two epoch boundaries: :func:`mode_decision`
  notes the paths' newly acknowledged payload as its epoch observer's
  ``track`` does, then runs the mode in force: a share mode's split, or a
  rule mode's own native rule (``decide`` for a rule without one), and a
  share mode's tail re-injection (:func:`tail_copy`). Only the epoch's first
  decision (the state and the chooser) calls ``decide``;
* ``"completion_dqn"``: a DQN scheduler on the completion MDP
  (``baselines.dqn.policy.DQNScheduler``, the bank's task collector, DQN-Off
  and DQN-On): :func:`completion_decision` observes the state, hands the
  completed transitions to its ``on_transition``, probes a never-used path,
  draws the exploration and takes the Q-network's greedy action, as its
  ``_decide_completion`` does; ``decide`` is called when the scheduler says
  its decision is not this one (``_native_completion`` false: another MDP,
  or a subclass that changes the choice), with a behaviour policy, and at
  the decision that ends a recording budget.

A subclass that overrides ``decide`` is not taken here (:func:`rule_code`),
so a class's own Python ``decide`` always stays the reference: these
functions are the typed twins of ``baselines.rule_based.common``'s
``minrtt_choice`` and ``fastest``, and ``tests/test_native_rules.py`` checks
that every opted-in scheduler gives bit-identical episodes both ways.
"""

from __future__ import annotations

import math

from envs.reinject import source
from envs.rule_codes import (
    COMPLETION_DQN,
    FIXED_SPLIT,
    MINRTT,
    MINRTT_UNLESS_SLOWER,
    MINRTT_UNTIL_TAIL,
    MODES,
    ROUND_ROBIN,
    RULES,
    SPLIT_THRESHOLD,
)
from envs.scheduler import Decision

INF = math.inf


def rule_code(scheduler) -> int:
    """The code of ``scheduler``'s ``native_rule`` (:data:`envs.rule_codes.RULES`), or 0 if it
    has none or a subclass overrides the ``decide`` of the class declaring it."""
    for klass in type(scheduler).__mro__:
        if "native_rule" in vars(klass):
            name = klass.native_rule
            if name is None or type(scheduler).decide is not klass.decide:
                return 0
            if name not in RULES:
                raise ValueError(
                    f"{klass.__name__}.native_rule: unknown rule {name!r} (known: {sorted(RULES)})"
                )
            return RULES[name]
    return 0


def minrtt_pick(paths: list, now: float) -> int:
    """minRTT: among the paths with room at ``now`` [s], an unprobed one (no
    RTT sample) first, the one with the fewest packets sent; else the lowest
    srtt (ties: lowest index); -1 when no path has room."""
    best = -1
    best_srtt = INF
    probe = -1
    probe_sent = 0
    i = 0
    for p in paths:
        if p.may_send(now):
            if not p.has_rtt_sample:
                if probe < 0 or p.packets_sent < probe_sent:
                    probe = i
                    probe_sent = p.packets_sent
            elif p.srtt < best_srtt:
                best = i
                best_srtt = p.srtt
        i += 1
    if probe >= 0:
        return probe
    return best


def fastest_index(paths: list) -> int:
    """The fastest path: the lowest srtt among paths with an RTT sample
    (ties: lowest index); the lowest srtt of all if none has one; -1: no paths."""
    best = -1
    best_srtt = INF
    i = 0
    for p in paths:
        if p.has_rtt_sample and p.srtt < best_srtt:
            best = i
            best_srtt = p.srtt
        i += 1
    if best < 0:
        i = 0
        for p in paths:
            if p.srtt < best_srtt:
                best = i
                best_srtt = p.srtt
            i += 1
        if best < 0 and paths:
            best = 0
    return best


def minrtt_unless_slower(paths: list, now: float) -> int:
    """minRTT's choice when BLEST's and ECF's check does not apply (no path
    with room: -1; the fastest path; an unprobed path); -2 when it does (a
    probed path slower than the fastest: the scheduler's ``decide`` weighs it)."""
    c = minrtt_pick(paths, now)
    if c < 0:
        return -1
    if c == fastest_index(paths):
        return c
    p = paths[c]
    if not p.has_rtt_sample:
        return c
    return -2


def round_robin_pick(paths: list, now: float, start: int) -> int:
    """The first path with room at ``now`` [s] at or after index ``start``,
    cyclically; -1 when none has room."""
    n = len(paths)
    i = start
    k = 0
    while k < n:
        if i >= n:
            i = 0
        p = paths[i]
        if p.may_send(now):
            return i
        i += 1
        k += 1
    return -1


def predicted_delivery(p) -> float:
    """``baselines.rule_based.policy_family.predicted_delivery`` of the path
    sender ``p``: half its srtt plus the time its window takes to drain the
    bytes in flight and one more packet [s]."""
    return p.srtt * (0.5 + (p.bytes_in_flight + p.mss) / p.cc.cwnd)


def split_pick(paths: list, now: float, share: float, threshold: float) -> int:
    """The split's path of two (module docstring; ``threshold`` infinite: the
    fixed split), or -1 (wait) when it has no room at ``now`` [s]."""
    p0 = paths[0]
    p1 = paths[1]
    sent0 = p0.packets_sent
    if sent0 < share * (sent0 + p1.packets_sent + 1):
        t = p0
        o = p1
    else:
        t = p1
        o = p0
    if (
        threshold < INF
        and t.has_rtt_sample
        and o.has_rtt_sample
        and predicted_delivery(t) > threshold * predicted_delivery(o)
    ):
        t = o
    return t.index if t.may_send(now) else -1


def tail_copy(paths: list, view, now: float):
    """``baselines.rule_based.policy_family.tail_decision`` of two paths: a copy
    (``Decision(path, reinject=True)``) on the one with room at ``now`` [s] and
    the earlier :func:`predicted_delivery` (ties: path 0) whose re-injection has
    a frame to copy, else on the other; None (wait) when neither can."""
    p0 = paths[0]
    p1 = paths[1]
    if predicted_delivery(p0) <= predicted_delivery(p1):
        a = p0
        b = p1
    else:
        a = p1
        b = p0
    if a.may_send(now) and source(view, a.index) is not None:
        return Decision(a.index, reinject=True)
    if b.may_send(now) and source(view, b.index) is not None:
        return Decision(b.index, reinject=True)
    return None


def mode_decision(paths: list, scheduler, view, now: float, tail: bool):
    """The decision at ``now`` [s] of a mode scheduler (``native_rule = "modes"``,
    module docstring): the same decision, with the same side effects on its
    observer, counts and rule, as its ``decide``, which is called at an epoch's
    first decision only; ``tail``: nothing new can be sent.

    The scheduler's ``mode_scheduler`` (None: itself) has ``_epoch_end`` [s],
    ``_mode`` (the index in force), per mode ``entries`` (a share mode's share
    of path 0 and 1.0 if it re-injects its tail), ``_mode_rules`` (the rule
    scheduler of a rule mode, else None) and ``_mode_codes`` (that rule's
    :func:`rule_code`), the split's ``_counts`` and the ``observer`` whose
    ``snapshot`` and ``last_ack`` lists it tracks.
    """
    ms = scheduler.mode_scheduler
    if ms is None:
        ms = scheduler
    end = ms._epoch_end
    if end < 0.0 or now >= end:
        return scheduler.decide(view)
    observer = ms.observer
    snapshot = observer.snapshot
    last_ack = observer.last_ack
    i = 0
    for p in paths:  # the observer's track
        a = p.payload_bytes_acked
        if a != snapshot[i]:
            snapshot[i] = a
            last_ack[i] = now
        i += 1
    m = ms._mode
    rule = ms._mode_rules[m]
    if rule is not None:
        if tail and not rule.reinjects:
            return None
        code = ms._mode_codes[m]
        if code == 0:
            return rule.decide(view)
        return native_decision(code, paths, rule, view, now, tail)
    share, reinject = ms.entries[m]
    if tail:
        return tail_copy(paths, view, now) if reinject else None
    counts = ms._counts
    c0 = counts[0]
    c1 = counts[1]
    t = 0 if c0 < share * (c0 + c1 + 1) else 1
    p = paths[t]
    if not p.may_send(now):
        return None
    if t == 0:
        counts[0] = c0 + 1
    else:
        counts[1] = c1 + 1
    return t


def probe_index(paths: list, now: float) -> int:
    """``envs.mdp.probe_path``: the first path with room at ``now`` [s] that never
    sent a packet; -1 if none."""
    for p in paths:
        if p.packets_sent == 0 and p.may_send(now):
            return p.index
    return -1


class DQNFields:
    """The fields of a completion-MDP DQN scheduler (``baselines.dqn.policy.DQNScheduler``)
    that :func:`completion_decision` reads and writes at every decision, in one record.

    The scheduler keeps them here and shows them as its attributes of the same meaning
    (``_native_completion``, ``behaviour``, ``recording``, ``record_budget``,
    ``decisions``, ``epsilon``, ``_credit``, ``_draws``, ``qnet``): the compiled core
    reads them as C fields, where looking each name up in the scheduler's instance
    dictionary cost about a tenth of bank task collection's instructions.
    """

    def __init__(self):
        self.native = False  # the compiled core may decide (the scheduler's _native_completion)
        self.behaviour = None  # a behaviour policy acting instead of the Q-network, or None
        self.recording = False  # close transitions and hand them to on_transition
        self.has_budget = False  # record_budget is not None
        self.budget = 0  # record_budget: decisions still recorded (when has_budget)
        self.decisions = 0  # decisions taken
        self.epsilon = 0.0  # exploration probability
        self.credit = None  # the episode's envs.credit.CompletionCredit (from reset)
        self.draws = None  # the exploration draws (envs.explore.EpsilonDraws)
        self.qnet = None  # the acting network (baselines.dqn.network.NumpyQNet)
        self.dense = None  # its envs.dense.DenseForward (None without a network)

    def act_with(self, qnet) -> None:
        """Make ``qnet`` the acting network, with its ``DenseForward`` (None without one)."""
        self.qnet = qnet
        self.dense = getattr(qnet, "_dense", None)

    def __reduce__(self):  # (copies and pickles: ``dense`` is the network's own, rebuilt with it)
        return _rebuilt_fields, (tuple([getattr(self, name) for name in _CARRIED]), self.qnet)


#: the :class:`DQNFields` a copy carries besides the network (``act_with`` sets both
#: network fields)
_CARRIED = (
    "native",
    "behaviour",
    "recording",
    "has_budget",
    "budget",
    "decisions",
    "epsilon",
    "credit",
    "draws",
)


def _rebuilt_fields(values: tuple, qnet) -> DQNFields:
    f = DQNFields()
    for name, value in zip(_CARRIED, values):
        setattr(f, name, value)
    f.act_with(qnet)
    return f


def completion_decision(paths: list, scheduler, view, now: float):
    """The decision at ``now`` [s] of a completion-MDP DQN scheduler
    (``native_rule = "completion_dqn"``, module docstring): the same decision,
    with the same records, draws and counters, as its ``_decide_completion``.

    The scheduler has ``_fields`` (its :class:`DQNFields`) and ``on_transition``.
    """
    f = scheduler._fields
    if not f.native or f.behaviour is not None:
        return scheduler.decide(view)
    record = f.recording
    has_budget = f.has_budget
    budget = f.budget
    if record and has_budget and budget <= 0:
        return scheduler.decide(view)  # the budget's last decision closes the log
    credit = f.credit
    state = credit.observe(view, now, record)
    if record:
        ready = credit.ready(view, now, False, True)  # (final, observed)
        if ready:
            on_transition = scheduler.on_transition
            for t in ready:
                on_transition(*t)
        if has_budget:
            f.budget = budget - 1
    a = probe_index(paths, now)  # a probe needs no Q-values (nor an exploration draw)
    if a < 0:
        draws = f.draws
        a = draws.explore(f.epsilon, len(paths))
        if a < 0:
            dense = f.dense
            if dense is None:
                raise ValueError(f"{scheduler.name}: no Q-network to act with")
            a = dense.argmax_row(credit.latest_state())  # `state`'s row, read in place
    d = credit.act(view, state, a, now, record)
    f.decisions += 1
    return d


def native_decision(rule: int, paths: list, scheduler, view, now: float, tail: bool):
    """The decision at ``now`` [s] of ``scheduler``, whose ``native_rule`` has code ``rule``
    (module docstring); ``view`` is the connection, for the ``decide`` the rule falls back
    to; ``tail``: nothing new can be sent (``view.no_new_data``, which the connection
    has just computed)."""
    if rule == MINRTT:
        i = minrtt_pick(paths, now)
    elif rule == ROUND_ROBIN:
        i = round_robin_pick(paths, now, scheduler._next)
        if i >= 0:
            scheduler._next = i + 1
    elif rule == MINRTT_UNLESS_SLOWER:
        i = minrtt_unless_slower(paths, now)
        if i == -2:
            return scheduler.decide(view)
    elif rule == MINRTT_UNTIL_TAIL:
        if tail:
            return scheduler.decide(view)  # the tail: a copy, or a wait
        i = minrtt_pick(paths, now)
    elif rule == FIXED_SPLIT:
        i = split_pick(paths, now, scheduler.share, INF)
    elif rule == SPLIT_THRESHOLD:
        if tail and scheduler.reinjects:
            return tail_copy(paths, view, now)
        i = split_pick(paths, now, scheduler.share, scheduler.threshold)
    elif rule == MODES:
        return mode_decision(paths, scheduler, view, now, tail)
    elif rule == COMPLETION_DQN:
        return completion_decision(paths, scheduler, view, now)
    else:
        raise ValueError(f"unknown native rule code {rule}")
    return i if i >= 0 else None


__all__ = [
    "native_decision",
    "mode_decision",
    "tail_copy",
    "completion_decision",
    "DQNFields",
    "probe_index",
    "rule_code",
    "minrtt_pick",
    "fastest_index",
    "minrtt_unless_slower",
    "round_robin_pick",
    "predicted_delivery",
    "split_pick",
]
