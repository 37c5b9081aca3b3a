"""The MDP of the learned schedulers: state features, action decoding, reward.

One home for what a learned scheduler observes, what its action means and what
it is rewarded for, imported by the Gymnasium env (:mod:`envs.gym_env`), the
DQN agents (:mod:`baselines.dqn.policy`), FALCON, export and the RLlib backend.
No learning code lives here. Two MDPs are defined; an agent names one with
its ``reward`` kind:

``paper`` (FALCON paper, Sec. IV-B; rewards ``packet_rate``, ``goodput``,
``goodput_rate``, ``ack_rate``)
    State per path ``[cwnd/RTT, inflight/RTT, swnd/RTT, RTT]`` (:func:`observe_into`);
    action = the path of the next packet, *committed* to it even when its
    window is full (the packet then waits for that path and blocks every
    other decision); reward: the per-decision credit ``RTT_SCALE_S / (t_ack -
    t_decision)`` (``packet_rate``, :func:`ack_credit`) or a step goodput
    (:func:`step_reward`). Measured (docs/explanation/learnability.md): a DQN trained on
    it sends nearly everything on one path, because the credit prices a
    packet's own delay and never the capacity an idle path leaves unused.

``completion`` (the default of the DQN agents, ``reward: completion``)
    * **Action** = a path index. A path with congestion-window room gets the
      next packet now; a path without room means *wait* for it: nothing is
      sent, and the agent is asked again at the next ACK, loss or app event
      (:func:`decode_action`), so it can change its mind. A path that never
      sent a packet gets one first (:func:`probe_path`). "Always the fast
      path" (one path), minRTT, round robin and ECF/BLEST-style waiting are all
      policies of this action space.
    * **Reward**: the reduction of the *predicted completion time* of the
      transfer, ``-(F(after) - F(before)) / unit``, where ``F``
      is a fluid prediction (:func:`predicted_finish`): every path delivers
      new data at ``cwnd/srtt`` after ``srtt``, the unsent bytes are
      water-filled over the paths that finish them soonest (ECF's reasoning,
      for any number of paths), and the newest packet in flight on a path is
      acknowledged ``srtt`` after it was sent. Both predictions of a decision
      use *one* set of path estimates, taken ``hindsight_rtts`` smoothed RTTs
      after the decision (:class:`envs.credit.CompletionCredit`): a decision is judged by
      what its own packet revealed (e.g. the first RTT sample of a 400 ms
      path), and estimate updates that no action caused are not charged to
      it. Sending on a path that would finish after the others costs the
      difference; waiting while a useful path idles costs the time that
      passes; sending where the data arrives in time gains the time one
      packet takes on the paths in use. The last decision's reward uses the
      real completion time, so the return of an episode is close to
      ``-(download time - F_0)`` (exactly, were the estimates constant):
      potential-based shaping (Ng et al. 1999) of "minimise the download
      time", dense enough for a DQN with per-decision discounting.
      The ``unit`` (``reward_unit``, :data:`COMPLETION_UNITS`) is by default
      ``packet``: the time one packet takes at the connection's aggregate
      estimated rate (``payload / sum(cwnd/srtt)``, the same estimates), so a
      good decision earns about 1 and a mistake costs the packets the
      connection could have sent meanwhile, at 1 Mbit/s as at 1 Gbit/s.
      With a fixed unit (``time``: 10 ms) the same decisions on a 1 Gbit/s
      path are worth a thousandth of those on a 1 Mbit/s one, and one network
      trained on tasks of both (the bank's generalist, the meta-models) fits
      the slow tasks and treats the fast ones as noise (measured: docs/explanation/mdps.md,
      "The MDP of the learned schedulers").
    * **State** (:func:`completion_features_into`), per path: ``log(1 +
      cwnd/srtt / 100 pkt/s)``, inflight/cwnd, has room, srtt / 100 ms,
      rttvar/srtt, loss ratio (lost/sent), the *lateness* ``(now + srtt - F) /
      100 ms`` (how much later than the predicted finish a packet sent now on
      this path would arrive: ECF's quantity), has an RTT sample; then three
      connection features: predicted remaining time ``(F - now) / 100 ms``,
      ``log(1 + unsent bytes / 100 kB)``, flow-control credit / 1 MB. Every
      entry is clipped to a documented range.

Units: seconds, bytes, packets; the constants below state them.
"""

