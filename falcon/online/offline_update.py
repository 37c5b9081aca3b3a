"""FALCON's offline learning module in the loop: every T_upd, fold online experience into the bank.

Algorithm 1, offline module: ``Exp = CollectOnlineExperience(); Theta_S =
MetaLearn(Exp, R_S); Wait(T_upd)``. The online scheduler tags every
transition it closes with the condition cell it believed it was in (the
cell of its last selection) and hands it to :meth:`OfflineUpdater.add`.
Every T_upd the updater runs, for each cell that received at least
``min_transitions`` transitions since the previous update, one Reptile step
on that experience (the paper's procedure, Sec. IV-A, with the logged task
in place of a sampled one; :func:`metalearning.reptile.reptile_step`, the
bank build's own step)::

    W     = K DQN mini-batch steps from Theta_cell (fresh Adam state, the
            target network starting at Theta_cell) on the cell's experience
    Theta_cell <- Theta_cell + meta_lr * (W - Theta_cell)

All touched cells are updated together in one
:class:`baselines.dqn.learner.BatchedDQN` stack (each on its own
mini-batches), in memory: the scheduler's next selection already uses the
new meta-models. Cells without new experience are left bit-for-bit
untouched. With ``write_path`` the bank is also written there (atomically,
:meth:`metalearning.bank.MetaModelBank.write`) after every update. The
experience is then dropped.

T_upd is either ``interval_s`` seconds of *emulated* time summed over the
scheduler's episodes (checked by an event in the emulator, so an update can
happen mid-episode) or ``interval_episodes`` episodes (checked when an
episode starts); exactly one must be set. The update costs no emulated time
for the scheduler: the offline module runs apart from the network process
(its wall time is recorded in :attr:`OfflineUpdater.history`).

Memory is bounded: at most ``capacity_per_cell`` transitions (newest kept)
for at most ``max_cells`` cells; experience for a further cell triggers an
early update first.

FALCON-N is FALCON without this loop (``offline: null``,
``configs/agent/falcon_n.yaml``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping

import numpy as np

from baselines.dqn.learner import BatchedDQN, DQNConfig
from baselines.dqn.replay import ReplayMemory
from envs.errors import ConfigError
from metalearning.reptile import ReptileConfig, reptile_step

#: update records kept in OfflineUpdater.history
MAX_HISTORY = 1000


class OfflineUpdater:
    """Periodic Reptile updates of a meta-model bank from online experience
    (module docstring).

    Args:
        bank: a :class:`metalearning.bank.MetaModelBank` (its ``params``
            ``[n_cells, P]`` are updated in place).
        dqn_config: the DQN update of the inner steps (lr, batch size, gamma, ...).
        interval_s / interval_episodes: T_upd (exactly one).
        meta_lr: Reptile step size lambda (0 < lambda <= 1).
        inner_steps: K, DQN steps per cell and update.
        min_transitions: a cell needs this many new transitions to be
            updated (None: the batch size).
        capacity_per_cell, max_cells: memory bounds (module docstring).
        write_path: also write the bank file here after each update (None: memory only).
        seed: seeds the inner loops' mini-batches (with the update's index).
        technique: the learner's batched-gradient implementation.
    """

    def __init__(
        self,
        bank,
        dqn_config: DQNConfig | None = None,
        *,
        interval_s: float | None = None,
        interval_episodes: int | None = None,
        meta_lr: float = ReptileConfig.meta_lr,
        inner_steps: int = ReptileConfig.inner_steps,
        min_transitions: int | None = None,
        capacity_per_cell: int = 2000,
        max_cells: int = 32,
        write_path: str | None = None,
        seed: int = 0,
        technique: str = "bmm",
    ):
        if (interval_s is None) == (interval_episodes is None):
            raise ConfigError(
                "offline: set exactly one of interval_s (emulated seconds) and interval_episodes"
            )
        if interval_s is not None and not float(interval_s) > 0:
            raise ConfigError(f"offline.interval_s: must be positive, got {interval_s!r}")
        if interval_episodes is not None and (
            isinstance(interval_episodes, bool) or int(interval_episodes) < 1
        ):
            raise ConfigError(
                f"offline.interval_episodes: must be a positive integer, got {interval_episodes!r}"
            )
        if not 0.0 < float(meta_lr) <= 1.0:
            raise ConfigError(f"offline.meta_lr: must be in (0, 1], got {meta_lr!r}")
        if int(inner_steps) < 1:
            raise ConfigError(
                f"offline.inner_steps: must be a positive integer, got {inner_steps!r}"
            )
        if int(capacity_per_cell) < 1 or int(max_cells) < 1:
            raise ConfigError("offline: capacity_per_cell and max_cells must be positive integers")
        self.bank = bank
        self.config = dqn_config or DQNConfig()
        self.interval_s = None if interval_s is None else float(interval_s)
        self.interval_episodes = None if interval_episodes is None else int(interval_episodes)
        self.meta_lr = float(meta_lr)
        self.inner_steps = int(inner_steps)
        self.min_transitions = (
            self.config.batch_size if min_transitions is None else int(min_transitions)
        )
        if self.min_transitions < 1:
            raise ConfigError(f"offline.min_transitions: must be positive, got {min_transitions!r}")
        self.capacity_per_cell = int(capacity_per_cell)
        self.max_cells = int(max_cells)
        self.write_path = None if write_path in (None, "") else str(write_path)
        self.seed = int(seed)
        self.technique = technique
        self._store: dict[int, ReplayMemory] = {}
        self.updates = 0  #: updates run
        self.cells_updated = 0  #: Reptile steps applied (cells x updates)
        self.transitions_folded = 0  #: transitions used by updates
        self.history: deque = deque(maxlen=MAX_HISTORY)
        #: next due time [s] of emulated time summed over episodes (interval_s mode)
        self.next_due_s = self.interval_s
        self.episodes_since = 0

    @classmethod
    def from_config(
        cls, cfg: Mapping | None, bank, dqn_config: DQNConfig, seed: int, technique: str
    ) -> OfflineUpdater | None:
        """From the agent config's ``offline:`` mapping (None or ``enabled:
        false``: no offline loop, FALCON-N)."""
        if cfg is None:
            return None
        if not isinstance(cfg, Mapping):
            raise ConfigError(f"offline: expected a mapping or null, got {cfg!r}")
        cfg = dict(cfg)
        if not cfg.pop("enabled", True):
            return None
        known = {
            "interval_s",
            "interval_episodes",
            "meta_lr",
            "inner_steps",
            "min_transitions",
            "capacity_per_cell",
            "max_cells",
            "write_path",
        }
        unknown = set(cfg) - known
        if unknown:
            raise ConfigError(
                f"offline: unknown key(s) {sorted(unknown)}; known: {sorted(known | {'enabled'})}"
            )
        return cls(bank, dqn_config, seed=seed, technique=technique, **cfg)

    # ---------------------------------------------------------- experience
    def _memory(self, cell: int) -> ReplayMemory:
        mem = self._store.get(cell)
        if mem is None:
            if len(self._store) >= self.max_cells:
                self.update(reason="memory")
            spec = self.bank.spec
            mem = self._store[cell] = ReplayMemory(
                self.capacity_per_cell, spec.n_inputs, 1, seed=self.seed
            )
        return mem

    def add(self, cell: int, state, action, reward, next_state, done) -> None:
        """One online transition observed under condition cell ``cell``."""
        self._memory(int(cell)).add(state, action, reward, next_state, done)

    def extend(self, cell: int, states, actions, rewards, next_states, dones) -> None:
        """Many transitions of cell ``cell`` (arrays with a leading axis)."""
        if len(states):
            self._memory(int(cell)).extend(states, actions, rewards, next_states, dones)

    def pending(self) -> dict[int, int]:
        """Transitions waiting per cell."""
        return {c: len(m) for c, m in self._store.items()}

    # ---------------------------------------------------------- schedule
    def episode_started(self) -> bool:
        """Count an episode start; True when T_upd (in episodes) is due."""
        if self.interval_episodes is None:
            return False
        self.episodes_since += 1
        if self.episodes_since > self.interval_episodes:
            self.episodes_since = 1
            return True
        return False

    def time_due(self, elapsed_s: float) -> bool:
        """T_upd (in emulated seconds) is due at ``elapsed_s`` (summed over episodes)."""
        return self.next_due_s is not None and elapsed_s >= self.next_due_s

    def advance(self, elapsed_s: float) -> None:
        """Next due time after an update at ``elapsed_s``."""
        if self.interval_s is not None:
            while self.next_due_s <= elapsed_s:
                self.next_due_s += self.interval_s

    # ---------------------------------------------------------- update
    def update(self, reason: str = "interval") -> dict:
        """One Reptile step per cell with enough new experience (module
        docstring); drops all stored experience. Returns the record also
        appended to :attr:`history`."""
        t0 = time.perf_counter()
        cells = sorted(c for c, m in self._store.items() if len(m) >= self.min_transitions)
        n_tr = sum(len(self._store[c]) for c in cells)
        if cells:
            bank = self.bank
            cfg = self.config
            idx = self.updates
            learner = BatchedDQN(
                bank.spec, len(cells), cfg, seed=self.seed, technique=self.technique
            )
            mems = [self._store[c] for c in cells]
            for mem, c in zip(mems, cells):
                mem.rng = np.random.default_rng([self.seed, idx, c])
            steps = [[mem.sample(cfg.batch_size) for mem in mems] for _ in range(self.inner_steps)]
            batches = [
                np.stack([np.concatenate([p[i] for p in parts]) for parts in steps])
                for i in range(5)
            ]
            thetas = np.stack([bank.row(c) for c in cells])
            thetas, _ = reptile_step(learner, thetas, batches, self.meta_lr)
            for m, c in enumerate(cells):
                bank.set_row(c, thetas[m])
            if self.write_path is not None:
                bank.write(self.write_path)
            self.cells_updated += len(cells)
            self.transitions_folded += n_tr
        self._store.clear()
        self.updates += 1
        rec = {
            "update": self.updates,
            "reason": reason,
            "cells": cells,
            "transitions": n_tr,
            "wall_s": time.perf_counter() - t0,
        }
        self.history.append(rec)
        return rec

    def stats(self) -> dict[str, float]:
        return {
            "offline_updates": float(self.updates),
            "offline_cells_updated": float(self.cells_updated),
            "offline_transitions": float(self.transitions_folded),
        }


__all__ = ["OfflineUpdater"]
