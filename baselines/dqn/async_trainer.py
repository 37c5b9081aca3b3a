"""Asynchronous online learning in emulated time: the trainer "process".

The FALCON paper (Sec. IV-B, "Synchronous vs. asynchronous learning")
separates a *network process*, which schedules packets with the current
policy and collects experience, from a *trainer process*, which updates the
Q-network from that experience; the scheduler never blocks on training.
In emulation the trainer's compute still has to cost time, or online
learning would be free. The model here:

* The trainer is one sequential worker living in the emulator's event loop.
  It is idle or busy with one *job*: ``steps_per_update`` gradient steps.
* The network process notifies it of every new transition
  (:meth:`AsyncTrainer.notify`). The trainer owes one gradient step per
  ``train_interval`` transitions (Mnih et al. 2015 update every 4 actions;
  keras-rl's ``train_interval``). When it is idle, the warm-up is over
  (``warmup`` transitions in the replay memory) and at least
  ``train_interval`` transitions are waiting, it starts a job at emulated
  time ``t`` and pays for up to ``steps_per_update * train_interval`` of
  them: the gradient steps are computed on the replay memory *as it is at*
  ``t`` (mini-batches sampled then), and a "training done" event is
  scheduled at ``t + steps_per_update * step_cost_s``
  (``view.sim.schedule``).
* Until that event the *old* weights keep scheduling packets; at the event
  the new weights are deployed (copied to the acting network) and, if
  transitions are still waiting, the next job starts at once. If experience
  arrives faster than the trainer can learn from it, the trainer stays busy
  and falls behind (the backlog of a finished episode is dropped), as a
  real trainer process would; otherwise it keeps the replay ratio of one
  step per ``train_interval`` transitions.
* ``step_cost_s`` is the emulated duration of one gradient step. Its default
  (``configs/agent/dqn_on.yaml``) is the median wall time of one step of the
  default network on the development machine, measured by :func:`calibrate`
  (``python -m baselines.dqn.async_trainer``); ``"auto"`` measures it when
  the scheduler is built (not bit-reproducible across machines). ``0``
  gives synchronous learning: the step is applied and deployed at the
  decision that triggered it, at no emulated cost.
* Between episodes (downloads) no emulated time passes; a job still in
  flight when an episode ends (e.g. at the time limit) is completed and
  deployed before the next episode starts (:meth:`attach`): the real
  trainer would have finished it in the gap. Transitions still waiting for
  their step are not carried over.

Everything is deterministic: the job's mini-batches come from the replay
memory's seeded generator and the events are ordered by the simulator.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from envs.errors import ConfigError


class AsyncTrainer:
    """The trainer process of asynchronous DQN in emulated time (module docstring).

    Args:
        train: ``train(n_steps) -> loss`` runs ``n_steps`` gradient steps now
            (on the learner's parameters, not the acting copy).
        deploy: ``deploy()`` copies the learner's parameters to the acting network.
        ready: ``ready() -> bool``: the replay memory is warm enough to train.
        step_cost_s: emulated time of one gradient step [s]; 0 = synchronous.
        train_interval: transitions per gradient step (a job needs this many waiting).
        steps_per_update: gradient steps per job (weights deployed after each job).
    """

    def __init__(
        self,
        train: Callable[[int], float],
        deploy: Callable[[], None],
        ready: Callable[[], bool],
        step_cost_s: float = 0.0,
        train_interval: int = 1,
        steps_per_update: int = 1,
    ):
        step_cost_s = float(step_cost_s)
        if not step_cost_s >= 0:
            raise ConfigError(f"train_step_cost_s: must be >= 0, got {step_cost_s!r}")
        if int(train_interval) < 1:
            raise ConfigError(f"train_interval: must be a positive integer, got {train_interval!r}")
        if int(steps_per_update) < 1:
            raise ConfigError(
                f"steps_per_update: must be a positive integer, got {steps_per_update!r}"
            )
        self._train = train
        self._deploy = deploy
        self._ready = ready
        self.step_cost_s = step_cost_s
        self.train_interval = int(train_interval)
        self.steps_per_update = int(steps_per_update)
        self.sim = None
        self.busy = False
        self.pending = 0  # transitions not yet paid for by a gradient step
        self._job = 0  # id of the job in flight (stale events are ignored)
        # statistics
        self.jobs = 0
        self.gradient_steps = 0
        self.deployments = 0
        self.busy_time_s = 0.0
        self.last_loss = float("nan")
        self.losses: list[float] = []

    # ---------------------------------------------------------- episodes
    def attach(self, sim) -> None:
        """A new episode starts on simulator ``sim``: finish (deploy) a job
        left in flight by the previous episode, then run on ``sim``."""
        self.flush()
        self.sim = sim
        self.pending = 0

    def flush(self) -> None:
        """Complete a job in flight now (between episodes)."""
        if self.busy:
            self.busy = False
            self._job += 1
            self._deploy()
            self.deployments += 1

    # ---------------------------------------------------------- events
    def notify(self, n: int = 1) -> None:
        """``n`` new transitions entered the replay memory."""
        self.pending += n
        if not self.busy and self.pending >= self.train_interval and self._ready():
            self._start()

    def _start(self) -> None:
        k = self.steps_per_update
        self.pending -= min(self.pending, k * self.train_interval)
        loss = self._train(k)
        self.last_loss = loss
        self.losses.append(loss)
        self.jobs += 1
        self.gradient_steps += k
        if self.step_cost_s == 0.0 or self.sim is None:
            self._deploy()  # synchronous: applied at this very decision
            self.deployments += 1
            return
        self.busy = True
        self._job += 1
        duration = k * self.step_cost_s
        self.busy_time_s += duration
        self.sim.schedule(self.sim.now + duration, self._done, self._job)

    def _done(self, job: int) -> None:
        if job != self._job or not self.busy:
            return  # flushed by a new episode
        self.busy = False
        self._deploy()
        self.deployments += 1
        if self.pending >= self.train_interval and self._ready():
            self._start()

    def take_losses(self) -> list[float]:
        """Losses of the jobs since the previous call (for learning curves)."""
        out, self.losses = self.losses, []
        return out

    def stats(self) -> dict[str, float]:
        return {
            "trainer_jobs": float(self.jobs),
            "gradient_steps": float(self.gradient_steps),
            "deployments": float(self.deployments),
            "trainer_busy_s": self.busy_time_s,
        }

    def __getstate__(self):
        st = dict(self.__dict__)
        st["sim"] = None  # a simulator is never carried over (pickling, deep copies)
        return st


def calibrate(
    hidden=(64, 64, 64),
    n_paths: int = 2,
    batch_size: int = 32,
    repeats: int = 7,
    steps: int = 200,
    technique: str = "bmm",
    seed: int = 0,
    details: bool = False,
):
    """Median wall time [s] of one gradient step of a single model (the
    default ``train_step_cost_s``): ``repeats`` timings of ``steps`` steps
    each, on random mini-batches, after a warm-up. ``details=True`` returns
    a dict with the CPU time per step too (on a busy machine the wall time
    exceeds it: calibrate on an idle one)."""
    import numpy as np

    from baselines.dqn.learner import BatchedDQN
    from baselines.dqn.network import QNetSpec

    spec = QNetSpec(4 * n_paths, n_paths, tuple(hidden))
    learner = BatchedDQN(spec, 1, technique=technique, seed=seed)
    rng = np.random.default_rng(seed)
    batch = (
        rng.random((1, batch_size, spec.n_inputs), dtype=np.float32),
        rng.integers(0, n_paths, (1, batch_size)),
        rng.random((1, batch_size), dtype=np.float32),
        rng.random((1, batch_size, spec.n_inputs), dtype=np.float32),
        np.zeros((1, batch_size), np.float32),
    )
    for _ in range(20):
        learner.update(*batch)
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            learner.update(*batch)
        times.append((time.perf_counter() - t0) / steps)
        cpu.append((time.process_time() - c0) / steps)
    if details:
        return {
            "train_step_cost_s": statistics.median(times),
            "wall_s": times,
            "cpu_s_median": statistics.median(cpu),
        }
    return statistics.median(times)


def main() -> None:
    import argparse
    import json

    ap = argparse.ArgumentParser(
        description="Measure the wall time of one DQN gradient step "
        "(the default emulated cost of a step, train_step_cost_s)."
    )
    ap.add_argument("--hidden", type=int, nargs="+", default=[64, 64, 64])
    ap.add_argument("--paths", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    res = calibrate(
        tuple(args.hidden), args.paths, repeats=args.repeats, steps=args.steps, details=True
    )
    print(
        json.dumps(
            {
                "train_step_cost_s": res["train_step_cost_s"],
                "cpu_s_per_step": res["cpu_s_median"],
                "hidden": args.hidden,
                "paths": args.paths,
            }
        )
    )


if __name__ == "__main__":
    main()


__all__ = ["AsyncTrainer", "calibrate"]
