"""Online DDPG training of :class:`baselines.hybrid.agent.HybridMPTCP` (``fit``).

Each episode is a multipath bulk transfer (an endless one) of the agent's
connection for ``episode_s`` emulated seconds, on the training scenario with
its paths replaced: per path and per episode, the bottleneck rate is drawn
log-uniformly from ``bandwidth_mbps``, the base RTT log-uniformly from
``rtt_ms`` (both ranges span a factor 30-100, so small values are drawn as
often as large ones), the drop-tail buffer uniformly (integer) from
``buffer_packets`` and the loss rate uniformly from ``loss`` (the paper's
training ranges: 4-128 Mbit/s, 3-300 ms, 20-500 packets). With
``cross_flows`` = N > 0, 0..N single-path bulk flows (uniform per episode,
congestion control ``cross_cc``, CUBIC by default) share the bottleneck of
one path drawn per episode. ``cc`` is the congestion control of the agent's
paths (LIA: the Hybrid's inner loop; DRL-MPTCP replaces it with a held
window anyway); null keeps the scenario's.

Every slot after the first of an episode adds one transition to the replay
(``samples`` of them in all: the session's training samples, 30 000 by
default, ours: the paper gives no number); a gradient step of actor and
critic follows every slot once the replay holds ``warmup`` transitions (and
a batch). The replay keeps the
subflow count fixed (the training scenario's paths, no padding). The
learning curve (``log``, one point per episode): ``score``, the mean reward
per slot (the paper's learning score, unscaled), the mean connection
throughput [Mbit/s], the losses and update count. Episode seeds derive from
``seed``; with the agent's own seed the run is reproducible bit for bit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from envs.errors import ConfigError, is_whole_number

TRAIN_KEYS = (
    "samples",
    "episode_s",
    "bandwidth_mbps",
    "rtt_ms",
    "buffer_packets",
    "loss",
    "cc",
    "cross_flows",
    "cross_cc",
)


def _range(
    name: str, value, lo_min: float, integer: bool = False, allow_zero: bool = False
) -> tuple:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(f"hybrid.train.{name}: expected [lo, hi], got {value!r}") from None
    ok = (lo >= lo_min if allow_zero else lo > lo_min) and lo <= hi and math.isfinite(hi)
    if not ok or (integer and (lo != int(lo) or hi != int(hi))):
        raise ConfigError(
            f"hybrid.train.{name}: expected [lo, hi] with {lo_min} {'<=' if allow_zero else '<'} "
            f"lo <= hi{' (integers)' if integer else ''}, got {value!r}"
        )
    return (int(lo), int(hi)) if integer else (lo, hi)


def draw_scenario(
    base: dict, n_paths: int, ranges: dict, rng: np.random.Generator, cc: str | None
) -> dict:
    """The agent's scenario of one episode: ``base``'s settings with ``n_paths`` paths drawn from ``ranges``."""
    from envs.plain import copy_plain

    s = copy_plain(base)
    paths = []
    for i in range(n_paths):
        (blo, bhi), (rlo, rhi) = ranges["bandwidth_mbps"], ranges["rtt_ms"]
        (qlo, qhi), (llo, lhi) = ranges["buffer_packets"], ranges["loss"]
        paths.append(
            {
                "name": f"path{i}",
                "bandwidth_mbps": float(math.exp(rng.uniform(math.log(blo), math.log(bhi)))),
                "rtt_ms": float(math.exp(rng.uniform(math.log(rlo), math.log(rhi)))),
                "buffer_packets": int(rng.integers(qlo, qhi + 1)),
                "loss": float(rng.uniform(llo, lhi)),
            }
        )
    s["paths"] = paths
    if cc is not None:
        s["cc"] = cc
    return s


def run_episode(
    agent, scenario: dict, seed: int, episode_s: float, cross_flows: int, shared: int, cross_cc: str
) -> None:
    """One training episode: the agent's endless multipath bulk transfer on
    ``scenario`` for ``episode_s`` [s], ``cross_flows`` single-path bulk flows
    (``cross_cc``) sharing path ``shared``'s bottleneck (its ``shared_link``)."""
    from baselines import make_scheduler
    from envs.apps.bulk import BulkApp
    from envs.emulation import Emulation
    from envs.sim import collector_paused

    agent.rewards, agent.throughputs = [], []
    with collector_paused():
        emu = Emulation(seed)
        conn = emu.connect(scenario, agent)
        agent.reset(conn)
        BulkApp(10**15).start(conn)
        for j in range(cross_flows):
            c = emu.connect(
                {**scenario, "cc": cross_cc, "paths": [scenario["paths"][shared]]},
                make_scheduler("minrtt"),
                name=f"cross{j}",
            )
            BulkApp(10**15).start(c)
        emu.sim.run(until=episode_s)
        agent._gen += 1  # orphan the episode's timer
        del emu, conn


