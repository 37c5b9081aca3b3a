"""DDPG for GAPS (Lillicrap et al. 2016; the GAPS paper's hyperparameters, ours where it gives none).

Actor mu(s) and critic Q(s, a) (:mod:`baselines.gaps.network`), each with a
target copy updated softly (tau); critic target ``r + gamma (1 - done)
Q'(s', mu'(s'))`` (the standard DDPG target, our decision despite the
paper's Eq. 6, which has no target networks in it); actor step on
``-Q(s, mu(s))``. Replay: a FIFO ring of NumPy arrays. Exploration: Ornstein-Uhlenbeck noise per subflow, its sigma
decaying per decision.

:class:`DDPG` and :class:`Replay` only assume networks called as ``actor(x,
mask)`` and ``critic(x, mask, action)`` on ``[batch, S, F]`` states with a
``[batch, S]`` mask; ``DDPG(..., build=f)`` takes other such networks
(``f(net) -> (actor, critic)``; Hybrid MPTCP's LSTM networks,
:mod:`baselines.hybrid`). Without ``build`` they are GAPS's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from baselines.gaps.network import Actor, Critic, GapsNetConfig
from envs.errors import ConfigError


@dataclass(frozen=True)
class DDPGConfig:
    actor_lr: float = 1e-4
    critic_lr: float = 1e-3
    tau: float = 0.001
    gamma: float = 0.99
    batch_size: int = 64
    replay_capacity: int = 100_000
    warmup: int = 1_000

    def __post_init__(self):
        for key in ("actor_lr", "critic_lr", "tau"):
            if not getattr(self, key) > 0:
                raise ConfigError(f"gaps.{key}: must be positive, got {getattr(self, key)!r}")
        if not 0.0 <= self.gamma < 1.0:
            raise ConfigError(f"gaps.gamma: must be in [0, 1), got {self.gamma!r}")
        for key in ("batch_size", "replay_capacity"):
            if int(getattr(self, key)) < 1:
                raise ConfigError(
                    f"gaps.{key}: must be a positive integer, got {getattr(self, key)!r}"
                )
        if int(self.warmup) < 0:
            raise ConfigError(f"gaps.warmup: must be >= 0, got {self.warmup!r}")


class OUNoise:
    """Ornstein-Uhlenbeck noise, one process per subflow token:
    ``x += theta (0 - x) + sigma N(0, 1)``; sigma decays by ``decay`` per
    sample down to ``sigma_min``."""

    def __init__(
        self,
        size: int,
        rng: np.random.Generator,
        theta: float = 0.15,
        sigma: float = 0.2,
        decay: float = 0.9999,
        sigma_min: float = 0.02,
    ):
        self.rng = rng
        self.theta = float(theta)
        self.sigma = float(sigma)
        self.decay = float(decay)
        self.sigma_min = float(sigma_min)
        self.x = np.zeros(size, np.float32)

    def reset(self) -> None:
        self.x[:] = 0.0

    def sample(self) -> np.ndarray:
        self.x += self.theta * -self.x + self.sigma * self.rng.standard_normal(self.x.shape).astype(
            np.float32
        )
        self.sigma = max(self.sigma * self.decay, self.sigma_min)
        return self.x


class Replay:
    """FIFO ring of transitions ``(x, mask, action, reward, x', mask', done)``."""

    def __init__(self, capacity: int, tokens: int, features: int):
        self.capacity = int(capacity)
        c = self.capacity
        self.x = np.zeros((c, tokens, features), np.float32)
        self.m = np.zeros((c, tokens), np.float32)
        self.a = np.zeros((c, tokens), np.float32)
        self.r = np.zeros(c, np.float32)
        self.x2 = np.zeros((c, tokens, features), np.float32)
        self.m2 = np.zeros((c, tokens), np.float32)
        self.d = np.zeros(c, np.float32)
        self.n = 0
        self.i = 0

    def __len__(self) -> int:
        return self.n

    def add(self, x, m, a, r, x2, m2, done) -> None:
        i = self.i
        self.x[i], self.m[i], self.a[i], self.r[i] = x, m, a, r
        self.x2[i], self.m2[i], self.d[i] = x2, m2, float(done)
        self.i = (i + 1) % self.capacity
        self.n = min(self.n + 1, self.capacity)

    def sample(self, rng: np.random.Generator, batch: int):
        idx = rng.integers(0, self.n, size=batch)
        return tuple(
            torch.from_numpy(arr[idx])
            for arr in (self.x, self.m, self.a, self.r, self.x2, self.m2, self.d)
        )


class DDPG:
    """Actor, critic, their targets and optimisers; :meth:`update` is one gradient step of each."""

    def __init__(self, net: GapsNetConfig, cfg: DDPGConfig, seed: int, build=None):
        torch.manual_seed(int(seed))
        self.net = net
        self.cfg = cfg
        if build is None:
            self.actor = Actor(net)
            self.critic = Critic(net)
        else:
            self.actor, self.critic = build(net)
        self.actor_target = copy.deepcopy(self.actor)
        self.critic_target = copy.deepcopy(self.critic)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)
        self.updates = 0

    @torch.no_grad()
    def act(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The actor's action [S] for one state (eval mode: no dropout)."""
        self.actor.eval()
        return self.actor(torch.from_numpy(x)[None], torch.from_numpy(mask)[None])[0].numpy()

    def update(self, batch) -> dict[str, float]:
        x, m, a, r, x2, m2, d = batch
        cfg = self.cfg
        self.actor.train()
        self.critic.train()
        with torch.no_grad():
            y = r + cfg.gamma * (1.0 - d) * self.critic_target(x2, m2, self.actor_target(x2, m2))
        q = self.critic(x, m, a)
        critic_loss = torch.nn.functional.mse_loss(q, y)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        actor_loss = -self.critic(x, m, self.actor(x, m)).mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()
        with torch.no_grad():
            for net, target in ((self.actor, self.actor_target), (self.critic, self.critic_target)):
                for p, tp in zip(net.parameters(), target.parameters()):
                    tp.mul_(1.0 - cfg.tau).add_(p, alpha=cfg.tau)
        self.updates += 1
        return {
            "critic_loss": float(critic_loss.detach()),
            "actor_loss": float(actor_loss.detach()),
            "q": float(q.detach().mean()),
        }


__all__ = ["DDPG", "DDPGConfig", "OUNoise", "Replay"]
