"""The completion MDP's reward bookkeeping for one connection (:mod:`envs.mdp`).

:class:`CompletionCredit` turns a learned scheduler's decisions into the
completion MDP's transitions: it observes the state at each decision, keeps
the decision's raw prediction inputs, and once the decision's hindsight
horizon has passed rewards it with the reduction of the predicted
completion time under the path estimates of then (the module docstring of
:mod:`envs.mdp` says why). It is part of the compiled core
(``envs/credit.pxd``): the predictions run over typed per-path arrays
(:func:`envs.mdp.estimates_into`, :func:`envs.mdp.raw_finish`), the raw
inputs and the open decisions are kept in typed rings (no object per
decision), and the states are written into float32 blocks.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from envs.errors import ConfigError

try:  # the compiled build's directives
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
#: the columns of :meth:`CompletionCredit.transition_log`, in a transition's order
LOG_COLUMNS = ("states", "actions", "rewards", "next_states", "dones", "times")
#: the initial capacity of the credit's rings of open decisions and raw records (a power
#: of 2): a hindsight horizon holds hundreds of decisions at tens of Mb/s
RING = 1024


#: one zero of each typed column kind: repeated, a zeroed column (``array(kind, bytes(8 * n))``
#: made and copied an n-word string first: 4 us a column of RING rows, 17x slower)
_ZERO: dict[str, array] = {"q": array("q", [0]), "d": array("d", [0.0]), "b": array("b", [0])}


def _zeroed(kind: str, n: int) -> array:
    """A typed column of ``n`` zeros (array ``kind`` 'q', 'd' or 'b')."""
    return _ZERO[kind] * n


class Decision:
    """One decision recorded by :class:`CompletionCredit`, as
    :meth:`CompletionCredit.open_decisions` gives it: its ``state`` and
    ``action``, its raw prediction inputs ``raw`` (a float64 row,
    :func:`envs.mdp.raw_finish`) and the end of its hindsight horizon ``due``
    [s]; once the next decision is observed, that one's ``raw_next`` and
    ``next_state``. (The credit keeps its open decisions in typed columns.)"""

    __slots__ = ("state", "action", "raw", "due", "raw_next", "next_state")

    def __init__(self, state, action: int, raw, due: float):
        self.state = state
        self.action = action
        self.raw = raw
        self.due = due
        self.raw_next = None
        self.next_state = None


class CompletionCredit:
    """Per-connection bookkeeping of the completion reward (module docstring).

    Call :meth:`observe` at every decision (it returns the state and closes
    the previous decision's record), :meth:`acted` with the action taken, and
    :meth:`finish` at the episode's end. Closed transitions come out of
    :meth:`ready` (and :meth:`finish`) as ``(state, action, reward,
    next_state, done, decision_time)`` once their hindsight horizon has
    passed: ``hindsight_rtts`` times the largest smoothed RTT at the decision.

    States are float32 rows ``[n_inputs]`` (each a view of a block of
    :data:`STATE_ROWS` rows, never written again once handed out); with
    ``states=False`` they are None throughout (only the rewards are wanted),
    with ``states="log"`` they are the row numbers of the episode's *state log*
    (:meth:`state_log`, every state written in order: a collector gathers them
    in one copy instead of a row object per state). The predictions are
    :func:`envs.mdp.estimates_into` and :func:`envs.mdp.raw_finish` over the
    credit's typed per-path arrays.

    With ``log_transitions`` (and ``states="log"``) the closed transitions go into
    the credit's *transition log* instead (:meth:`transition_log`: typed columns,
    no tuple per transition, for a caller that only collects them): :meth:`ready`
    and :meth:`finish` then return empty lists.
    """

    def __init__(
        self,
        n_paths: int,
        hindsight_rtts: float = HINDSIGHT_RTTS,
        features=None,
        unit: str = COMPLETION_UNIT,
        states: bool | str = True,
        log_transitions: bool = False,
    ):
        #: ``features(view, now, finish, vals) -> vals``: the state writer
        #: (default :func:`completion_features_into`; FALCON-S passes its
        #: stream-aware variant of the same size)
        self.features = features or completion_features_into
        if not hindsight_rtts >= 0.0:
            raise ConfigError(f"hindsight_rtts: must be >= 0, got {hindsight_rtts!r}")
        self.per_packet = check_reward_unit(unit) == "packet"
        if states not in (True, False, "log"):
            raise ConfigError(f"states: expected True, False or 'log', got {states!r}")
        self.states = states
        #: False: the transitions carry None for their states (for a caller that needs
        #: only the rewards, as the Gymnasium environment, which reads the state with
        #: state_into): no row object per decision, and no write of None into the decisions'
        #: state columns either (set before an episode's first decision, as its mode)
        self.keep_states = states is True
        #: the transitions carry their states' row numbers in the state log
        self.log_states = states == "log"
        if log_transitions and not self.log_states:
            raise ConfigError("log_transitions: the transition log needs states='log'")
        #: closed transitions go into the transition log (transition_log), not out of ready
        self.log_transitions = bool(log_transitions)
        self._n_logged = 0  # transitions in the log, in typed columns (_new_log sizes them)
        self._lstate, self._laction, self._lnext = array("q"), array("q"), array("q")
        self._lreward, self._ltime, self._ldone = array("d"), array("d"), array("b")
        self._new_log(RING if self.log_transitions else 0)  # (made when first used)
        self._blocks: list = []  # the state log's blocks (log_states)
        self.hindsight_rtts = float(hindsight_rtts)
        self.n_paths = n_paths
        self.last_send = _zeroed("d", n_paths)  # [s] each path's latest send
        self._vals = [0.0] * n_inputs(n_paths, COMPLETION)  # a features writer's list
        self._dvals = _zeroed("d", len(self._vals))  # the state being written
        # the latest path estimates (envs.mdp.estimates_into), and raw_finish's scratch
        self._srtt = _zeroed("d", n_paths)
        self._rate = _zeroed("d", n_paths)
        self._order = _zeroed("q", n_paths)
        # the block the state rows are cut from (_rows: its typed view), and the next free row
        self._block = None
        self._rows = None
        self._row = STATE_ROWS
        # the latest observed state: row _state_at of _state_block (-1: none yet)
        self._state_block = None
        self._state_rows = None
        self._state_at = -1
        # the raw records (envs.mdp.raw_finish), a ring of float64 rows: raw record j
        # (numbered from 0) is row j & _raw_mask of _raw_block (_raw_rows: its typed view)
        self._raw_block = None
        self._raw_rows = None
        self._raw_mask = -1
        self._n_raw = 0
        self._ring_raws(RING)
        # the recorded decisions whose transitions are not out yet, numbered from 0:
        # _first, ..., _end - 1, each in slot number & _mask of typed columns (action,
        # end of horizon, raw record, the next decision's raw record or -1) and of
        # object lists (state, next state). No object per decision.
        self._first = 0
        self._end = 0
        self._mask = RING - 1
        self._act = _zeroed("q", RING)
        self._due = _zeroed("d", RING)
        self._rawi = _zeroed("q", RING)
        self._nexti = _zeroed("q", RING)
        self._dstate: list = [None] * RING
        self._dnext: list = [None] * RING
        self._last = -1  # the latest recorded decision while it waits for its next state
        self._pending_raw = -1  # the raw record of the latest observation
        self._pending_due = 0.0

    def __reduce__(self):  # (copies and pickles: the typed arrays are scratch, rebuilt)
        unit = "packet" if self.per_packet else "time"
        pending = None if self._pending_raw < 0 else np.array(self._raw_row_of(self._pending_raw))
        state = (
            np.array(self.last_send),
            self._vals,
            self.open_decisions(),
            self._last >= 0,
            pending,
            self._pending_due,
            self._block,
            self._row,
            self._state_block,
            self._state_at,
            self._blocks,
            self.transition_log() if self.log_transitions else None,
        )
        return _rebuilt_credit, (
            (
                self.n_paths,
                self.hindsight_rtts,
                self.features,
                unit,
                self.states,
                self.log_transitions,
            ),
            state,
        )

    def _set_state(self, state: tuple) -> None:
        (
            self.last_send,
            self._vals,
            records,
            last_open,
            pending,
            self._pending_due,
            self._block,
            self._row,
            self._state_block,
            self._state_at,
            self._blocks,
            logged,
        ) = state
        if logged is not None:
            s, a, r, n, d, t = [logged[name] for name in LOG_COLUMNS]
            for i in range(len(a)):
                self._log(s[i], a[i], r[i], n[i], d[i], t[i])
        self._rows = self._block
        self._state_rows = self._state_block
        for rec in records:  # into the rings, in order
            self._record(rec.state, rec.action, self._put_raw(rec.raw), rec.due)
            if rec.raw_next is not None:
                k = (self._end - 1) & self._mask
                self._nexti[k] = self._put_raw(rec.raw_next)
                self._dnext[k] = rec.next_state
        self._last = self._end - 1 if last_open and records else -1
        self._pending_raw = -1 if pending is None else self._put_raw(pending)

    def open_decisions(self) -> list:
        """The recorded decisions whose transitions are not out yet, oldest first
        (:class:`Decision` records made from the credit's columns)."""
        out = []
        for d in range(self._first, self._end):
            k = d & self._mask
            rec = Decision(
                self._dstate[k], self._act[k], self._raw_row_of(self._rawi[k]), self._due[k]
            )
            if self._nexti[k] >= 0:
                rec.raw_next = self._raw_row_of(self._nexti[k])
                rec.next_state = self._dnext[k]
            out.append(rec)
        return out

    def _raw_row_of(self, j: int):
        """Raw record ``j``'s row (of the raw ring)."""
        return self._raw_block[j & self._raw_mask]

    def _put_raw(self, values) -> int:
        """A new raw record holding ``values``; returns its number."""
        j = self._new_raw()
        self._raw_block[j & self._raw_mask] = values
        return j

    @cython.boundscheck(False)  # every index is masked into its ring: in range
    @cython.wraparound(False)
    def _ring_raws(self, size: int) -> None:
        """Make the raw ring ``size`` rows (a power of 2), the live records copied over:
        those from the oldest open decision's on."""
        block = np.empty((size, 2 + 2 * self.n_paths), np.float64)
        if self._raw_block is not None:
            old = self._raw_rows
            rows = block
            for j in range(self._oldest_raw(), self._n_raw):
                for i in range(block.shape[1]):
                    rows[j & (size - 1), i] = old[j & self._raw_mask, i]
        self._raw_block = block
        self._raw_rows = block
        self._raw_mask = size - 1

    def _oldest_raw(self) -> int:
        """The number of the oldest raw record still read: the oldest open decision's
        (every later one is newer), or the next new one when none is open."""
        return self._rawi[self._first & self._mask] if self._first < self._end else self._n_raw

    def _new_raw(self) -> int:
        """The number of a new raw record (its row to be written), the ring grown when
        the open decisions' records fill it."""
        j = self._n_raw
        if j - self._oldest_raw() > self._raw_mask:
            self._ring_raws(2 * (self._raw_mask + 1))
        self._n_raw = j + 1
        return j

    def _record(self, state, action: int, raw: int, due: float) -> None:
        """A new open decision (the decision ring grown when full)."""
        if self._end - self._first > self._mask:
            self._ring_decisions(2 * (self._mask + 1))
        k = self._end & self._mask
        self._act[k] = action
        self._due[k] = due
        self._rawi[k] = raw
        self._nexti[k] = -1
        if self.keep_states or self.log_states:  # else every entry stays None
            self._dstate[k] = state
            self._dnext[k] = None
        self._end += 1

    @cython.boundscheck(False)  # every index is masked into its ring: in range
    @cython.wraparound(False)
    def _ring_decisions(self, size: int) -> None:
        """Make the decision columns ``size`` slots (a power of 2), the open ones copied."""
        act, due = _zeroed("q", size), _zeroed("d", size)
        rawi, nexti = _zeroed("q", size), _zeroed("q", size)
        dstate: list = [None] * size
        dnext: list = [None] * size
        for d in range(self._first, self._end):
            k, m = d & self._mask, d & (size - 1)
            act[m], due[m] = self._act[k], self._due[k]
            rawi[m], nexti[m] = self._rawi[k], self._nexti[k]
            dstate[m], dnext[m] = self._dstate[k], self._dnext[k]
        self._act, self._due, self._rawi, self._nexti = act, due, rawi, nexti
        self._dstate, self._dnext = dstate, dnext
        self._mask = size - 1

    @cython.boundscheck(False)  # rows are 2 + 2 n long, r <= _raw_mask: in range
    @cython.wraparound(False)
    def _raw(self, view, now: float) -> int:
        """The raw record of a decision at ``now`` (:func:`envs.mdp.raw_finish`): a new
        row of the raw ring, written once; returns its number."""
        n = self.n_paths
        paths = _paths(view)
        if len(paths) != n:
            raise ValueError(f"credit of {n} paths observed a view of {len(paths)}")
        j = self._new_raw()
        r = j & self._raw_mask
        rows = self._raw_rows
        last_send = self.last_send
        rows[r, 0] = now
        rows[r, 1] = _pending_bytes(view)
        for i in range(n):
            rows[r, 2 + i] = last_send[i]
            p = paths[i]
            rows[r, 2 + n + i] = 1.0 if p.bytes_in_flight > 0 else 0.0
        return j

    @cython.boundscheck(False)  # rows and state are k long, r < STATE_ROWS: in range
    @cython.wraparound(False)
    def _state_row(self):
        """A new float32 row holding the state just written (``_dvals``; the class
        docstring), its row number in the state log with :attr:`log_states`, or None
        without :attr:`keep_states` (the row is written all the same)."""
        r = self._row
        k = len(self._dvals)  # the private scratch: the block's width by construction
        if r >= STATE_ROWS:
            self._block = np.empty((STATE_ROWS, k), np.float32)
            self._rows = self._block
            if self.log_states:
                self._blocks.append(self._block)
            r = 0
        self._row = r + 1
        if COMPILED:
            vals = self._dvals
            rows = self._rows
            for j in range(k):
                rows[r, j] = vals[j]
        else:
            self._block[r] = self._dvals
        if self.keep_states:
            return self._block[r]
        if self.log_states:
            return (len(self._blocks) - 1) * STATE_ROWS + r
        return None

    def state_log(self) -> np.ndarray:
        """Every state written since the credit was made (``states="log"``), in
        order: float32 ``[n, n_inputs]``; row ``i`` is the state numbered ``i``."""
        if not self.log_states:
            raise RuntimeError("state_log: this credit keeps no state log (states='log')")
        if not self._blocks:
            return np.empty((0, len(self._dvals)), np.float32)
        n = (len(self._blocks) - 1) * STATE_ROWS + self._row
        return np.concatenate(self._blocks)[:n]

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
        finish = raw_finish(
            self._raw_rows[raw & self._raw_mask], self._srtt, self._rate, self._order
        )
        self._features(view, now, finish)
        state = self._state_row()
        if self._state_block is not self._block:
            self._state_block = self._block
            self._state_rows = self._rows
        self._state_at = self._row - 1
        if record and self._last >= 0:
            k = self._last & self._mask
            self._nexti[k] = raw
            if self.keep_states or self.log_states:  # else every entry stays None
                self._dnext[k] = state
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
        return self._last >= 0

    def act(self, view, state, action: int, now: float, record: bool = True):
        """Apply the MDP's action decoding to the agent's ``action`` on
        ``state`` (a never-used path is probed first, :func:`probe_path`; a
        full path means wait, :func:`decode_action`) and record the decision.
        Returns the scheduler's answer: a path, or None to wait."""
        probe = probe_path(view)
        if probe is not None:
            action = probe
        decision = decode_action(view, action)
        self.acted(state, action, decision is not None, now, record)
        return decision

    def acted(self, state, action: int, sent: bool, now: float, record: bool = True) -> None:
        """Record the decision taken on ``state`` (``sent``: a packet left now)."""
        if sent:
            self.last_send[action] = now
        if record:
            if self._pending_raw < 0:
                raise RuntimeError("acted before observe: no state to record the decision on")
            self._record(state, action, self._pending_raw, self._pending_due)
            self._last = self._end - 1
        else:
            self._last = -1

    def _unit_s(self, view) -> float:
        """The reward unit [s] under the latest estimates."""
        if not self.per_packet:
            return COMPLETION_SCALE_S
        total = 0.0
        for i in range(self.n_paths):
            total += self._rate[i]
        return _payload(view) / total if total > 0.0 else COMPLETION_SCALE_S

    def ready(self, view, now: float, final: bool = False, observed: bool = False) -> list[tuple]:
        """Transitions whose horizon has passed (all closed ones if ``final``),
        rewarded with the path estimates of now. ``observed``: called right after
        :meth:`observe` on the same ``view`` and ``now`` (its estimates are reused)."""
        out = []
        if not self._closable(now, final):
            return out  # none ready: the common case, without the estimates
        unit = self._estimate(view, observed)
        while True:
            k = self._first & self._mask
            r = self._reward(k, unit)
            t = self._raw_rows[self._rawi[k] & self._raw_mask, 0]
            if self.log_transitions:
                self._log(self._dstate[k], self._act[k], r, self._dnext[k], False, t)
            else:
                out.append((self._dstate[k], self._act[k], r, self._dnext[k], False, t))
            self._pop(k)
            if not self._closable(now, final):
                return out

    def ready_rewards(self, view, now: float, rewards: list, first: int) -> int:
        """:meth:`ready` with ``observed`` (right after :meth:`observe`), its rewards
        only: the ``k``-th transition ready is written into ``rewards[first + k]``;
        returns how many (no tuple per transition)."""
        if not self._closable(now, False):
            return 0
        unit = self._estimate(view, True)
        n = 0
        while True:
            k = self._first & self._mask
            rewards[first + n] = self._reward(k, unit)
            self._pop(k)
            n += 1
            if not self._closable(now, False):
                return n

    def _new_log(self, size: int) -> None:
        """Make the transition log's columns ``size`` rows, the logged ones copied over."""
        state = _zeroed("q", size)
        action = _zeroed("q", size)
        reward = _zeroed("d", size)
        nxt = _zeroed("q", size)
        done = _zeroed("b", size)
        t = _zeroed("d", size)
        for i in range(self._n_logged):
            state[i] = self._lstate[i]
            action[i] = self._laction[i]
            reward[i] = self._lreward[i]
            nxt[i] = self._lnext[i]
            done[i] = self._ldone[i]
            t[i] = self._ltime[i]
        self._lstate = state
        self._laction = action
        self._lreward = reward
        self._lnext = nxt
        self._ldone = done
        self._ltime = t

    def _log(self, state, action: int, reward: float, next_state, done: bool, t: float) -> None:
        """Append a closed transition to the transition log (states as state-log row numbers)."""
        i = self._n_logged
        if i >= len(self._laction):
            self._new_log(max(RING, 2 * i))
        self._lstate[i] = state
        self._laction[i] = action
        self._lreward[i] = reward
        self._lnext[i] = next_state
        self._ldone[i] = 1 if done else 0
        self._ltime[i] = t
        self._n_logged = i + 1

    def transition_log(self) -> dict[str, np.ndarray]:
        """The closed transitions logged so far (``log_transitions``), in order, as one
        array per :data:`LOG_COLUMNS` name: ``states`` and ``next_states`` (int64 row
        numbers of :meth:`state_log`), ``actions`` (int64), ``rewards`` (float64),
        ``dones`` (bool) and ``times`` (the decisions' times [s], float64)."""
        if not self.log_transitions:
            raise RuntimeError("transition_log: this credit keeps no transition log")
        n = self._n_logged
        cols = [
            np.asarray(self._lstate),
            np.asarray(self._laction),
            np.asarray(self._lreward),
            np.asarray(self._lnext),
            np.asarray(self._ldone),
            np.asarray(self._ltime),
        ]
        types = (np.int64, np.int64, np.float64, np.int64, np.bool_, np.float64)
        return {name: col[:n].astype(dtype) for name, col, dtype in zip(LOG_COLUMNS, cols, types)}

    def _closable(self, now: float, final: bool) -> bool:
        """The oldest open decision's transition can close: its next state is known
        and its horizon passed (or ``final``)."""
        if self._first >= self._end:
            return False
        k = self._first & self._mask
        return self._nexti[k] >= 0 and (final or self._due[k] <= now)

    def _estimate(self, view, observed: bool) -> float:
        """The path estimates of now written into the scratch arrays (``observed``:
        :meth:`observe` has just written them: the view has not changed since, and
        neither have they); returns the reward unit [s] under them."""
        if not observed:
            estimates_into(view, self._srtt, self._rate)
        return self._unit_s(view)

    def _pop(self, k: int) -> None:
        """Take the oldest open decision (in slot ``k``) off the ring."""
        if self.keep_states or self.log_states:  # else every entry stays None
            self._dstate[k] = None
            self._dnext[k] = None
        self._first += 1

    def _reward(self, k: int, unit: float) -> float:
        """The reward of the transition of the decision in slot ``k`` under the
        estimates of now (``unit`` [s])."""
        before = raw_finish(
            self._raw_rows[self._rawi[k] & self._raw_mask], self._srtt, self._rate, self._order
        )
        after = raw_finish(
            self._raw_rows[self._nexti[k] & self._raw_mask], self._srtt, self._rate, self._order
        )
        return (before - after) / unit

    def finish(self, view, now: float, done: bool) -> list[tuple]:
        """Close the episode: every open transition, the last one rewarded with
        the real completion (``now``) against its prediction."""
        last = self._last
        k = last & self._mask
        alone = last >= 0 and self._nexti[k] < 0
        if alone:
            self._end -= 1  # the last decision, open without a next state: closed below
        out = self.ready(view, now, final=True)
        if alone:
            estimates_into(view, self._srtt, self._rate)
            raw = self._raw_rows[self._rawi[k] & self._raw_mask]
            r = (raw_finish(raw, self._srtt, self._rate, self._order) - now) / self._unit_s(view)
            self._features(view, now, now)
            state = self._state_row()
            if self.log_transitions:
                self._log(self._dstate[k], self._act[k], r, state, done, raw[0])
            else:
                out.append((self._dstate[k], self._act[k], r, state, bool(done), raw[0]))
        for d in range(self._first, self._end + (1 if alone else 0)):  # (a blocked rest)
            self._dstate[d & self._mask] = None
            self._dnext[d & self._mask] = None
        self._first = self._end = 0
        self._last = -1
        return out


def _rebuilt_credit(args: tuple, state: tuple) -> CompletionCredit:
    credit = CompletionCredit(*args)
    credit._set_state(state)
    return credit


__all__ = ["CompletionCredit", "Decision", "LOG_COLUMNS", "STATE_ROWS"]
