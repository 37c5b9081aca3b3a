"""Decision logs of the real transport -> experience logs for offline training.

    python -m falcon.deploy.experience decisions.jsonl ... --out exp.h5 \\
        --scenario static_4g_wlan [--set paths.0.bandwidth_mbps=20] [--seed 0] [--append]

A decision log (JSONL, written by the transport's model scheduler with
``--decision-log``; format in ``transports/falcon-sched/src/log.rs``) holds
one episode per connection: a ``header`` line, then ``decision`` lines (time
[s], state, Q-values, action, whether the path had room), ``packet`` lines
(the packet a decision sent) and ``fate`` lines (acked or lost, time [s]).
The transitions get the reward of the log's MDP, as the emulator's recorder
gives them (docs/reference/formats/model_formats.md, "Reward"):

* paper MDP, ``packet_rate``: ``0.1 s / (t_ack - t_decision)``, 0 if the
  packet was declared lost; a decision closes a transition once its packet's
  fate is known (waits and decisions without a known fate close none);
* completion MDP, ``completion`` (``reward_unit = packet``): the reduction
  of the predicted finish time ``F`` (:func:`envs.mdp.predicted_finish`),
  both predictions made with the path estimates of the first decision one
  sRTT of the slowest path later (:class:`envs.credit.CompletionCredit`'s
  order), the last decision against the completion time (the last ACK).

The scenario (``--scenario``, as ``python -m falcon.relay`` takes it) gives
every episode its network conditions; the file is written with
:class:`baselines.dqn.experience.ExperienceRecorder`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from baselines.dqn.experience import ExperienceRecorder
from baselines.dqn.files import ExperienceFileError
from envs.errors import FalconInputError
from envs.mdp import COMPLETION, HINDSIGHT_RTTS, PACKET_RATE, ack_credit, n_inputs
from falcon.deploy.reference import reference_mdp

_mdp = reference_mdp()
path_estimates, predicted_finish = _mdp.path_estimates, _mdp.predicted_finish

FORMAT = "falcon-decision-log"


@dataclass
class LoggedEpisode:
    """One connection of a decision log."""

    header: dict
    decisions: list[dict] = field(default_factory=list)
    packets: dict[int, dict] = field(default_factory=dict)
    fates: dict[int, dict] = field(default_factory=dict)
    end: dict | None = None

    @property
    def reward(self) -> str:
        return self.header["reward"]

    @property
    def n_paths(self) -> int:
        return int(self.header["n_paths"])


def read_decision_log(path) -> list[LoggedEpisode]:
    """The episodes of a decision log; a missing or malformed file raises one
    :class:`ExperienceFileError` line naming the file, line and problem (an
    unterminated last line, cut off by a kill, is left out)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ExperienceFileError(f"decision log {path}: {e.strerror or e}") from None
    lines = text.split("\n")
    # a last line without its newline is a record the writer did not finish
    # (a killed server): left out; every other line must be whole
    lines.pop()
    episodes: list[LoggedEpisode] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            kind = rec["kind"]
            if kind == "header":
                if rec.get("format") != FORMAT or rec.get("reward") not in (
                    PACKET_RATE,
                    COMPLETION,
                ):
                    raise ValueError("not a falcon-decision-log header")
                episodes.append(LoggedEpisode(rec))
                continue
            if not episodes:
                raise ValueError("a record before the first header")
            ep = episodes[-1]
            if kind == "decision":
                if rec["i"] != len(ep.decisions):
                    raise ValueError(f"decision {rec['i']} out of order")
                if len(rec["state"]) != n_inputs(ep.n_paths, ep.reward):
                    raise ValueError(f"state of {len(rec['state'])} values")
                ep.decisions.append(rec)
            elif kind == "packet":
                ep.packets[int(rec["i"])] = rec
            elif kind == "fate":
                ep.fates.setdefault(int(rec["i"]), rec)
            elif kind == "end":
                ep.end = rec
            else:
                raise ValueError(f"unknown kind {kind!r}")
        except (ValueError, KeyError, TypeError) as e:
            raise ExperienceFileError(f"decision log {path}, line {no}: {e}") from None
    if not episodes:
        raise ExperienceFileError(f"decision log {path}: no episode (no header line)")
    return episodes


def _state(d: dict) -> np.ndarray:
    # null entries (the Q-values of probes) never reach a state
    return np.asarray(d["state"], np.float32)


def packet_rate_transitions(ep: LoggedEpisode) -> list[tuple]:
    """``(state, action, reward, next_state, done, time_s)`` of the paper MDP."""
    out = []
    ds = ep.decisions
    closed = [i for i, d in enumerate(ds) if d["sent"] and i in ep.packets and i in ep.fates]
    for i in closed:
        d, fate = ds[i], ep.fates[i]
        r = ack_credit(float(fate["t"]), float(d["t"])) if fate["acked"] else 0.0
        nxt = ds[min(i + 1, len(ds) - 1)]
        out.append((_state(d), int(d["action"]), r, _state(nxt), False, float(d["t"])))
    if out and ep.end is not None:
        # the download completed after the last decision that closed a transition
        out[-1] = (*out[-1][:4], True, out[-1][5])
    return out


