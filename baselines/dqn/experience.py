"""Experience logs: the transitions of online runs, in HDF5, for offline training.

Every transition a recording scheduler closes (state, action, reward, next
state, done, emulated time) is kept with the episode it came from, and every
episode with its network conditions (per path: bandwidth, mean RTT, RTT
standard deviation, loss) and its full scenario. The layout is documented in
``docs/reference/formats/model_formats.md`` ("Experience log"); files are written atomically
(temporary file + rename) and validated when read, so a truncated or foreign
file gives one :class:`~baselines.dqn.files.ExperienceFileError` line.

    rec = ExperienceRecorder(n_paths=2, reward="packet_rate")
    rec.begin_episode(scenario, seed)      # per episode
    rec.add(s, a, r, s2, done, t)          # per transition (DQNScheduler.recorder does it)
    rec.write("experience.h5")             # or write(..., append=True)
    exp = read_experience("experience.h5") # Experience: arrays + episodes table
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from baselines.dqn.conditions import CONDITION_FIELDS, path_conditions
from baselines.dqn.files import (
    ExperienceFileError,
    atomic_path,
    dataset_options,
    hdf5_error_line,
    integer_attribute,
    open_hdf5_for_writing,
    write_header,
)
from envs.mdp import (
    ALL_REWARDS,
    COMPLETION,
    COMPLETION_UNIT,
    COMPLETION_UNITS,
    FEATURES,
    OBS_HIGH,
    RATE_SCALE_PKTS,
    RTT_SCALE_S,
    check_reward_unit,
    feature_names,
    n_inputs,
)

FORMAT = "falcon-experience"
FORMAT_VERSION = 1
TRANSITION_FIELDS = ("state", "action", "reward", "next_state", "done", "time_s", "episode")


@dataclass
class Experience:
    """An experience log in memory (arrays over ``N`` transitions, ``E`` episodes)."""

    n_paths: int
    reward: str
    state: np.ndarray  # [N, 4 n_paths] float32
    action: np.ndarray  # [N] int64
    reward_values: np.ndarray  # [N] float32
    next_state: np.ndarray  # [N, 4 n_paths] float32
    done: np.ndarray  # [N] bool
    time_s: np.ndarray  # [N] float64, emulated time of the decision
    episode: np.ndarray  # [N] int64, index into the episode table
    episode_seed: np.ndarray  # [E] int64
    episode_scenario: list[str]  # [E] JSON of the normalised scenario
    conditions: np.ndarray  # [E, n_paths, len(CONDITION_FIELDS)] float64
    attrs: dict = field(default_factory=dict)
    #: unit of the completion reward (:data:`envs.mdp.COMPLETION_UNITS`; the
    #: file attribute ``reward_unit``, ``"time"`` in logs written before it)
    reward_unit: str = COMPLETION_UNIT

    def __len__(self) -> int:
        return len(self.action)

    @property
    def n_episodes(self) -> int:
        return len(self.episode_seed)

    def row_conditions(self) -> np.ndarray:
        """The network conditions of every transition, ``[N, n_paths, 4]``."""
        return self.conditions[self.episode]

    def arrays(self):
        """``(states, actions, rewards, next_states, dones)`` for a replay memory."""
        return (
            self.state,
            self.action,
            self.reward_values,
            self.next_state,
            self.done.astype(np.float32),
        )


class ExperienceRecorder:
    """Collects transitions and episodes in memory; :meth:`write` saves them."""

    def __init__(self, n_paths: int, reward: str, reward_unit: str = COMPLETION_UNIT):
        self.n_paths = int(n_paths)
        self.reward = str(reward)
        self.reward_unit = check_reward_unit(reward_unit)
        self._rows: list[tuple] = []
        self._episodes: list[tuple[int, str, list]] = []

    def begin_episode(self, scenario, seed: int) -> None:
        from envs.scenario import normalise_scenario

        s = normalise_scenario(scenario)
        conds = path_conditions(s)
        self._episodes.append(
            (
                int(seed),
                json.dumps(s, sort_keys=True, default=str),
                [[c[k] for k in CONDITION_FIELDS] for c in conds],
            )
        )

    def add(self, state, action, reward, next_state, done, time_s) -> None:
        if not self._episodes:
            raise RuntimeError("ExperienceRecorder.add before begin_episode")
        self._rows.append(
            (state, action, reward, next_state, done, time_s, len(self._episodes) - 1)
        )

    def __len__(self) -> int:
        return len(self._rows)

    def to_experience(self) -> Experience:
        n_in = n_inputs(self.n_paths, self.reward)
        rows = self._rows
        if rows:
            st, ac, rw, ns, dn, ts, ep = zip(*rows)
        else:
            st = ns = np.zeros((0, n_in), np.float32)
            ac = rw = dn = ts = ep = ()
        return Experience(
            n_paths=self.n_paths,
            reward=self.reward,
            reward_unit=self.reward_unit,
            state=np.asarray(st, np.float32).reshape(-1, n_in),
            action=np.asarray(ac, np.int64),
            reward_values=np.asarray(rw, np.float32),
            next_state=np.asarray(ns, np.float32).reshape(-1, n_in),
            done=np.asarray(dn, bool),
            time_s=np.asarray(ts, np.float64),
            episode=np.asarray(ep, np.int64),
            episode_seed=np.asarray([e[0] for e in self._episodes], np.int64),
            episode_scenario=[e[1] for e in self._episodes],
            conditions=np.asarray([e[2] for e in self._episodes], np.float64).reshape(
                -1, self.n_paths, len(CONDITION_FIELDS)
            ),
        )

    def write(self, path, append: bool = False) -> Path:
        """Write the log to ``path`` atomically; ``append=True`` adds to an
        existing log (same number of paths and reward kind)."""
        exp = self.to_experience()
        if append and Path(path).exists():
            exp = concatenate([read_experience(path), exp])
        return write_experience(path, exp)


def concatenate(logs: list[Experience]) -> Experience:
    """One log from several (episode indices renumbered)."""
    if not logs:
        raise ExperienceFileError("no experience logs to concatenate")
    first = logs[0]
    for e in logs[1:]:
        if e.n_paths != first.n_paths or e.reward != first.reward:
            raise ExperienceFileError(
                f"cannot join experience logs of {first.n_paths} paths / reward "
                f"{first.reward!r} and {e.n_paths} paths / reward {e.reward!r}"
            )
        if e.reward == COMPLETION and e.reward_unit != first.reward_unit:
            raise ExperienceFileError(
                f"cannot join experience logs rewarded in {first.reward_unit!r} "
                f"and in {e.reward_unit!r} units"
            )
    offsets = np.cumsum([0] + [e.n_episodes for e in logs[:-1]])
    return Experience(
        n_paths=first.n_paths,
        reward=first.reward,
        reward_unit=first.reward_unit,
        state=np.concatenate([e.state for e in logs]),
        action=np.concatenate([e.action for e in logs]),
        reward_values=np.concatenate([e.reward_values for e in logs]),
        next_state=np.concatenate([e.next_state for e in logs]),
        done=np.concatenate([e.done for e in logs]),
        time_s=np.concatenate([e.time_s for e in logs]),
        episode=np.concatenate([e.episode + o for e, o in zip(logs, offsets)]),
        episode_seed=np.concatenate([e.episode_seed for e in logs]),
        episode_scenario=[s for e in logs for s in e.episode_scenario],
        conditions=np.concatenate([e.conditions for e in logs]),
        attrs=dict(first.attrs),
    )


def write_experience(path, exp: Experience) -> Path:
    """Write ``exp`` to ``path`` (HDF5, layout in ``docs/reference/formats/model_formats.md``), atomically."""
    import h5py

    path = Path(path)
    with atomic_path(path) as tmp:
        with open_hdf5_for_writing(tmp) as f:
            write_header(f, FORMAT, FORMAT_VERSION)
            f.attrs["n_paths"] = exp.n_paths
            f.attrs["reward"] = exp.reward
            if exp.reward == COMPLETION:
                f.attrs["reward_unit"] = exp.reward_unit
            f.attrs["feature_names"] = feature_names(exp.n_paths, exp.reward)
            f.attrs["features_per_path"] = list(FEATURES)
            f.attrs["rtt_scale_s"] = RTT_SCALE_S
            f.attrs["rate_scale_pkts"] = RATE_SCALE_PKTS
            f.attrs["obs_high"] = OBS_HIGH
            t = f.create_group("transitions")
            kw = {"compression": "gzip", "compression_opts": 4} if len(exp) > 1024 else {}
            for name, data in (
                ("state", exp.state),
                ("action", exp.action),
                ("reward", exp.reward_values),
                ("next_state", exp.next_state),
                ("done", exp.done.astype(np.uint8)),
                ("time_s", exp.time_s),
                ("episode", exp.episode),
            ):
                t.create_dataset(name, data=data, **dataset_options(data, **kw))
            e = f.create_group("episodes")
            e.create_dataset("seed", data=exp.episode_seed, **dataset_options(exp.episode_seed))
            e.create_dataset(
                "scenario",
                data=np.array(exp.episode_scenario, dtype=object),
                dtype=h5py.string_dtype(),
            )
            c = e.create_dataset(
                "conditions", data=exp.conditions, **dataset_options(exp.conditions)
            )
            c.attrs["columns"] = list(CONDITION_FIELDS)
            c.attrs["units"] = ["Mbit/s", "ms", "ms", "probability"]
    return path


def read_experience(path) -> Experience:
    """Read and validate an experience log; one-line
    :class:`~baselines.dqn.files.ExperienceFileError` when it is unusable."""
    import h5py

    path = Path(path)
    if not path.is_file():
        raise ExperienceFileError(f"experience log {path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ExperienceFileError(
            f"experience log {path}: not a readable HDF5 file ({str(e).splitlines()[0]})"
        ) from None
    try:
        with f:
            n_paths, reward, data, seeds, scen, conds = _read_log(path, f)
            unit = f.attrs.get("reward_unit", "time")  # logs before the unit existed: 10 ms
            unit = unit.decode() if isinstance(unit, bytes) else unit
            if unit not in COMPLETION_UNITS:
                raise ExperienceFileError(
                    f"experience log {path}: unknown reward_unit {unit!r} "
                    f"(known: {list(COMPLETION_UNITS)})"
                )
    except ExperienceFileError:
        raise
    except (KeyError, OSError, ValueError, TypeError, RuntimeError, IndexError) as err:
        # damaged content past a readable header (a failed checksum, a missing dataset)
        raise ExperienceFileError(
            f"experience log {path}: incomplete or corrupt ({hdf5_error_line(err)})"
        ) from None
    n = len(data["action"])
    n_in = n_inputs(n_paths, reward) if reward in ALL_REWARDS else 4 * n_paths
    problems = [
        f"{k} holds {a.dtype}, expected {'integers' if k in _INTEGER_ARRAYS else 'real numbers'}"
        for k, a in (*data.items(), ("seed", seeds), ("conditions", conds))
        if a.dtype.kind not in ("biu" if k in _INTEGER_ARRAYS else "biuf")
    ]
    if problems:
        raise ExperienceFileError(f"experience log {path}: {'; '.join(problems)}")
    for k in ("state", "next_state", "reward", "time_s"):
        if not np.isfinite(data[k]).all():
            problems.append(f"{k} holds non-finite values")
    for k in ("state", "next_state"):
        if data[k].shape != (n, n_in):
            problems.append(f"{k} has shape {data[k].shape}, expected ({n}, {n_in})")
    for k in ("reward", "done", "time_s", "episode"):
        if data[k].shape != (n,):
            problems.append(f"{k} has shape {data[k].shape}, expected ({n},)")
    if conds.shape != (len(seeds), n_paths, len(CONDITION_FIELDS)) or len(scen) != len(seeds):
        problems.append("episode table sizes disagree")
    if not problems and n and (data["episode"].min() < 0 or data["episode"].max() >= len(seeds)):
        problems.append("episode index out of range")
    if not problems and n and (data["action"].min() < 0 or data["action"].max() >= n_paths):
        problems.append(f"action out of range for {n_paths} paths")
    if problems:
        raise ExperienceFileError(f"experience log {path}: {'; '.join(problems)}")
    return Experience(
        n_paths=n_paths,
        reward=reward,
        state=data["state"].astype(np.float32),
        action=data["action"].astype(np.int64),
        reward_values=data["reward"].astype(np.float32),
        next_state=data["next_state"].astype(np.float32),
        done=data["done"].astype(bool),
        time_s=data["time_s"].astype(np.float64),
        episode=data["episode"].astype(np.int64),
        episode_seed=seeds.astype(np.int64),
        episode_scenario=scen,
        conditions=conds.astype(np.float64),
        attrs={"path": str(path)},
        reward_unit=str(unit),
    )


#: the arrays of a log that hold integers (the others: real numbers)
_INTEGER_ARRAYS = ("action", "done", "episode", "seed")


def _read_log(path, f):
    """The header checks and arrays of an open experience log (raises on damage)."""
    fmt = f.attrs.get("format")
    if isinstance(fmt, bytes):
        fmt = fmt.decode()
    if fmt != FORMAT:
        raise ExperienceFileError(
            f"experience log {path}: not a FALCON experience log "
            f"(format attribute {fmt!r}, expected {FORMAT!r})"
        )
    version = integer_attribute(f.attrs.get("format_version", -1), "format_version")
    if version > FORMAT_VERSION:
        raise ExperienceFileError(
            f"experience log {path}: format version {version} is newer than "
            f"this reader's ({FORMAT_VERSION})"
        )
    n_paths = integer_attribute(f.attrs["n_paths"], "n_paths")
    reward = str(f.attrs["reward"])
    t, e = f["transitions"], f["episodes"]
    data = {
        k: t[k][()]
        for k in ("state", "action", "reward", "next_state", "done", "time_s", "episode")
    }
    seeds = e["seed"][()]
    scen = [s.decode() if isinstance(s, bytes) else str(s) for s in e["scenario"][()]]
    return n_paths, reward, data, seeds, scen, e["conditions"][()]


__all__ = [
    "Experience",
    "ExperienceRecorder",
    "read_experience",
    "write_experience",
    "concatenate",
    "FORMAT",
    "FORMAT_VERSION",
]