from __future__ import annotations

import math
from array import array
from typing import Any

from envs.errors import ConfigError
from envs.path_sender import PathSender

try:  # the compiled build's directives (the .py build runs the functions as written)
    import cython
except ImportError:  # pragma: no cover - the .py build installed without Cython
    from envs._cython_stub import cython  # type: ignore[assignment]
from envs.recovery import Recovery, pending_bytes_of, send_window_of

#: (a C double in the compiled module, whose ``math`` is C's: envs/mdp.pxd)
INF = float("inf")

# ------------------------------------------------------------------ paper MDP
#: RTT unit of the observation [s]: RTTs are given in units of 100 ms.
RTT_SCALE_S = 0.1
#: Rate unit of the window/RTT features [packets per RTT_SCALE_S]:
#: 1000 packets per 100 ms (~108 Mbit/s with 1350-byte packets).
RATE_SCALE_PKTS = 1000.0
#: Upper bound of every paper observation entry (values are clipped to it).
OBS_HIGH = 1e4
#: "goodput_rate" reward: floor of the step duration [s] and rate unit [bit/s].
GOODPUT_MIN_INTERVAL_S = 0.001
GOODPUT_RATE_SCALE_BPS = 100e6
#: Per-path feature names of the paper MDP, in observation order.
FEATURES = ("cwnd_per_rtt", "inflight_per_rtt", "swnd_per_rtt", "rtt")
#: step rewards of the paper MDP (computed between two decisions)
REWARDS = ("goodput", "goodput_rate", "ack_rate")
#: the paper's per-decision credit (FALCON paper Sec. IV-B: the throughput obtained upon the selection)
PACKET_RATE = "packet_rate"

# ------------------------------------------------------------- completion MDP
#: the completion-time reward (module docstring)
COMPLETION = "completion"
#: ``reward_unit: time``: one unit = 10 ms of predicted completion time [s]
COMPLETION_SCALE_S = 0.01
#: units of the completion reward (:class:`CompletionCredit`): ``packet``
#: (default): the time one packet takes at the connection's aggregate
#: estimated rate, ``payload / sum(cwnd/srtt)``, so that a good decision earns
#: about 1 whatever the bandwidth; ``time``: :data:`COMPLETION_SCALE_S`
COMPLETION_UNITS = ("packet", "time")
COMPLETION_UNIT = "packet"
#: per-path features of the completion MDP, in observation order
COMPLETION_PATH_FEATURES = (
    "log_rate",
    "fill",
    "has_room",
    "srtt",
    "rtt_cv",
    "loss_ratio",
    "lateness",
    "has_rtt_sample",
)
#: connection features of the completion MDP (after the per-path blocks)
COMPLETION_GLOBAL_FEATURES = ("remaining_time", "log_unsent", "flow_credit")
#: bounds of every completion-MDP state entry (each feature is clipped inside them)
COMPLETION_LOW = -10.0
COMPLETION_HIGH = 30.0
_HIGH = COMPLETION_HIGH  # its typed copy in the compiled core (mdp.pxd; a Python float is boxed)
#: default estimates delay of the completion credit [smoothed RTTs of the slowest path]
HINDSIGHT_RTTS = 1.0

#: every reward kind a learned scheduler can use
ALL_REWARDS = (*REWARDS, PACKET_RATE, COMPLETION)


