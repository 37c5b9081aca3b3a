"""The HOP sender: SKIP forecasts per path, and JUMP, LEAP or FLIP per block
(Chiariotti et al., IEEE/ACM ToN 2021). Runs on the deadline block transport,
:mod:`envs.deadline`.

* ``mode: jump``: the application's block size ``k`` and deadline are fixed;
  the smallest schedule meeting ``P_thr`` (or the maximal one, flagged).
* ``mode: leap``: the deadline is fixed; the largest block JUMP can serve
  (the application sends what LEAP allows), bounded by ``S = sum_i (mu_i -
  alpha sigma_i)(T - tau_min,i / 2)``.
* ``mode: flip``: the block size is fixed; the shortest deadline up to
  ``t_max_s`` that JUMP can meet.
* ``estimator: skip`` (:mod:`baselines.hop.skip`) or ``oracle`` (the true
  capacity distribution and queue: "ideal JUMP", :mod:`baselines.hop.oracle`).
* ``cap``: the most packets a path may take (:meth:`HOP._caps`): ``paper``
  (its mean rate over the window), ``backlog`` (minus the queue) or
  ``lateness`` (ours: the packets whose lateness is at most ``lateness_cap``).
* ``calibrate`` and ``queue`` are SKIP's (:mod:`baselines.hop.skip`): the
  recalibrated forecast, and ``joint`` (ours) for the queue served at the
  past RTT's own capacity. The paper's HOP is ``HOP()``; ours is
  ``HOP(calibrate=True, cap="lateness", queue="joint")``.

Start-up (the paper's slow start): until a path has its first capacity sample, it gets a
slow-start burst (``initial_packets``, doubled every block) and the block is
flagged infeasible.
"""

from __future__ import annotations

import math

import numpy as np

from baselines.hop.oracle import OracleEstimator
from baselines.hop.schedule import flip, jump, leap, path_cap
from baselines.hop.skip import QUEUE_MODELS, SkipEstimator
from envs.deadline import BlockPlan, BlockScheduler
from envs.errors import ConfigError

MODES = ("jump", "leap", "flip")
ESTIMATORS = ("skip", "oracle")
CAPS = ("paper", "backlog", "lateness")
#: how far above the mean rate [std] the lateness cap looks for packets worth sending
LATENESS_CAP_REACH = 3.0


