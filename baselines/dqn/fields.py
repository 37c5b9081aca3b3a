"""The attributes of a DQN scheduler that the compiled core's decision reads.

:func:`envs.rules.completion_decision` takes a completion-MDP DQN scheduler's
decisions in the compiled core. The scheduler attributes it reads and writes at
every decision (``epsilon``, ``recording``, ``record_budget``, ``decisions``,
``behaviour``, ``qnet``, ``_credit``, ``_draws`` and its ``rng``,
``_native_completion``) are
kept in one typed record, :class:`envs.rules.DQNFields` (the scheduler's
``_fields``), and shown as the scheduler's attributes by the properties of
:class:`DecisionFieldAttributes`: the compiled decision reads C fields where it
looked each name up in the scheduler's instance dictionary (about a tenth of
bank task collection's instructions), and the Python code reads and assigns the
attributes as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from envs.explore import EpsilonDraws
from envs.rules import DQNFields

if TYPE_CHECKING:
    from baselines.dqn.network import NumpyQNet


def _field(name: str, doc: str) -> property:
    """A scheduler attribute kept in its ``_fields`` record under ``name``."""
    return property(
        lambda self: getattr(self._fields, name),
        lambda self, value: setattr(self._fields, name, value),
        doc=doc,
    )


class DecisionFieldAttributes:
    """Properties over the scheduler's ``_fields`` (an :class:`envs.rules.DQNFields`),
    which its ``__init__`` makes before it sets any of them."""

    _fields: DQNFields

    _native_completion = _field(
        "native", "envs.rules.completion_decision may take the decisions (set at reset)"
    )
    recording = _field("recording", "Compute rewards and emit transitions (learning or logging).")
    behaviour = _field(
        "behaviour",
        "Optional behaviour policy (a Scheduler) that acts instead of the Q-network when "
        "not exploring: logging experience of other schedulers.",
    )
    decisions = _field("decisions", "Decisions taken.")
    epsilon = _field("epsilon", "Exploration probability of the epsilon-greedy policy.")
    _credit = _field("credit", "The completion MDP's credit of the episode (None: another MDP).")
    _draws = _field("draws", "The exploration draws (envs.explore.EpsilonDraws).")

    @property
    def rng(self) -> np.random.Generator:
        """The exploration draws' Generator (settable: a task reseeds it)."""
        return self._fields.draws.rng

    @rng.setter
    def rng(self, rng: np.random.Generator) -> None:
        self._fields.draws = EpsilonDraws(rng)

    @property
    def record_budget(self) -> int | None:
        """Record at most this many more decisions, then stop the simulator as soon as
        their transitions are complete (None: no limit)."""
        f = self._fields
        return int(f.budget) if f.has_budget else None

    @record_budget.setter
    def record_budget(self, budget: int | None) -> None:
        f = self._fields
        f.has_budget = budget is not None
        f.budget = 0 if budget is None else int(budget)

    @property
    def qnet(self) -> NumpyQNet | None:
        """The acting network (None before :meth:`build` or :meth:`load`)."""
        return self._fields.qnet

    @qnet.setter
    def qnet(self, qnet: NumpyQNet | None) -> None:
        self._fields.act_with(qnet)


__all__ = ["DecisionFieldAttributes"]