def mdp_of(reward: str) -> str:
    """``"completion"`` or ``"paper"``: the MDP a reward kind belongs to."""
    if reward == COMPLETION:
        return "completion"
    if reward in REWARDS or reward == PACKET_RATE:
        return "paper"
    raise ConfigError(f"reward: unknown reward {reward!r}; choose one of {list(ALL_REWARDS)}")


def n_inputs(n_paths: int, reward: str = PACKET_RATE) -> int:
    """Length of the state vector of ``n_paths`` paths under ``reward``'s MDP."""
    if mdp_of(reward) == "completion":
        return len(COMPLETION_PATH_FEATURES) * n_paths + len(COMPLETION_GLOBAL_FEATURES)
    return len(FEATURES) * n_paths


def feature_names(n_paths: int, reward: str = PACKET_RATE) -> list[str]:
    """Names of the state entries, e.g. ``path0_cwnd_per_rtt``."""
    if mdp_of(reward) == "completion":
        return [f"path{i}_{f}" for i in range(n_paths) for f in COMPLETION_PATH_FEATURES] + list(
            COMPLETION_GLOBAL_FEATURES
        )
    return [f"path{i}_{f}" for i in range(n_paths) for f in FEATURES]


def reward_of_inputs(n_in: int, n_paths: int) -> str | None:
    """The MDP (as its canonical reward kind) whose state has ``n_in`` entries
    for ``n_paths`` paths, or None."""
    if n_in == n_inputs(n_paths, PACKET_RATE):
        return PACKET_RATE
    if n_in == n_inputs(n_paths, COMPLETION):
        return COMPLETION
    return None


# ------------------------------------------------------------------ paper MDP
def observe_into(view, vals: list) -> list:
    """Write the paper state of a connection ``view`` (the scheduler hook's
    view, :class:`envs.transport.Connection`) into ``vals`` (``4 * n_paths``
    floats) and return it. Windows in packets, ``swnd`` = the connection's
    remaining flow-control credit / payload per packet; each divided by the
    path's ``srtt`` in units of :data:`RTT_SCALE_S` and by
    :data:`RATE_SCALE_PKTS`; ``RTT`` = srtt / :data:`RTT_SCALE_S`; every
    entry clipped to :data:`OBS_HIGH`."""
    swnd = view.send_window / view.payload
    k = 0
    for p in view.paths:
        rtt = p.srtt / RTT_SCALE_S
        c = 1.0 / (rtt * RATE_SCALE_PKTS)
        vals[k] = min(p.cwnd / p.mss * c, OBS_HIGH)
        vals[k + 1] = min(p.packets_in_flight * c, OBS_HIGH)
        vals[k + 2] = min(swnd * c, OBS_HIGH)
        vals[k + 3] = min(rtt, OBS_HIGH)
        k += 4
    return vals


def step_reward(
    kind: str,
    delivered_bytes: float,
    duration_s: float,
    payload: int,
    ack_credit_sum: float = 0.0,
    ack_count: int = 0,
) -> float:
    """The paper MDP's step reward of one decision (between two decisions).

    ``"goodput"``: in-order bytes delivered during the step / payload per
    packet; ``"goodput_rate"``: the same bytes per second of the step (floored
    at :data:`GOODPUT_MIN_INTERVAL_S`) in units of
    :data:`GOODPUT_RATE_SCALE_BPS`; ``"ack_rate"``: mean of
    ``RTT_SCALE_S / time_to_ack`` over the packets acked during the step
    (``ack_credit_sum`` / ``ack_count``), 0 when none was."""
    if kind == "goodput":
        return delivered_bytes / payload
    if kind == "goodput_rate":
        dt = duration_s if duration_s > GOODPUT_MIN_INTERVAL_S else GOODPUT_MIN_INTERVAL_S
        return delivered_bytes * 8.0 / dt / GOODPUT_RATE_SCALE_BPS
    if kind == "ack_rate":
        return ack_credit_sum / ack_count if ack_count else 0.0
    raise ConfigError(f"reward: unknown reward {kind!r}; choose one of {list(REWARDS)}")


