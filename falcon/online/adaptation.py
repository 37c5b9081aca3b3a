"""FALCON's few-shot adaptation (Algorithm 1, step 4, and continual
updates): load the selected cell's meta-model, fine-tune it K steps on the
post-change replay while the old policy acts, deploy it (``theta + mix (W -
theta)``), and keep training it after deployment, within a connection or
between connections (:mod:`falcon.online.scheduler`'s docstring, items 4-5).

:class:`FewShotAdaptation` is a part of :class:`falcon.online.FalconScheduler`
(its state lives there); its two trainer jobs run under
:class:`baselines.dqn.async_trainer.AsyncTrainer`'s cost model.
"""

from __future__ import annotations

import math
import time as _time

import numpy as np

from falcon.online.events import COLLECTING, DEPLOYED, FINETUNING, AdaptationEvent
from falcon.online.guard import bellman_error, split_held_out


class FewShotAdaptation:
    """Fine-tuning jobs, deployment and continual updates."""

    # ---------------------------------------------------------- adaptation
    def _adapt(self, cell: int, ev: AdaptationEvent, win) -> None:
        self._gen += 1
        self.cell = cell
        ev.action = "adapt"
        self.adaptations += 1
        self._adapt_event = ev
        self._load(cell)
        self.replay.clear()
        self._between_new = 0
        if win is not None:
            self.replay.extend(*win)
            if self.offline is not None:
                self.offline.extend(cell, *win)
        if self.finetune_steps == 0:  # zero-shot: the meta-model acts at once
            self._ft_mark = self.decisions
            self._ft_gen = self._gen
            self._ft_deploy()
            return
        if self.act_on_selection:  # the meta-model acts while its K steps are prepared
            self.deploy()
        self.phase = COLLECTING
        self.finetuner.notify(len(self.replay))

    def _ft_ready(self) -> bool:
        return (
            self.phase == COLLECTING
            and len(self.replay) >= self.min_transitions
            and not self.trainer.busy
        )

    def _ft_train(self, n: int) -> float:
        t0 = _time.perf_counter()
        self._ft_gen = self._gen
        self.phase = FINETUNING
        self._set_epsilon()
        ev = self._adapt_event
        ev.finetune_start = self._now()
        ev.finetune_steps = n
        ev.finetune_cost_s = n * self.finetuner.step_cost_s
        self._ft_mark = self.decisions
        self._held_out = None
        if self.deploy_guard:
            split = split_held_out(self.replay.contents(), self.guard_every)
            if split is not None:
                training, self._held_out = split
                self.replay.clear()
                self.replay.extend(*training)
        loss = self._steps(n)
        self.finetuner.losses.clear()  # AsyncTrainer appends one per job: keep it bounded
        ev.wall_s["finetune"] = _time.perf_counter() - t0
        return loss

    def _ft_deploy(self) -> None:
        if self._ft_gen != self._gen:
            return  # a newer adaptation started meanwhile
        if self.finetune_steps and self.finetune_mix != 1.0:  # deploy theta + mix (W - theta)
            theta = self.bank.row(self.cell)
            w = self.learner.flat_weights(0)
            self.learner.set_weights(
                self.learner.split_flat(theta + np.float32(self.finetune_mix) * (w - theta))
            )
        self._guard(self._adapt_event)
        self.deploy()
        self.phase = DEPLOYED
        self.deployed_cell = self.cell
        self.deployments += 1
        ev = self._adapt_event
        ev.deploy_time = self._now()
        ev.decisions_to_deploy = self.decisions - ev.decisions_at_change
        ev.old_policy_decisions = self.decisions - self._ft_mark
        self._set_epsilon()

    def _guard(self, ev: AdaptationEvent) -> None:
        """The deployment guard (:mod:`falcon.online.guard`): the meta-model
        replaces the fine-tuned network when it has the lower held-out Bellman
        error; the held-out transitions rejoin the replay either way."""
        held, self._held_out = self._held_out, None
        if held is None:
            return
        cfg = self.learner_config
        theta = self.bank.weights(self.cell)
        errs = [
            bellman_error(w, self.spec, held, cfg.gamma, cfg.loss, cfg.huber_delta)
            for w in (self.learner.get_weights(0), theta)
        ]
        ev.guard_errors = tuple(errs)
        if errs[0] > errs[1]:
            self.learner.set_weights(theta)
            self.learner.reset_optimizer()
            ev.guard = "meta-model"
            self.guarded += 1
        else:
            ev.guard = "fine-tuned"
        self.replay.extend(*held)

    def _steps(self, n: int) -> float:
        replay, learner, bs = self.replay, self.learner, self.learner_config.batch_size
        loss = math.nan
        for _ in range(n):
            loss = float(learner.update(*replay.sample(bs))[0])
        return loss

    # continual updates after deployment (continual: true)
    def _ct_ready(self) -> bool:
        return (
            self.continual
            and self.phase == DEPLOYED
            and not self.finetuner.busy
            and len(self.replay) >= self.learner_config.batch_size
        )

    def _ct_train(self, n: int) -> float:
        self._ct_gen = self._gen
        loss = self._steps(n)
        self.trainer.losses.clear()
        return loss

    def _ct_deploy(self) -> None:
        if self._ct_gen == self._gen and self.phase == DEPLOYED:
            self.deploy()

    def _train_between(self) -> None:
        """Between connections (``continual_between``): one DQN step per
        ``continual_train_interval`` transitions the deployed model collected
        in the connections since the last such update, then deploy. It runs
        when the next connection starts, so no emulated time passes and a
        last connection costs nothing."""
        n, self._between_new = self._between_new // self.trainer.train_interval, 0
        if (
            n == 0
            or not self.continual_between
            or self.continual
            or self.phase != DEPLOYED
            or self.fallback == "prior"  # the connection starts from the prior cell anyway
            or len(self.replay) < self.learner_config.batch_size
        ):
            return
        self._steps(n)
        self.between_steps += n
        self.deploy()


__all__ = ["FewShotAdaptation"]
