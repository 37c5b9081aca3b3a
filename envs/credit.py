"""The completion MDP's reward bookkeeping for one connection (:mod:`envs.mdp`).

:class:`CompletionCredit` turns a learned scheduler's decisions into the
completion MDP's transitions: it observes the state at each decision, keeps
the decision's raw prediction inputs, and once the decision's hindsight
horizon has passed rewards it with the reduction of the predicted
completion time under the path estimates of then (the module docstring of
:mod:`envs.mdp` says why). It is part of the compiled core
(``envs/credit.pxd``): the predictions run over typed per-path arrays
(:func:`envs.mdp.estimates_into`, :func:`envs.mdp.raw_finish`), and the
states are written into float32 blocks.
"""

from __future__ import annotations

from array import array
from collections import deque
from typing import Any

import numpy as np

from envs.errors import ConfigError

try:  # the compiled build's cast and directives (the .py build never runs the cast)
    import cython
except ImportError:  # pragma: no cover - the .py build installed without Cython
    from envs._cython_stub import cython  # type: ignore[assignment]

from envs.mdp import (
    COMPLETION,
    COMPLETION_SCALE_S,
    COMPLETION_UNIT,
    HINDSIGHT_RTTS,
    _completion_features,
    _paths,
    _payload,
    _pending_bytes,
    check_reward_unit,
    completion_features_into,
    decode_action,
    estimates_into,
    n_inputs,
    probe_path,
    raw_finish,
)

#: True in the compiled module (an extension's ``__file__`` is not the ``.py``)
COMPILED = not __file__.endswith(".py")
#: float32 state rows allocated at a time by :class:`CompletionCredit`
STATE_ROWS = 256
#: ``deque.popleft`` looked up once: the compiled core calls it without a method lookup
_popleft = deque.popleft


def _untrack(obj) -> None:
    """Take ``obj``, a record that holds floats or float32 rows and so can be in no
    reference cycle, off the cyclic collector's lists (the compiled core; reference
    counting still frees it). An environment stepped from Python keeps the collector
    on, and the records, which live for a hindsight horizon each, made it scan
    (and count towards its full collections) two objects per decision."""
    if COMPILED:
        PyObject_GC_UnTrack(cython.cast(cython.p_void, obj))  # type: ignore[name-defined]  # noqa: F821


class Decision:
    """One decision recorded by :class:`CompletionCredit`: its ``state`` and
    ``action``, its raw prediction inputs ``raw`` (:func:`envs.mdp.raw_finish`)
    and the end of its hindsight horizon ``due`` [s]; once the next decision is
    observed, that one's ``raw_next`` and ``next_state``."""

    __slots__ = ("state", "action", "raw", "due", "raw_next", "next_state")

    def __init__(self, state, action: int, raw: list, due: float):
        self.state = state
        self.action = action
        self.raw = raw
        self.due = due
        self.raw_next = None
        self.next_state = None
        _untrack(self)