def ack_credit(now: float, sent_time: float) -> float:
    """The per-packet credit ``RTT_SCALE_S / time_to_ack`` of a packet sent
    (or decided) at ``sent_time`` and acknowledged at ``now`` [s]."""
    dt = now - sent_time
    return RTT_SCALE_S / (dt if dt > 1e-9 else 1e-9)


# ------------------------------------------------------------- completion MDP
def path_estimates(view) -> tuple[list[float], list[float]]:
    """Per path: smoothed RTT [s] and the window-limited delivery rate
    ``cwnd / srtt`` [payload bytes per s] of a connection ``view``.

    A path without an RTT sample yet is taken to be as good as the best
    probed one (the lowest srtt, the highest rate): optimism about what is
    unknown. With RFC 9002's 333 ms initial guess instead, a path that was
    never used would look slow for ever, and a policy that ignores the fast
    path would be judged right by the very prediction it starves."""
    n = len(view.paths)
    srtts = array("d", bytes(8 * n))
    rates = array("d", bytes(8 * n))
    estimates_into(view, srtts, rates)
    return srtts.tolist(), rates.tolist()


# The per-decision functions below index their arrays unchecked in the compiled core
# (boundscheck, wraparound off): each checks its arguments' lengths first, and every
# index is then in range by construction.
@cython.boundscheck(False)
@cython.wraparound(False)
def estimates_into(view, srtt, rate) -> float:
    """:func:`path_estimates` written into ``srtt`` and ``rate`` (arrays of
    the paths' length; typed in the compiled core); returns the largest
    estimated srtt [s]."""
    pay = _payload(view)
    paths = _paths(view)
    n = len(paths)
    if n == 0 or len(srtt) < n or len(rate) < n:
        raise ValueError(f"estimates_into: {n} paths, arrays of {len(srtt)} and {len(rate)}")
    probed = 0
    best_srtt = INF
    best_rate = -INF
    for i in range(n):
        p = paths[i]
        d = p.srtt
        r = _window(p) / p.mss * pay / d
        srtt[i] = d
        rate[i] = r
        if p.has_rtt_sample:
            probed += 1
            if d < best_srtt:
                best_srtt = d
            if r > best_rate:
                best_rate = r
    if 0 < probed < n:
        for i in range(n):
            if not paths[i].has_rtt_sample:
                srtt[i] = best_srtt
                rate[i] = best_rate
    largest = srtt[0]
    for i in range(1, n):
        if srtt[i] > largest:
            largest = srtt[i]
    return largest


def predicted_finish(now: float, unsent: float, last_send, in_flight, srtts, rates) -> float:
    """Fluid prediction of when the transfer completes [s].

    ``unsent``: bytes not yet sent (retransmissions included); per path:
    ``last_send`` [s] time of its newest packet, ``in_flight`` whether it has
    data in flight, ``srtts`` [s] and ``rates`` [bytes/s]. New data sent on a
    path at its rate is acknowledged ``srtt`` after it is sent; the unsent
    bytes go to the paths that finish them soonest (water-filling: a path is
    used iff ``now + srtt`` is before the finish). The result is at least
    ``now`` and at least every path's ``last_send + srtt`` while it has data
    in flight. (:func:`raw_finish` on the same inputs.)"""
    raw = array(
        "d",
        [now, float(unsent)]
        + [float(t) for t in last_send]
        + [1.0 if b else 0.0 for b in in_flight],
    )
    return raw_finish(raw, array("d", srtts), array("d", rates), array("q", bytes(8 * len(srtts))))