def _checked_ranges(
    slot_s: float, samples, episode_s, cross_flows, bandwidth_mbps, rtt_ms, buffer_packets, loss
) -> dict[str, tuple]:
    """Check :func:`fit`'s budget and drawing options (``slot_s``: the agent's slot [s]);
    returns the ``(lo, hi)`` range of each drawn path field, units in its name."""
    if not is_whole_number(samples, 1):
        raise ConfigError(f"hybrid.train.samples: must be a positive integer, got {samples!r}")
    if (
        isinstance(episode_s, bool)
        or not isinstance(episode_s, int | float)
        or not episode_s >= 2 * slot_s
    ):
        raise ConfigError(
            f"hybrid.train.episode_s: must be at least two slots ({2 * slot_s} s), "
            f"got {episode_s!r}"
        )
    if not is_whole_number(cross_flows, 0):
        raise ConfigError(f"hybrid.train.cross_flows: must be an integer >= 0, got {cross_flows!r}")
    ranges = {
        "bandwidth_mbps": _range("bandwidth_mbps", bandwidth_mbps, 0.0),
        "rtt_ms": _range("rtt_ms", rtt_ms, 0.0),
        "buffer_packets": _range(
            "buffer_packets", buffer_packets, 1, integer=True, allow_zero=True
        ),
        "loss": _range("loss", loss, 0.0, allow_zero=True),
    }
    if ranges["loss"][1] >= 1.0:
        raise ConfigError(f"hybrid.train.loss: the loss rate must stay below 1, got {loss!r}")
    return ranges


def fit(
    agent,
    scenario,
    app,
    seed: int = 0,
    log: Callable | None = None,
    progress: bool = True,
    samples: int = 30000,
    episode_s: float = 20.0,
    bandwidth_mbps: Sequence[float] = (4, 128),
    rtt_ms: Sequence[float] = (3, 300),
    buffer_packets: Sequence[int] = (20, 500),
    loss: Sequence[float] = (0.0, 0.0),
    cc: str | None = "lia",
    cross_flows: int = 0,
    cross_cc: str = "cubic",
    **unknown,
) -> Mapping[str, float]:
    """Train ``agent`` online (module docstring); returns summary metrics. ``app`` is not used:
    every training episode is an endless bulk transfer."""
    from baselines.gaps.ddpg import Replay
    from baselines.hybrid.features import N_FEATURES
    from envs.scenario import normalise_scenario

    if unknown:
        raise ConfigError(
            f"hybrid.train: unknown key(s) {sorted(unknown)}; known: {', '.join(TRAIN_KEYS)}"
        )
    ranges = _checked_ranges(
        agent.slot_s, samples, episode_s, cross_flows, bandwidth_mbps, rtt_ms, buffer_packets, loss
    )
    base = normalise_scenario(scenario)
    n_paths = len(base["paths"])
    normalise_scenario(
        draw_scenario(base, n_paths, ranges, np.random.default_rng(0), cc)
    )  # cc names etc.
    if cross_flows:
        normalise_scenario({"paths": [{"bandwidth_mbps": 10}], "cc": cross_cc})
    cfg = agent.ddpg_config
    agent.replay = Replay(cfg.replay_capacity, n_paths, N_FEATURES)
    agent.samples = 0
    agent.sample_limit = samples
    rng = np.random.default_rng(np.random.SeedSequence((int(seed), 2002)))
    agent.learning = True
    t0 = time.perf_counter()
    summary: dict[str, float] = {}
    e = 0
    try:
        while agent.samples < samples:
            s = draw_scenario(base, n_paths, ranges, rng, cc)
            k = int(rng.integers(0, cross_flows + 1)) if cross_flows else 0
            shared = int(rng.integers(0, n_paths))
            if k:
                s["paths"][shared]["shared_link"] = "bottleneck"
            run_episode(agent, s, int(seed) * 100_003 + e, float(episode_s), k, shared, cross_cc)
            row = {
                "score": float(np.mean(agent.rewards)) if agent.rewards else float("nan"),
                "throughput_mbps": float(np.mean(agent.throughputs)) if agent.throughputs else 0.0,
                "cross_flows": float(k),
                "samples": float(agent.samples),
                "updates": float(agent.ddpg.updates),
                **agent.last_losses,
            }
            if log is not None:
                log({k2: float(v) for k2, v in row.items()}, step=e)
            if progress:
                print(
                    f"{agent.name}: episode {e + 1}: score {row['score']:.3f}, "
                    f"{row['throughput_mbps']:.1f} Mbit/s, {k} cross flows, {agent.samples}/{samples} samples, "
                    f"{agent.ddpg.updates} updates [{time.perf_counter() - t0:.0f} s]",
                    flush=True,
                )
            summary = row
            e += 1
    finally:
        agent.learning = False
        agent.replay = None
        agent.sample_limit = None
    summary.update(
        {
            "episodes": float(e),
            "train_wall_s": time.perf_counter() - t0,
            "cpu_seconds_per_slot": agent.cpu_seconds_per_slot,
            "train_cpu_s_per_update": agent.train_cpu_s / max(agent.ddpg.updates, 1),
        }
    )
    return summary


__all__ = ["fit", "draw_scenario", "run_episode", "TRAIN_KEYS"]
