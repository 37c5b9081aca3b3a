"""A deadline block transport (HOP: Chiariotti et al., IEEE/ACM ToN 2021): blocks of coded packets sent in
per-path bursts, no retransmission, recovery by an MDS code.

The application releases a block every ``period_s``; block ``n`` must be
decoded within ``deadline_s`` of its release. A :class:`BlockScheduler`
answers, at each release, how many source packets ``k`` the block has (fixed
for JUMP/FLIP, chosen by LEAP) and how many coded packets go on each path;
the session sends them at once (a burst: the bottleneck serialises them) and
the receiver decodes the block when any ``k`` of them have arrived (a
systematic MDS code: :mod:`baselines.hop.fec` is the real codec; here only
counts matter). A packet that arrives after the deadline is useless. The
receiver acknowledges every packet at once on the path it came on; the ACKs
are the sender's only feedback (:meth:`BlockScheduler.on_ack`).

Units: seconds and bytes. Every packet is ``packet_bytes`` on the wire and
carries ``packet_bytes - header_bytes`` bytes of the block; the paper counts
``k = B / MTU`` (``header_bytes: 0``, the default here).

Paths are the emulator's :class:`envs.link.Path` (trace-driven drop-tail
bottleneck, delay, loss), built from a normalised scenario by
:class:`envs.emulation.Emulation`, so a block run and a reliable-transport run
of the same scenario and seed see the same capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from envs.apps import BLOCK_DEFAULTS as APP_BLOCK_DEFAULTS
from envs.apps.blocks import block_count
from envs.emulation import Emulation
from envs.errors import ConfigError
from envs.scenario import normalise_scenario
from envs.sim import collector_paused

#: the block contract (``block:`` config; the HOP paper's): bytes, seconds, probability; the
#: period, deadline and duration are the blocks app's (:data:`envs.apps.BLOCK_DEFAULTS`)
BLOCK_DEFAULTS: dict = {
    "block_bytes": 140_000,
    **{k: APP_BLOCK_DEFAULTS[k] for k in ("period_s", "deadline_s", "duration_s")},
    "p_thr": 0.98,
    "packet_bytes": 1500,
    "header_bytes": 0,
    "ack_bytes": 40,
}


def normalise_block(cfg) -> dict:
    """Defaults + validation of a ``block:`` mapping (a null value: the default);
    one-line ConfigError naming the key."""
    cfg = {} if cfg is None else {k: v for k, v in dict(cfg).items() if v is not None}
    unknown = set(cfg) - set(BLOCK_DEFAULTS)
    if unknown:
        raise ConfigError(
            f"block: unknown key(s) {sorted(unknown)}; known: {sorted(BLOCK_DEFAULTS)}"
        )
    b = {**BLOCK_DEFAULTS, **cfg}
    for key in BLOCK_DEFAULTS:
        v = b[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ConfigError(f"block.{key}: expected a finite number, got {v!r}")
    for key in ("block_bytes", "packet_bytes", "ack_bytes"):
        b[key] = int(b[key])
    b["header_bytes"] = int(b["header_bytes"])
    if b["block_bytes"] <= 0:
        raise ConfigError(f"block.block_bytes: must be positive, got {b['block_bytes']}")
    if not 0 <= b["header_bytes"] < b["packet_bytes"]:
        raise ConfigError(
            f"block.header_bytes: must be >= 0 and below packet_bytes ({b['packet_bytes']})"
        )
    for key in ("period_s", "deadline_s", "duration_s"):
        if b[key] <= 0:
            raise ConfigError(f"block.{key}: must be positive, got {b[key]}")
    if block_count(b["period_s"], b["duration_s"]) < 1:
        raise ConfigError("block.duration_s: shorter than one block period")
    if not 0.0 < b["p_thr"] < 1.0:
        raise ConfigError(f"block.p_thr: a probability in (0, 1), got {b['p_thr']}")
    return b


@dataclass(frozen=True, slots=True)
class BlockPlan:
    """A scheduler's answer for one block: ``k`` source packets the receiver
    needs, ``counts[i]`` coded packets on path ``i``; ``feasible`` False
    flags a block the scheduler expects to miss (JUMP's maximal schedule)."""

    k: int
    counts: tuple[int, ...]
    feasible: bool = True
    #: the block's deadline [s] when the scheduler chose it (FLIP); None: the contract's
    deadline_s: float | None = None


class BlockScheduler:
    """Base of the block schedulers (:mod:`baselines.hop`).

    The session calls :meth:`reset` once, :meth:`plan` at every block
    release, :meth:`on_sent` after each burst and :meth:`on_ack` for every
    ACK that reaches the sender. Schedulers see only what a sender knows:
    its own sends and the ACKs (the ``session`` argument gives the block
    contract, the clock and the path count; an oracle may read more, and says so).
    """

    name = "block_scheduler"

    def reset(self, session: DeadlineSession) -> None:
        """A new session starts."""

    def plan(self, session: DeadlineSession, block: int, k: int) -> BlockPlan:
        """The plan of block ``block`` released now; ``k`` is the application's
        block size in packets (LEAP may change it)."""
        raise NotImplementedError

    def on_sent(self, path: int, now: float, first_pn: int, n: int) -> None:
        """``n`` packets (packet numbers ``first_pn ..``) left on ``path`` at ``now`` [s]."""

    def on_ack(self, path: int, pn: int, sent_time: float, now: float) -> None:
        """The ACK of packet ``pn`` sent at ``sent_time`` on ``path`` reached the sender at ``now`` [s]."""


@dataclass
class BlockEpisodeResult:
    """What a block session measured; per-block arrays share one index."""

    metrics: dict[str, float]
    release_s: np.ndarray  # release time of each block [s]
    k: np.ndarray  # source packets of each block
    sent: np.ndarray  # coded packets of each block, per path (blocks x paths)
    on_time: np.ndarray  # packets of each block that arrived by its deadline
    decode_s: np.ndarray  # decode time minus release [s]; NaN: not decoded in time
    feasible: np.ndarray  # the scheduler expected to meet the target
    deadline_s: np.ndarray  # each block's deadline [s] (FLIP chooses it)
    window_capacity: (
        np.ndarray
    )  # bytes each path could serve in the block's window (blocks x paths)
    block: dict = field(default_factory=dict)
    scenario: dict = field(default_factory=dict)
    seed: int = 0


class DeadlineSession:
    """Blocks over ``paths`` (a list of :class:`envs.link.Path`) on ``sim``."""

    def __init__(self, sim, paths, scheduler: BlockScheduler, block: dict):
        self.sim = sim
        self.paths = list(paths)
        self.scheduler = scheduler
        self.block = normalise_block(block)
        self.packet_bytes = self.block["packet_bytes"]
        self.payload = self.packet_bytes - self.block["header_bytes"]
        self.k_app = math.ceil(self.block["block_bytes"] / self.payload)
        self.n_blocks = block_count(self.block["period_s"], self.block["duration_s"])
        m, nb = len(self.paths), self.n_blocks
        self.next_pn = [0] * m
        self.k = np.zeros(nb, dtype=np.int64)
        self.sent = np.zeros((nb, m), dtype=np.int64)
        self.on_time = np.zeros(nb, dtype=np.int64)
        self.feasible = np.ones(nb, dtype=bool)
        self.deadline = np.zeros(nb)  # each block's deadline [s]
        self.arrivals: list[list[float]] = [
            [] for _ in range(nb)
        ]  # on-time arrival times per block [s]

    # -- what schedulers may read --------------------------------------
    @property
    def now(self) -> float:
        return self.sim.now

    @property
    def n_paths(self) -> int:
        return len(self.paths)

    def release_time(self, block: int) -> float:
        return block * self.block["period_s"]

    # -- the run --------------------------------------------------------
    def start(self) -> None:
        self.scheduler.reset(self)
        for n in range(self.n_blocks):
            self.sim.schedule(self.release_time(n), self._release, n)

    def _release(self, n: int) -> None:
        now = self.sim.now
        plan = self.scheduler.plan(self, n, self.k_app)
        counts = tuple(int(c) for c in plan.counts)
        if len(counts) != len(self.paths) or min(counts) < 0 or plan.k < 0:
            raise ValueError(
                f"{self.scheduler.name}: a plan needs {len(self.paths)} counts >= 0, got {plan}"
            )
        self.k[n] = plan.k
        self.sent[n] = counts
        self.feasible[n] = plan.feasible
        self.deadline[n] = (
            self.block["deadline_s"] if plan.deadline_s is None else float(plan.deadline_s)
        )
        deadline = now + self.deadline[n]
        size = self.packet_bytes
        ack_bytes = self.block["ack_bytes"]
        arrivals = self.arrivals[n]
        schedule = self.sim.schedule
        for i, c in enumerate(counts):
            if c == 0:
                continue
            path = self.paths[i]
            pn0 = self.next_pn[i]
            for j in range(c):
                r = path.transmit(now, size)
                if r is None:
                    continue  # dropped or lost: no ACK, no arrival
                arrival, ret = r
                if arrival <= deadline:
                    arrivals.append(arrival)
                schedule(path.ack_arrival(arrival, ret, ack_bytes), self._on_ack, (i, pn0 + j, now))
            self.next_pn[i] = pn0 + c
            self.scheduler.on_sent(i, now, pn0, c)

    def _on_ack(self, arg) -> None:
        i, pn, sent_time = arg
        self.scheduler.on_ack(i, pn, sent_time, self.sim.now)

    # -- results ------------------------------------------------------------
    def result(self, scenario: dict | None = None, seed: int = 0) -> BlockEpisodeResult:
        b = self.block
        release = np.array([self.release_time(n) for n in range(self.n_blocks)])
        decode = np.full(self.n_blocks, np.nan)
        for n, arr in enumerate(self.arrivals):
            self.on_time[n] = len(arr)
            k = int(self.k[n])
            if k == 0:
                decode[n] = 0.0
            elif len(arr) >= k:
                decode[n] = float(np.partition(np.asarray(arr), k - 1)[k - 1]) - release[n]
        window = np.array(
            [
                [window_capacity(p, release[n], b["deadline_s"]) for p in self.paths]
                for n in range(self.n_blocks)
            ]
        )
        ok = ~np.isnan(decode)
        delivered = self.k * self.payload
        total_sent = self.sent.sum(axis=1)
        useful = self.k > 0
        metrics = {
            "blocks": float(self.n_blocks),
            "failure_probability": float(1.0 - ok.mean()),
            "goodput_mbps": float(delivered[ok].sum() * 8 / (self.n_blocks * b["period_s"]) / 1e6),
            "offered_mbps": float(delivered.sum() * 8 / (self.n_blocks * b["period_s"]) / 1e6),
            "redundancy": float(((total_sent - self.k)[useful] / self.k[useful]).mean())
            if useful.any()
            else 0.0,
            "mean_block_bytes": float(delivered.mean()),
            "infeasible_fraction": float(1.0 - self.feasible.mean()),
            "decode_p50_ms": float(np.nanmedian(decode) * 1e3) if ok.any() else math.nan,
            "deadline_mean_ms": float(self.deadline.mean() * 1e3),
        }
        for i in range(len(self.paths)):
            metrics[f"path{i}_share"] = float(self.sent[:, i].sum() / max(1, self.sent.sum()))
        return BlockEpisodeResult(
            metrics=metrics,
            release_s=release,
            k=self.k.copy(),
            sent=self.sent.copy(),
            on_time=self.on_time.copy(),
            decode_s=decode,
            feasible=self.feasible.copy(),
            deadline_s=self.deadline.copy(),
            window_capacity=window,
            block=dict(b),
            scenario=scenario or {},
            seed=int(seed),
        )


def window_capacity(path, t0: float, deadline_s: float) -> float:
    """Bytes ``path``'s bottleneck can serve in a block's useful window: from
    its release ``t0`` until the deadline minus the base one-way delay [s]
    (ground truth from the trace: the bound's and the estimators' yardstick)."""
    one_way = 0.5 * path.delay.mean_rtt
    t1 = t0 + deadline_s - one_way
    return path.link.offered_bytes(t0, t1) if t1 > t0 else 0.0


def run_block_episode(
    scenario, block, scheduler: BlockScheduler, seed: int = 0
) -> BlockEpisodeResult:
    """Blocks over the scenario's paths until the last block's deadline.
    ``scenario``: a scenario mapping (docs/reference/formats/scenario_schema.md; ``cc``, ``setup`` and
    the transport keys are unused: a block transport has no window and
    no handshake); ``block``: :data:`BLOCK_DEFAULTS` keys."""
    s = normalise_scenario(scenario)
    b = normalise_block(block)
    with collector_paused():
        emu = Emulation(seed)
        paths = [emu.build_path(p, s) for p in s["paths"]]
        session = DeadlineSession(emu.sim, paths, scheduler, b)
        session.start()
        emu.sim.run(until=b["duration_s"] + b["deadline_s"] + 1.0)
        return session.result(s, seed)


__all__ = [
    "BLOCK_DEFAULTS",
    "BlockPlan",
    "BlockScheduler",
    "BlockEpisodeResult",
    "DeadlineSession",
    "normalise_block",
    "run_block_episode",
    "window_capacity",
]