@cython.boundscheck(False)
@cython.wraparound(False)
def raw_finish(raw, srtt, rate, order) -> float:
    """:func:`predicted_finish` of a *raw record*, an array of doubles ``[now,
    unsent bytes, last send per path..., 1.0 or 0.0 (data in flight) per
    path...]``, under the estimates ``srtt`` [s] and ``rate`` [bytes/s]
    (arrays indexed by path, :func:`estimates_into`); ``order``: scratch of
    the paths' length (they are sorted into it by ``(srtt, rate)``,
    stably). Typed arrays in the compiled core."""
    n = len(srtt)
    if len(raw) != 2 + 2 * n or len(rate) < n or len(order) < n:
        raise ValueError(
            f"raw_finish: a record of {len(raw)} values for {n} paths (needs {2 + 2 * n}), "
            f"arrays of {len(rate)} and {len(order)}"
        )
    now = raw[0]
    unsent = raw[1]
    finish = now
    for i in range(n):
        if raw[2 + n + i] != 0.0:
            f = raw[2 + i] + srtt[i]
            if f > finish:
                finish = f
    if unsent <= 0:
        return finish
    for i in range(n):  # insertion sort: sorted(zip(srtts, rates)) without tuples
        j = i
        while j > 0 and (
            srtt[order[j - 1]] > srtt[i]
            or (srtt[order[j - 1]] == srtt[i] and rate[order[j - 1]] > rate[i])
        ):
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    rate_sum = 0.0  # water-filling over the paths in that order
    weighted = 0.0
    t = INF
    for k in range(n):
        i = order[k]
        start = now + srtt[i]
        r = rate[i]
        if start >= t or r <= 0.0:
            break
        rate_sum += r
        weighted += r * start
        t = (unsent + weighted) / rate_sum
    return t if t > finish else finish