def _view(d: dict) -> SimpleNamespace:
    raw = d["raw"]
    paths = [SimpleNamespace(**p) for p in raw["paths"]]
    return SimpleNamespace(payload=raw["payload"], paths=paths, pending_bytes=raw["pending_bytes"])


def _raw(d: dict) -> tuple:
    """``CompletionCredit._raw``: (now, unsent, last_send per path, in flight per path)."""
    raw = d["raw"]
    return (
        float(d["t"]),
        raw["pending_bytes"],
        tuple(p["last_send"] for p in raw["paths"]),
        tuple(p["bytes_in_flight"] > 0 for p in raw["paths"]),
    )


def completion_transitions(
    ep: LoggedEpisode, hindsight_rtts: float = HINDSIGHT_RTTS
) -> list[tuple]:
    """The completion MDP's transitions (``reward_unit = packet``), closed in
    the order and with the estimates :class:`envs.credit.CompletionCredit` uses."""
    ds = ep.decisions
    if not ds:
        return []

    def estimates(d):
        view = _view(d)
        srtts, rates = path_estimates(view)
        total = sum(rates)
        return srtts, rates, (view.payload / total if total > 0 else 0.01)

    out, opened = [], deque()
    for k, d in enumerate(ds):
        srtts, rates, unit = estimates(d)
        if k > 0:
            opened[-1][3] = k  # the previous decision's next state
        now = float(d["t"])
        while opened and opened[0][3] is not None and opened[0][2] <= now:
            j, _, _, nxt = opened.popleft()
            r = (
                predicted_finish(*_raw(ds[j]), srtts, rates)
                - predicted_finish(*_raw(ds[nxt]), srtts, rates)
            ) / unit
            out.append(
                (_state(ds[j]), int(ds[j]["action"]), r, _state(ds[nxt]), False, float(ds[j]["t"]))
            )
        opened.append([k, None, now + hindsight_rtts * max(srtts), None])
    # the end: every closed record with the last estimates, the last one
    # against the completion time (the last acknowledgement the server saw)
    srtts, rates, unit = estimates(ds[-1])
    for j, _, _, nxt in opened:
        if nxt is None:
            continue
        r = (
            predicted_finish(*_raw(ds[j]), srtts, rates)
            - predicted_finish(*_raw(ds[nxt]), srtts, rates)
        ) / unit
        out.append(
            (_state(ds[j]), int(ds[j]["action"]), r, _state(ds[nxt]), False, float(ds[j]["t"]))
        )
    acks = [float(f["t"]) for f in ep.fates.values() if f["acked"]]
    t_end = max(acks) if acks else float(ep.end["t"]) if ep.end else float(ds[-1]["t"])
    last = ds[-1]
    r = (predicted_finish(*_raw(last), srtts, rates) - t_end) / unit
    out.append(
        (_state(last), int(last["action"]), r, _state(last), ep.end is not None, float(last["t"]))
    )
    return out


def convert(logs, out, scenario: dict, seed: int = 0, append: bool = False) -> tuple[Path, int]:
    """Write the episodes of ``logs`` to the experience log ``out``; returns
    (path, number of transitions)."""
    episodes = [ep for log in logs for ep in read_decision_log(log)]
    kinds = {(ep.n_paths, ep.reward) for ep in episodes}
    if len(kinds) != 1:
        raise ExperienceFileError(
            f"decision logs {[str(x) for x in logs]}: episodes of different "
            f"MDPs or path counts {sorted(kinds)}"
        )
    ((n_paths, reward),) = kinds
    if len(scenario["paths"]) != n_paths:
        raise ExperienceFileError(
            f"decision logs: {n_paths} paths, the scenario has {len(scenario['paths'])}"
        )
    rec = ExperienceRecorder(n_paths, reward)
    for ep in episodes:
        rec.begin_episode(scenario, seed)
        rows = packet_rate_transitions(ep) if reward == PACKET_RATE else completion_transitions(ep)
        for row in rows:
            rec.add(*row)
    return rec.write(out, append=append), len(rec)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m falcon.deploy.experience",
        description="Convert transport decision logs to an experience log (HDF5).",
    )
    ap.add_argument(
        "logs", nargs="+", help="decision logs (JSONL) of the transport's model scheduler"
    )
    ap.add_argument("--out", required=True, help="experience log to write (HDF5)")
    ap.add_argument(
        "--scenario", help="the relay's scenario config (default: the relay's self-test pair)"
    )
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="change a scenario key"
    )
    ap.add_argument(
        "--seed", type=int, default=0, help="the relay's seed, recorded with every episode"
    )
    ap.add_argument("--append", action="store_true", help="add to an existing experience log")
    args = ap.parse_args(argv)
    from falcon.relay.__main__ import load_scenario

    try:
        scen = load_scenario(args.scenario, args.set)
        path, n = convert(args.logs, args.out, scen, args.seed, args.append)
    except FalconInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{path}: {n} transitions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
