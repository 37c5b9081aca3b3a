"""Replay memory: a ring buffer of transitions per model, sampled uniformly.

``ReplayMemory(capacity, n_inputs, n_models=M)`` keeps ``M`` independent
buffers in preallocated NumPy arrays (``[M, capacity, ...]``) so that a
mini-batch for every model of a :class:`~baselines.dqn.learner.BatchedDQN`
stack is one fancy-indexing gather per field (:meth:`sample`). The common
single-model case (``M = 1``) adds one transition at a time from the
scheduler (:meth:`add`), a few microseconds per decision.

Sampling draws indices uniformly with replacement from the filled part of
each model's buffer, from the memory's own seeded ``numpy`` generator, so a
seed reproduces the batches.
"""

from __future__ import annotations

import numpy as np

from envs.errors import ConfigError


class ReplayMemory:
    """Ring buffers of ``(state, action, reward, next_state, done)`` for ``M`` models."""

    FIELDS = ("states", "actions", "rewards", "next_states", "dones")

    def __init__(self, capacity: int, n_inputs: int, n_models: int = 1, seed: int = 0):
        if int(capacity) < 1:
            raise ConfigError(f"replay_capacity: must be a positive integer, got {capacity!r}")
        self.capacity = int(capacity)
        self.n_inputs = int(n_inputs)
        self.n_models = int(n_models)
        shape = (self.n_models, self.capacity)
        self.states = np.zeros((*shape, self.n_inputs), np.float32)
        self.next_states = np.zeros((*shape, self.n_inputs), np.float32)
        self.actions = np.zeros(shape, np.int64)
        self.rewards = np.zeros(shape, np.float32)
        self.dones = np.zeros(shape, np.float32)
        self.sizes = np.zeros(self.n_models, np.int64)  # filled entries per model
        self.heads = np.zeros(self.n_models, np.int64)  # next write position per model
        self.added = np.zeros(self.n_models, np.int64)  # transitions ever added per model
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        """Filled entries of model 0 (the single-model size)."""
        return int(self.sizes[0])

    def add(
        self, state, action: int, reward: float, next_state, done: bool, model: int = 0
    ) -> None:
        """Append one transition to model ``model``'s buffer (oldest overwritten when full)."""
        i = int(self.heads[model])
        self.states[model, i] = state
        self.actions[model, i] = action
        self.rewards[model, i] = reward
        self.next_states[model, i] = next_state
        self.dones[model, i] = done
        i += 1
        self.heads[model] = 0 if i == self.capacity else i
        if self.sizes[model] < self.capacity:
            self.sizes[model] += 1
        self.added[model] += 1

    def extend(self, states, actions, rewards, next_states, dones, model: int = 0) -> None:
        """Append many transitions (arrays with a leading transition axis) to one model."""
        states = np.asarray(states, np.float32)
        n = len(states)
        if n == 0:
            return
        arrays = (
            states,
            np.asarray(actions, np.int64),
            np.asarray(rewards, np.float32),
            np.asarray(next_states, np.float32),
            np.asarray(dones, np.float32),
        )
        if any(len(x) != n for x in arrays):
            raise ConfigError("replay: transition arrays of different lengths")
        if n > self.capacity:  # only the newest fit
            arrays = tuple(x[n - self.capacity :] for x in arrays)
            self.added[model] += n - self.capacity
            n = self.capacity
        head = int(self.heads[model])
        idx = (head + np.arange(n)) % self.capacity
        for name, x in zip(self.FIELDS, arrays):
            getattr(self, name)[model, idx] = x
        self.heads[model] = (head + n) % self.capacity
        self.sizes[model] = min(self.capacity, int(self.sizes[model]) + n)
        self.added[model] += n

    def sample(self, batch_size: int):
        """A mini-batch for every model: arrays ``[M, batch_size, ...]`` in
        :attr:`FIELDS` order. Every model must hold at least one transition."""
        if (self.sizes < 1).any():
            raise ConfigError("replay: cannot sample, a model's buffer is empty")
        m = self.n_models
        idx = (self.rng.random((m, batch_size)) * self.sizes[:, None]).astype(np.int64)
        rows = np.arange(m)[:, None]
        return (
            self.states[rows, idx],
            self.actions[rows, idx],
            self.rewards[rows, idx],
            self.next_states[rows, idx],
            self.dones[rows, idx],
        )

    def contents(self, model: int = 0):
        """Model ``model``'s transitions, oldest first (copies), in :attr:`FIELDS` order."""
        n = int(self.sizes[model])
        start = int(self.heads[model]) if n == self.capacity else 0
        idx = (start + np.arange(n)) % self.capacity
        return tuple(getattr(self, name)[model, idx].copy() for name in self.FIELDS)

    def clear(self, model: int | None = None) -> None:
        sl = slice(None) if model is None else model
        self.sizes[sl] = 0
        self.heads[sl] = 0


__all__ = ["ReplayMemory"]