class CompletionCredit:
    """Per-connection bookkeeping of the completion reward (module docstring).

    Call :meth:`observe` at every decision (it returns the state and closes
    the previous decision's record), :meth:`acted` with the action taken, and
    :meth:`finish` at the episode's end. Closed transitions come out of
    :meth:`ready` (and :meth:`finish`) as ``(state, action, reward,
    next_state, done, decision_time)`` once their hindsight horizon has
    passed: ``hindsight_rtts`` times the largest smoothed RTT at the decision.

    States are float32 rows ``[n_inputs]`` (each a view of a block of
    :data:`STATE_ROWS` rows, never written again once handed out; None
    throughout with ``states=False``, when only the rewards are wanted); the
    predictions are :func:`envs.mdp.estimates_into` and
    :func:`envs.mdp.raw_finish` over the credit's typed per-path arrays.
    """

    def __init__(
        self,
        n_paths: int,
        hindsight_rtts: float = HINDSIGHT_RTTS,
        features=None,
        unit: str = COMPLETION_UNIT,
        states: bool = True,
    ):
        #: ``features(view, now, finish, vals) -> vals``: the state writer
        #: (default :func:`completion_features_into`; FALCON-S passes its
        #: stream-aware variant of the same size)
        self.features = features or completion_features_into
        if not hindsight_rtts >= 0.0:
            raise ConfigError(f"hindsight_rtts: must be >= 0, got {hindsight_rtts!r}")
        self.per_packet = check_reward_unit(unit) == "packet"
        #: False: the transitions carry None for their states (for a caller that needs
        #: only the rewards, as the Gymnasium environment, which reads the state with
        #: state_into): no row object per decision
        self.keep_states = bool(states)
        self.hindsight_rtts = float(hindsight_rtts)
        self.n_paths = n_paths
        self.last_send = [0.0] * n_paths
        self._vals = [0.0] * n_inputs(n_paths, COMPLETION)  # a features writer's list
        self._dvals = array("d", bytes(8 * len(self._vals)))  # the state being written
        # the latest path estimates (envs.mdp.estimates_into), and raw_finish's scratch
        self._srtt = array("d", bytes(8 * n_paths))
        self._rate = array("d", bytes(8 * n_paths))
        self._order = array("q", bytes(8 * n_paths))
        # the block the state rows are cut from (_rows: its typed view), and the next free row
        self._block = None
        self._rows = None
        self._row = STATE_ROWS
        # the latest observed state: row _state_at of _state_block (-1: none yet)
        self._state_block = None
        self._state_rows = None
        self._state_at = -1
        # the recorded decisions (Decision) whose transitions are not out yet, oldest first
        self._open: deque = deque()
        self._last = None

    def __reduce__(self):  # (copies and pickles: the typed arrays are scratch, rebuilt)
        unit = "packet" if self.per_packet else "time"
        state = (
            self.last_send,
            self._vals,
            self._open,
            self._last,
            self._pending_raw,
            self._pending_due,
            self._block,
            self._row,
            self._state_block,
            self._state_at,
        )
        return _rebuilt_credit, (
            (self.n_paths, self.hindsight_rtts, self.features, unit, self.keep_states),
            state,
        )

    def _set_state(self, state: tuple) -> None:
        (
            self.last_send,
            self._vals,
            self._open,
            self._last,
            self._pending_raw,
            self._pending_due,
            self._block,
            self._row,
            self._state_block,
            self._state_at,
        ) = state
        self._rows = self._block
        self._state_rows = self._state_block

    def _raw(self, view, now: float) -> list:
        """The raw record of a decision at ``now`` (:func:`envs.mdp.raw_finish`)."""
        raw = [now, float(_pending_bytes(view))]
        raw.extend(self.last_send)
        for p in _paths(view):
            raw.append(1.0 if p.bytes_in_flight > 0 else 0.0)
        _untrack(raw)
        return raw

    @cython.boundscheck(False)  # rows and state are k long, r < STATE_ROWS: in range
    @cython.wraparound(False)
    def _state_row(self):
        """A new float32 row holding the state just written (``_dvals``; the class
        docstring); None without :attr:`keep_states` (the row is written all the same)."""
        r = self._row
        k = len(self._dvals)  # the private scratch: the block's width by construction
        if r >= STATE_ROWS:
            self._block = np.empty((STATE_ROWS, k), np.float32)
            self._rows = self._block
            r = 0
        self._row = r + 1
        if COMPILED:
            vals = self._dvals
            rows = self._rows
            for j in range(k):
                rows[r, j] = vals[j]
        else:
            self._block[r] = self._dvals
        return self._block[r] if self.keep_states else None

    def _features(self, view, now: float, finish: float) -> None:
        """The state writer's values at ``now`` [s] (``finish``: the predicted completion [s]),
        written into ``_dvals``; the default writer is called as the compiled core's typed
        function, not through Python."""
        if self.features is completion_features_into:
            _completion_features(view, now, finish, self._dvals)
            return
        vals = self.features(view, now, finish, self._vals)
        out = self._dvals
        for j in range(len(out)):
            out[j] = vals[j]

    def observe(self, view, now: float, record: bool = True):
        """The state at a decision (a float32 row; None without :attr:`keep_states`);
        with ``record``, the previous decision's record gets it as its next state."""
        largest = estimates_into(view, self._srtt, self._rate)
        raw = self._raw(view, now)
        finish = raw_finish(raw, self._srtt, self._rate, self._order)
        self._features(view, now, finish)
        state = self._state_row()
        self._state_block = self._block
        self._state_rows = self._rows
        self._state_at = self._row - 1
        last = self._last
        if record and last is not None:
            last.raw_next = raw
            last.next_state = state
        self._pending_raw = raw
        self._pending_due = now + self.hindsight_rtts * largest
        return state

    def latest_state(self):
        """The latest state :meth:`observe` returned, read in place (a typed row of
        the credit's block in the compiled core, no Python object); only after an
        observation."""
        return self._state_rows[self._state_at]

    @cython.boundscheck(False)  # the row's length is checked: in range
    @cython.wraparound(False)
    def state_into(self, row) -> None:
        """Copy the latest state :meth:`observe` returned into ``row`` (float32,
        ``n_inputs`` long; zeros before the first)."""
        if self._state_at < 0:
            row[:] = 0.0
        elif COMPILED:  # element by element: no memoryview slice of the block
            rows: Any = self._state_rows
            r = self._state_at
            k = rows.shape[1]
            if row.shape[0] != k:
                raise ValueError(f"state_into: a row of {k} values, got {row.shape[0]}")
            for j in range(k):
                row[j] = rows[r, j]
        else:
            row[:] = self.latest_state()

    @property
    def has_open_decision(self) -> bool:
        """The latest recorded decision still waits for its next state."""
        return self._last is not None

    def act(self, view, state, action: int, now: float, record: bool = True):
        """Apply the MDP's action decoding to the agent's ``action`` on
        ``state`` (a never-used path is probed first, :func:`probe_path`; a
        full path means wait, :func:`decode_action`) and record the decision.
        Returns ``(action taken, the scheduler's answer: path or None)``."""
        probe = probe_path(view)
        if probe is not None:
            action = probe
        decision = decode_action(view, action)
        self.acted(state, action, decision is not None, now, record)
        return action, decision

    def acted(self, state, action: int, sent: bool, now: float, record: bool = True) -> None:
        """Record the decision taken on ``state`` (``sent``: a packet left now)."""
        if sent:
            self.last_send[action] = now
        if record:
            rec = Decision(state, action, self._pending_raw, self._pending_due)
            self._open.append(rec)
            self._last = rec
        else:
            self._last = None

    def _unit_s(self, view) -> float:
        """The reward unit [s] under the latest estimates."""
        if not self.per_packet:
            return COMPLETION_SCALE_S
        total = 0.0
        for i in range(self.n_paths):
            total += self._rate[i]
        return _payload(view) / total if total > 0.0 else COMPLETION_SCALE_S

    def ready(self, view, now: float, final: bool = False) -> list[tuple]:
        """Transitions whose horizon has passed (all closed ones if ``final``),
        rewarded with the path estimates of now."""
        out = []
        opened = self._open
        if not opened:
            return out
        rec = opened[0]
        if rec.raw_next is None or not (final or rec.due <= now):
            return out  # none ready: the common case, without the estimates
        srtt, rate, order = self._srtt, self._rate, self._order
        estimates_into(view, srtt, rate)
        unit = self._unit_s(view)
        while True:
            _popleft(opened)
            raw = rec.raw
            r = (
                raw_finish(raw, srtt, rate, order) - raw_finish(rec.raw_next, srtt, rate, order)
            ) / unit
            out.append((rec.state, rec.action, r, rec.next_state, False, raw[0]))
            if not opened:
                return out
            rec = opened[0]
            if rec.raw_next is None or not (final or rec.due <= now):
                return out

    def finish(self, view, now: float, done: bool) -> list[tuple]:
        """Close the episode: every open transition, the last one rewarded with
        the real completion (``now``) against its prediction."""
        last = self._last
        if last is not None and last.raw_next is None:
            self._open.pop()
        out = self.ready(view, now, final=True)
        if last is not None and last.raw_next is None:
            estimates_into(view, self._srtt, self._rate)
            raw = last.raw
            r = (raw_finish(raw, self._srtt, self._rate, self._order) - now) / self._unit_s(view)
            self._features(view, now, now)
            state = self._state_row()
            out.append((last.state, last.action, r, state, bool(done), raw[0]))
        self._open.clear()
        self._last = None
        return out


def _rebuilt_credit(args: tuple, state: tuple) -> CompletionCredit:
    credit = CompletionCredit(*args)
    credit._set_state(state)
    return credit


__all__ = ["CompletionCredit", "Decision", "STATE_ROWS"]