def _clip(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


def completion_features_into(view, now: float, finish: float, vals: list) -> list:
    """Write the completion-MDP state (module docstring) into ``vals``
    (``8 * n_paths + 3`` floats) and return it. ``finish``: the predicted
    completion time [s] (:func:`predicted_finish`)."""
    out = array("d", bytes(8 * len(vals)))
    _completion_features(view, now, finish, out)
    vals[:] = out
    return vals


@cython.boundscheck(False)
@cython.wraparound(False)
def _completion_features(view, now: float, finish: float, out) -> int:
    """The body of :func:`completion_features_into`, written into ``out`` (an
    array of doubles; typed in mdp.pxd, where a typed function cannot be passed
    around as a value, and features writers are). Returns 0."""
    paths = _paths(view)
    if len(out) != 8 * len(paths) + 3:
        raise ValueError(
            f"completion features: {len(paths)} paths need {8 * len(paths) + 3} values, got {len(out)}"
        )
    k = 0
    for p in paths:
        srtt = p.srtt
        cwnd = _window(p)
        out[k] = min(math.log1p(cwnd / p.mss / srtt / 100.0), _HIGH)
        out[k + 1] = _clip(p.bytes_in_flight / cwnd, 0.0, 2.0)
        out[k + 2] = 1.0 if p.may_send(now) else 0.0
        out[k + 3] = _clip(srtt / 0.1, 0.0, 10.0)
        out[k + 4] = _clip(p.rttvar / srtt, 0.0, 3.0)
        out[k + 5] = p.packets_lost / (p.packets_sent + 1.0)
        out[k + 6] = _clip((now + srtt - finish) / 0.1, -10.0, 10.0)
        out[k + 7] = 1.0 if p.has_rtt_sample else 0.0
        k += 8
    out[k] = _clip((finish - now) / 0.1, 0.0, 30.0)
    out[k + 1] = math.log1p(_pending_bytes(view) / 1e5)
    out[k + 2] = _clip(_send_window(view) / 1e6, 0.0, 10.0)
    return 0


def check_reward_unit(unit) -> str:
    """``unit`` if it names a unit of the completion reward, else a ConfigError."""
    if unit not in COMPLETION_UNITS:
        raise ConfigError(f"reward_unit: expected one of {list(COMPLETION_UNITS)}, got {unit!r}")
    return unit


def probe_path(view) -> int | None:
    """Completion MDP: a path with window room that never sent a packet, or
    None. Such a path gets the next packet whatever the agent prefers: one
    packet buys the path's first RTT sample, without which neither the
    prediction nor the agent can judge it (every rule-based scheduler
    probes unused paths first, too)."""
    for p in _paths(view):
        if _packets_sent(p) == 0 and _has_room(p):
            return p.index
    return None


def decode_action(view, action: int):
    """Completion MDP: the path ``action`` if it has room (window and pacing
    budget), else None (wait; the connection asks again at the next ACK,
    loss, pacer or app event)."""
    return action if _has_room(_paths(view)[action]) else None


# A view's paths are the core's PathSender objects (a final class), whose window and
# room the compiled module reads through C; duck-typed path views (a decision log's,
# a test's) are read through their properties, which compute the same.
def _window(p) -> float:
    """``p.cwnd`` [bytes]."""
    if type(p) is PathSender:
        ps = p
        return ps.cc.cwnd
    return p.cwnd


def _has_room(p) -> bool:
    """``p.has_room``."""
    if type(p) is PathSender:
        ps = p
        return ps.may_send(ps.clock.now)
    return p.has_room


def _packets_sent(p) -> int:
    """``p.packets_sent``."""
    if type(p) is PathSender:
        ps = p
        return ps.packets_sent
    return p.packets_sent


# Likewise a view is the core's connection, whose fields the MDP reads are declared in
# its base class Recovery (envs/recovery.pxd), or a duck-typed view (envs/views.py).
#: True in the compiled module (an extension's ``__file__`` is not the ``.py``)
COMPILED = not __file__.endswith(".py")
#: the latest type found to be a Recovery: isinstance of a subclass walks its MRO
#: (about 45 instructions, five times a decision), an identity test does not
_RECOVERY_TYPE: Any = Recovery


def _is_core(view) -> bool:
    """``view`` is the core's connection (a :class:`envs.recovery.Recovery`)."""
    global _RECOVERY_TYPE
    if type(view) is _RECOVERY_TYPE:
        return True
    if isinstance(view, Recovery):
        _RECOVERY_TYPE = type(view)
        return True
    return False


def _core(view):
    """``view``, known to be a Recovery (:func:`_is_core`), as one without a second
    test (a typed assignment would walk the MRO again)."""
    return cython.cast(Recovery, view) if COMPILED else view


def _paths(view) -> list:
    """``view.paths``."""
    if _is_core(view):
        return _core(view).paths  # a Recovery (mdp.pxd): the field is read in C
    return view.paths


def _payload(view) -> int:
    """``view.payload`` [bytes]."""
    if _is_core(view):
        return _core(view).payload
    return view.payload


def _pending_bytes(view) -> int:
    """``view.pending_bytes`` [bytes]."""
    if _is_core(view):
        return pending_bytes_of(_core(view))
    return view.pending_bytes


def _send_window(view) -> int:
    """``view.send_window`` [bytes]."""
    if _is_core(view):
        return send_window_of(_core(view))
    return view.send_window


__all__ = [
    "RTT_SCALE_S",
    "RATE_SCALE_PKTS",
    "OBS_HIGH",
    "GOODPUT_MIN_INTERVAL_S",
    "GOODPUT_RATE_SCALE_BPS",
    "FEATURES",
    "REWARDS",
    "PACKET_RATE",
    "COMPLETION",
    "COMPLETION_SCALE_S",
    "COMPLETION_UNITS",
    "COMPLETION_UNIT",
    "check_reward_unit",
    "COMPLETION_LOW",
    "COMPLETION_HIGH",
    "COMPLETION_PATH_FEATURES",
    "COMPLETION_GLOBAL_FEATURES",
    "HINDSIGHT_RTTS",
    "ALL_REWARDS",
    "mdp_of",
    "n_inputs",
    "feature_names",
    "reward_of_inputs",
    "observe_into",
    "step_reward",
    "ack_credit",
    "path_estimates",
    "estimates_into",
    "predicted_finish",
    "raw_finish",
    "completion_features_into",
    "decode_action",
    "probe_path",
]