class HOP(BlockScheduler):
    """HOP's block scheduler (module docstring). ``p_thr`` None: the block
    contract's."""

    name = "hop"

    def __init__(
        self,
        mode: str = "jump",
        estimator: str = "skip",
        p_thr: float | None = None,
        min_per_path: int = 10,
        eps: float = 1e-3,
        alpha: float = 1.25,
        t_max_s: float = 0.2,
        flip_quantum_s: float = 0.001,
        initial_packets: int = 10,
        step_s: float = 0.005,
        forgetting: float = 0.97,
        outage_rate: float = 50e3,
        calibrate: bool = False,
        cap: str = "paper",
        queue: str = "shared",
        lateness_cap: float = 0.2,
    ):
        if mode not in MODES:
            raise ConfigError(f"hop.mode: unknown mode {mode!r}; choose one of {list(MODES)}")
        if estimator not in ESTIMATORS:
            raise ConfigError(
                f"hop.estimator: unknown estimator {estimator!r}; choose one of {list(ESTIMATORS)}"
            )
        if p_thr is not None and not 0.0 < p_thr < 1.0:
            raise ConfigError(f"hop.p_thr: a probability in (0, 1), got {p_thr}")
        for key, v in (("min_per_path", min_per_path), ("initial_packets", initial_packets)):
            if int(v) < 0:
                raise ConfigError(f"hop.{key}: must be >= 0, got {v}")
        for key, v in (
            ("t_max_s", t_max_s),
            ("flip_quantum_s", flip_quantum_s),
            ("step_s", step_s),
            ("outage_rate", outage_rate),
        ):
            if not v > 0:
                raise ConfigError(f"hop.{key}: must be positive, got {v}")
        if not 0.0 < forgetting < 1.0:
            raise ConfigError(f"hop.forgetting: must lie in (0, 1), got {forgetting}")
        if cap not in CAPS:
            raise ConfigError(f"hop.cap: unknown cap {cap!r}; choose one of {list(CAPS)}")
        if queue not in QUEUE_MODELS:
            raise ConfigError(
                f"hop.queue: unknown queue model {queue!r}; choose one of {list(QUEUE_MODELS)}"
            )
        if queue == "joint" and not (calibrate and estimator == "skip"):
            raise ConfigError(
                "hop.queue: 'joint' is SKIP's calibrated model: it needs calibrate=true, estimator=skip"
            )
        if not 0.0 < lateness_cap < 1.0:
            raise ConfigError(f"hop.lateness_cap: a probability in (0, 1), got {lateness_cap}")
        self.mode, self.estimator_kind, self.cap = mode, estimator, cap
        self.lateness_cap = float(lateness_cap)
        self.p_thr = p_thr
        self.min_per_path, self.eps, self.alpha = int(min_per_path), float(eps), float(alpha)
        self.t_max_s, self.flip_quantum_s = float(t_max_s), float(flip_quantum_s)
        self.initial_packets = int(initial_packets)
        self.skip_kw = {
            "step_s": step_s,
            "forgetting": forgetting,
            "outage_rate": outage_rate,
            "calibrate": bool(calibrate),
            "queue": queue,
        }
        self.estimators: list = []
        #: (now, deadline, {path: lateness vector}) the latest lateness cap read (_caps, _lams)
        self._read: tuple = (None, None, {})
        self._start: list[int] = []
        self.forecasts: list[
            list[tuple[float, float]]
        ] = []  # per block: per path (mean, std) [bytes]

    def reset(self, session) -> None:
        L = session.packet_bytes
        if self.estimator_kind == "oracle":
            b = session.block
            self.estimators = [
                OracleEstimator(p, L, b["period_s"], b["duration_s"], b["deadline_s"])
                for p in session.paths
            ]
        else:
            self.estimators = [SkipEstimator(L, **self.skip_kw) for _ in session.paths]
        self._start = [self.initial_packets] * session.n_paths
        self.forecasts = []

    def on_sent(self, path: int, now: float, first_pn: int, n: int) -> None:
        self.estimators[path].on_sent(now, first_pn, n)

    def on_ack(self, path: int, pn: int, sent_time: float, now: float) -> None:
        self.estimators[path].on_ack(pn, sent_time, now)

    # -- planning -------------------------------------------------------------
    def _one_way(self, est) -> float:
        return est.min_rtt / 2 if math.isfinite(est.min_rtt) else 0.0

    def _caps(
        self, now: float, deadline: float, L: int, k: int, conservative: bool = False
    ) -> list[int]:
        """The most packets each path may take. ``paper``: what the mean rate
        (LEAP: ``mu - alpha sigma``) carries in the window; ``backlog``: of
        those, the ones on time at that rate behind the estimated queue;
        ``lateness`` (ours): the packets whose lateness is at most
        ``lateness_cap``, up to ``LATENESS_CAP_REACH`` std above the mean
        rate (LEAP: within its ``mu - alpha sigma`` bound). A packet more
        likely late than that adds queue for the next blocks for little
        chance of helping this one (measured on the balanced case at 140 kB:
        failures 5.1 % with ``backlog``, 2.2 % with ``lateness`` at 0.2,
        redundancy 53 % -> 23 %)."""
        caps = []
        self._read = (now, deadline, {})
        for i, est in enumerate(self.estimators):
            std = est.rate_std
            rate = est.rate - (self.alpha * std if conservative else 0.0)
            if self.cap == "lateness" and est.has_sample:
                reach = rate if conservative else rate + LATENESS_CAP_REACH * std
                n = path_cap(reach, deadline, self._one_way(est), L)
                lam = est.lateness(now, deadline, n)
                self._read[2][i] = lam
                cap = int(np.count_nonzero(lam <= self.lateness_cap))
            else:
                cap = path_cap(rate, deadline, self._one_way(est), L)
                if self.cap == "backlog" and est.has_sample:
                    cap = est.on_time_at_rate(now, deadline, cap, rate)
            caps.append(max(min(k, cap), min(self.min_per_path, k)))
        return caps

    def _lams(self, now: float, deadline: float, caps) -> list:
        """lambda_i(1..caps_i) per path; a prefix of what the lateness cap
        already read for the same instant and deadline (lambda(j) does not
        depend on how many packets follow) instead of a second evaluation."""
        t, d, read = self._read
        out = []
        for i, (est, c) in enumerate(zip(self.estimators, caps)):
            lam = read.get(i) if (t, d) == (now, deadline) else None
            out.append(
                lam[:c] if lam is not None and len(lam) >= c else est.lateness(now, deadline, c)
            )
        return out

    def plan(self, session, block: int, k: int) -> BlockPlan:
        now = session.now
        T = session.block["deadline_s"]
        p_thr = session.block["p_thr"] if self.p_thr is None else self.p_thr
        L = session.packet_bytes
        self.forecasts.append(
            [
                est.forecast(now, T - self._one_way(est)) if est.has_sample else (0.0, 0.0)
                for est in self.estimators
            ]
        )
        for est in self.estimators:
            if hasattr(est, "note_forecast"):
                est.note_forecast(now, T - self._one_way(est))
        if not all(est.has_sample for est in self.estimators):
            caps = self._caps(now, T, L, k)
            counts = []
            for i, est in enumerate(self.estimators):
                if est.has_sample:
                    counts.append(caps[i])
                else:
                    counts.append(self._start[i])
                    self._start[i] *= 2
            return BlockPlan(k, tuple(counts), feasible=False)
        if self.mode == "jump":
            caps = self._caps(now, T, L, k)
            counts, _pe, ok = jump(
                self._lams(now, T, caps), k, p_thr, caps, self.min_per_path, self.eps
            )
            return BlockPlan(k, counts, ok)
        if self.mode == "leap":
            big = 10**6
            caps = self._caps(now, T, L, big, conservative=True)
            k_max = sum(caps)
            caps = [max(c, min(self.min_per_path, k_max)) for c in caps]
            k_leap, counts, _pe = leap(
                self._lams(now, T, caps), p_thr, caps, k_max, self.min_per_path, self.eps
            )
            return BlockPlan(k_leap, counts, k_leap > 0)
        T_best, counts, _pe, ok = flip(
            lambda t: self._lams(now, t, self._caps(now, t, L, k)),
            k,
            p_thr,
            lambda t: self._caps(now, t, L, k),
            self.t_max_s,
            self.flip_quantum_s,
            self.min_per_path,
            self.eps,
        )
        return BlockPlan(k, counts, ok, deadline_s=T_best)


__all__ = ["HOP", "MODES", "ESTIMATORS"]
