"""The DQN update, batched over a stack of independent models.

One :class:`BatchedDQN` holds ``M`` independent Q-networks (online and target
parameters, Adam moments) as stacked tensors (``[M, ...]``; see
:mod:`baselines.dqn.network`) and updates all of them with one call: every
model gets its own mini-batch (``[M, B, ...]``) and its own loss, and the
update of model ``m`` is exactly the update it would get alone (the summed
loss has block-diagonal gradients, and Adam is element-wise). ``M = 1`` is an
ordinary DQN learner; the meta-model bank trains its 729 models side by side.

Update (Mnih et al. 2015, with our choices where the FALCON paper gives none; every value is a
:class:`DQNConfig` field and a key of the agent configs):

* target ``y = r + gamma * (1 - done) * max_a' Q_target(s', a')`` (or the
  double-DQN target with ``double_q``), no gradient through it;
* loss: Huber (``huber_delta``) or squared error of ``Q(s, a) - y``, mean over
  the mini-batch;
* Adam (lr 1e-3), optional global-norm gradient clipping per model;
* soft target update ``theta_target <- theta_target + tau (theta - theta_target)``
  after every step (tau 0.01).

Two implementations of the batched gradient (``technique=``), equal to
float32 rounding and both covered by the tests:

* ``"bmm"`` (default): explicit batched matrix products over the stacked
  weights, forward and backward written out by hand (``torch.baddbmm`` /
  ``torch.bmm``; the backward of a ReLU MLP is three products per layer), no
  autograd graph;
* ``"autograd"``: the same batched forward, gradients by one autograd
  backward pass;
* ``"vmap"``: ``torch.func.vmap(torch.func.grad(loss))`` of the single-model
  loss over the stack.

``python -m benchmarks.dqn_learner_speed`` measures both; on the 2-core CPU of the
development machine ``bmm`` is the faster (see the benchmark's report and
``docs/reference/formats/model_formats.md``).

Determinism: parameters are initialised from the seed (:func:`init_params`),
an update is a pure function of (parameters, optimiser state, batch), and CPU
kernels are deterministic for a fixed thread count, so a seed reproduces a
training run bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch

from baselines.dqn.network import QNetSpec, init_params, q_values, q_values_single
from envs.errors import ConfigError

TECHNIQUES = ("bmm", "autograd", "vmap")
LOSSES = ("huber", "mse")
#: ``threads="auto"``: one intra-op thread while ``n_models * batch_size`` is
#: at most this (small updates are latency bound, and on a busy machine every
#: multi-threaded kernel waits for a second core: measured 10x slower)
AUTO_SINGLE_THREAD_WORK = 2048


@contextmanager
def torch_threads(n: int | None):
    """Run a block with ``n`` torch intra-op threads (None: unchanged)."""
    if n is None or n == torch.get_num_threads():
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


@dataclass(frozen=True)
class DQNConfig:
    """Hyperparameters of the DQN update (defaults: the FALCON paper's, and ours where it gives none)."""

    lr: float = 1e-3  # Adam learning rate (paper)
    batch_size: int = 32  # mini-batch size (paper)
    gamma: float = 0.9  # discount per decision (ours)
    tau: float = 0.01  # soft target-network update (ours)
    loss: str = "huber"  # huber | mse
    huber_delta: float = 1.0
    double_q: bool = False  # double-DQN target
    grad_clip: float | None = None  # global gradient-norm clip per model; None = off
    #: conservative Q-learning (Kumar et al. 2020, CQL(H)) weight for offline
    #: training: adds ``cql_alpha * (logsumexp_a Q(s, a) - Q(s, a_data))`` to
    #: the loss, which keeps the greedy policy on actions the log supports; 0 = plain DQN
    cql_alpha: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-7  # the Keras default (the paper used keras-rl)

    def __post_init__(self):
        def bad(key, msg):
            raise ConfigError(f"{key}: {msg}, got {getattr(self, key)!r}")

        if not self.lr > 0:
            bad("lr", "must be positive")
        if int(self.batch_size) < 1:
            bad("batch_size", "must be a positive integer")
        if not 0 <= self.gamma <= 1:
            bad("gamma", "must be in [0, 1]")
        if not 0 < self.tau <= 1:
            bad("tau", "must be in (0, 1]")
        if self.loss not in LOSSES:
            bad("loss", f"must be one of {list(LOSSES)}")
        if not self.huber_delta > 0:
            bad("huber_delta", "must be positive")
        if self.grad_clip is not None and not self.grad_clip > 0:
            bad("grad_clip", "must be positive or null")
        if not self.cql_alpha >= 0:
            bad("cql_alpha", "must be >= 0")

    @classmethod
    def from_kwargs(cls, **kw) -> DQNConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(kw) - known
        if unknown:
            raise ConfigError(
                f"learner: unknown hyperparameter(s) {sorted(unknown)}; known: {sorted(known)}"
            )
        return cls(**kw)

    def to_dict(self) -> dict:
        return asdict(self)


def td_loss(err: torch.Tensor, kind: str, delta: float) -> torch.Tensor:
    """Per-element loss of TD errors ``err``: ``"mse"`` (half the square) or ``"huber"`` (``delta``)."""
    if kind == "mse":
        return 0.5 * err * err
    a = err.abs()
    return torch.where(a <= delta, 0.5 * err * err, delta * (a - 0.5 * delta))


class BatchedDQN:
    """``M`` independent DQN learners updated together (module docstring).

    Args:
        spec: the network architecture (shared by the stack).
        n_models: ``M``.
        config: :class:`DQNConfig`.
        seed: parameter-initialisation seed (see :func:`init_params`).
        technique: ``"bmm"``, ``"autograd"`` or ``"vmap"``.
        threads: torch intra-op threads during an update: an int, None (torch's
            setting) or ``"auto"`` (1 for small stacks, see
            :data:`AUTO_SINGLE_THREAD_WORK`; torch's setting otherwise).
    """

    def __init__(
        self,
        spec: QNetSpec,
        n_models: int = 1,
        config: DQNConfig | None = None,
        seed: int = 0,
        technique: str = "bmm",
        threads: int | str | None = "auto",
    ):
        if technique not in TECHNIQUES:
            raise ConfigError(f"technique: unknown {technique!r}; known: {list(TECHNIQUES)}")
        if threads == "auto":
            cfg = config or DQNConfig()
            threads = 1 if int(n_models) * cfg.batch_size <= AUTO_SINGLE_THREAD_WORK else None
        elif threads is not None and (isinstance(threads, bool) or int(threads) < 1):
            raise ConfigError(
                f"threads: expected a positive integer, 'auto' or null, got {threads!r}"
            )
        self.threads = None if threads is None else int(threads)
        self.spec = spec
        self.n_models = int(n_models)
        self.config = config or DQNConfig()
        self.technique = technique
        init = init_params(spec, n_models, seed)
        #: all parameters of all models in one 1-D buffer, tensor by tensor
        #: (W0 of every model, then b0, ...); ``params`` / ``target`` are
        #: contiguous ``[M, ...]`` views into it, gradients are written into
        #: the same layout, and the optimiser and target update are a handful
        #: of whole-buffer operations
        self._shapes = [tuple(p.shape[1:]) for p in init]
        self.flat = torch.cat([p.reshape(-1) for p in init]).contiguous()
        self.target_flat = self.flat.clone()
        self._bind()
        self.reset_optimizer()
        self._vmapped = None

    def _views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        out, off = [], 0
        for shape in self._shapes:
            n = self.n_models * int(np.prod(shape))
            out.append(flat[off : off + n].view(self.n_models, *shape))
            off += n
        return out

    def _bind(self) -> None:
        self.flat.requires_grad_(self.technique == "autograd")
        self.params = self._views(self.flat)
        self.target = self._views(self.target_flat)

    # ---------------------------------------------------------- state
    def reset_optimizer(self) -> None:
        """Zero the Adam moments and step count (e.g. when a meta-learner
        starts a new inner loop)."""
        self.m = torch.zeros_like(self.flat, requires_grad=False)
        self.v = torch.zeros_like(self.flat, requires_grad=False)
        self._scratch()
        self.steps = 0

    def _scratch(self) -> None:
        self._denom = torch.empty_like(self.v)
        self._gflat = torch.empty_like(self.v)
        self._gviews = self._views(self._gflat)

    def get_weights(self, model: int = 0, target: bool = False) -> list[np.ndarray]:
        """Model ``model``'s online (or target) weights as NumPy arrays ``[W0, b0, ...]``."""
        return [
            p[model].detach().cpu().numpy().copy() for p in (self.target if target else self.params)
        ]

    def split_flat(self, row: np.ndarray) -> list[np.ndarray]:
        """``[W0, b0, ...]`` views into one model's flat parameter vector ``[P]``."""
        out, off = [], 0
        for shape in self._shapes:
            n = int(np.prod(shape))
            out.append(row[off : off + n].reshape(shape))
            off += n
        return out

    def flat_weights(self, model: int = 0) -> np.ndarray:
        """A copy of model ``model``'s parameters as one vector ``[P]`` (W0, b0,
        ... flattened; :meth:`split_flat` splits it): a cheap deployment."""
        with torch.no_grad():
            return torch.cat([p[model].reshape(-1) for p in self.params]).numpy()

    def set_weights(
        self, weights: Sequence[np.ndarray], model: int | None = None, target: bool = True
    ) -> None:
        """Load ``[W0, b0, ...]`` into model ``model`` (every model if None);
        also into its target network unless ``target=False``."""
        if len(weights) != len(self.params):
            raise ConfigError(f"expected {len(self.params)} weight arrays, got {len(weights)}")
        sl = slice(None) if model is None else model
        with torch.no_grad():
            for p, t, w in zip(self.params, self.target, weights):
                w = torch.as_tensor(np.asarray(w, dtype=np.float32))
                if tuple(w.shape) != tuple(p.shape[1:]):
                    raise ConfigError(
                        f"weight shape {tuple(w.shape)} does not match {tuple(p.shape[1:])}"
                    )
                p.detach()[sl] = w
                if target:
                    t[sl] = w

    def copy_target_from_online(self) -> None:
        """Hard update: target <- online (every model)."""
        with torch.no_grad():
            self.target_flat.copy_(self.flat.detach())

    def state_dict(self) -> dict:
        """Everything needed to resume training (tensors are copies)."""
        return {
            "spec": self.spec.to_dict(),
            "config": self.config.to_dict(),
            "n_models": self.n_models,
            "technique": self.technique,
            "steps": self.steps,
            "flat": self.flat.detach().clone(),
            "target_flat": self.target_flat.clone(),
            "m": self.m.clone(),
            "v": self.v.clone(),
        }

    def load_state_dict(self, sd: dict) -> None:
        with torch.no_grad():
            for name in ("flat", "target_flat", "m", "v"):
                src = sd[name]
                dst = getattr(self, name)
                if tuple(src.shape) != tuple(dst.shape):
                    raise ConfigError(
                        f"learner state {name}: shape {tuple(src.shape)} does not match "
                        f"{tuple(dst.shape)}"
                    )
                dst.detach().copy_(src)
        self.steps = int(sd["steps"])

    def __getstate__(self):
        st = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("params", "target", "_vmapped", "_denom", "_gflat", "_gviews")
        }
        st["flat"] = self.flat.detach().clone()
        return st

    def __setstate__(self, st):
        self.__dict__.update(st)
        self._vmapped = None
        self._scratch()
        self._bind()

    # ---------------------------------------------------------- forward
    @torch.no_grad()
    def q(self, states, target: bool = False) -> torch.Tensor:
        """Q-values ``[M, B, n_actions]`` of states ``[M, B, n_inputs]``."""
        x = torch.as_tensor(np.asarray(states, dtype=np.float32))
        return q_values(self.target if target else self.params, x, self.spec)

    # ---------------------------------------------------------- update
    def _targets(self, r, s2, d) -> torch.Tensor:
        cfg = self.config
        with torch.no_grad():
            q_next_t = q_values(self.target, s2, self.spec)
            if cfg.double_q:
                a_star = q_values([p.detach() for p in self.params], s2, self.spec).argmax(
                    -1, keepdim=True
                )
                q_next = q_next_t.gather(-1, a_star).squeeze(-1)
            else:
                q_next = q_next_t.max(-1).values
            return r + cfg.gamma * (1.0 - d) * q_next

    def _grads_bmm(self, s, a, y):
        """Hand-written forward and backward of the ReLU MLP over the stack."""
        cfg = self.config
        params = self.params
        n = len(params) // 2
        x = s
        if self.spec.normalises:
            from baselines.dqn.network import normalise_input

            x = normalise_input(self.spec, x)
        acts = [x]  # layer inputs
        for i in range(n):
            z = torch.baddbmm(params[2 * i + 1].unsqueeze(1), x, params[2 * i])
            if i < n - 1:
                x = torch.relu(z)
                acts.append(x)
            else:
                x = z
        q_all = x  # [M, B, A]
        idx = a.unsqueeze(-1)
        err = q_all.gather(-1, idx).squeeze(-1) - y  # [M, B]
        inv_b = 1.0 / err.shape[1]
        if cfg.loss == "mse":
            per_model = (0.5 * inv_b) * (err * err).sum(-1)
            derr = err * inv_b
        else:
            ab = err.abs()
            small = ab <= cfg.huber_delta
            per_model = (
                torch.where(
                    small, 0.5 * err * err, cfg.huber_delta * (ab - 0.5 * cfg.huber_delta)
                ).sum(-1)
                * inv_b
            )
            derr = err.clamp(-cfg.huber_delta, cfg.huber_delta).mul_(inv_b)
        dz = torch.zeros_like(q_all).scatter_(-1, idx, derr.unsqueeze(-1))  # dL/dq
        if cfg.cql_alpha > 0.0:
            # d/dq [alpha * mean(logsumexp(q) - q_a)] = alpha / B * (softmax(q) - onehot(a))
            lse = torch.logsumexp(q_all, -1)
            per_model = per_model + cfg.cql_alpha * inv_b * (
                lse - q_all.gather(-1, idx).squeeze(-1)
            ).sum(-1)
            soft = torch.softmax(q_all, -1).scatter_add_(
                -1, idx, torch.full_like(derr, -1.0).unsqueeze(-1)
            )
            dz.add_(soft, alpha=cfg.cql_alpha * inv_b)
        grads = self._gviews  # written in place: the optimiser reads the flat buffer
        for i in range(n - 1, -1, -1):
            h = acts[i]
            torch.bmm(h.transpose(1, 2), dz, out=grads[2 * i])
            torch.sum(dz, 1, out=grads[2 * i + 1])
            if i > 0:
                dh = torch.bmm(dz, params[2 * i].transpose(1, 2))
                dz = torch.ops.aten.threshold_backward(dh, h, 0.0)  # ReLU'(z) = [h > 0]
        return grads, per_model

    def _grads_autograd(self, s, a, y):
        cfg = self.config
        q_all = q_values(self.params, s, self.spec)
        q = q_all.gather(-1, a.unsqueeze(-1)).squeeze(-1)
        per_model = td_loss(q - y, cfg.loss, cfg.huber_delta).mean(-1)  # [M]
        if cfg.cql_alpha > 0.0:
            per_model = per_model + cfg.cql_alpha * (torch.logsumexp(q_all, -1) - q).mean(-1)
        grads = torch.autograd.grad(per_model.sum(), self.params)
        return grads, per_model.detach()

    def _grads_vmap(self, s, a, y):
        from torch.func import grad_and_value, vmap

        if self._vmapped is None:
            spec, cfg = self.spec, self.config

            def loss_one(params, s1, a1, y1):
                q_all = q_values_single(params, s1, spec)
                q = q_all.gather(-1, a1.unsqueeze(-1)).squeeze(-1)
                loss = td_loss(q - y1, cfg.loss, cfg.huber_delta).mean()
                if cfg.cql_alpha > 0.0:
                    loss = loss + cfg.cql_alpha * (torch.logsumexp(q_all, -1) - q).mean()
                return loss

            self._vmapped = vmap(grad_and_value(loss_one))
        grads, loss = self._vmapped(tuple(p.detach() for p in self.params), s, a, y)
        return grads, loss

    def update(self, states, actions, rewards, next_states, dones) -> torch.Tensor:
        """One DQN step of every model on its own mini-batch.

        Arrays have a leading model axis: states ``[M, B, n_inputs]``,
        actions ``[M, B]`` (int), rewards / dones ``[M, B]``. Returns the
        per-model loss before the step, ``[M]``.
        """
        with torch_threads(self.threads):
            return self._update(states, actions, rewards, next_states, dones)

    def _update(self, states, actions, rewards, next_states, dones) -> torch.Tensor:
        cfg = self.config
        s = torch.as_tensor(np.asarray(states, dtype=np.float32))
        a = torch.as_tensor(np.asarray(actions, dtype=np.int64))
        r = torch.as_tensor(np.asarray(rewards, dtype=np.float32))
        s2 = torch.as_tensor(np.asarray(next_states, dtype=np.float32))
        d = torch.as_tensor(np.asarray(dones, dtype=np.float32))
        if s.ndim != 3 or s.shape[0] != self.n_models or s.shape[2] != self.spec.n_inputs:
            raise ConfigError(
                f"states: expected shape [{self.n_models}, B, {self.spec.n_inputs}], "
                f"got {list(s.shape)}"
            )
        y = self._targets(r, s2, d)
        if self.technique == "bmm":
            grads, loss = self._grads_bmm(s, a, y)
        elif self.technique == "autograd":
            grads, loss = self._grads_autograd(s, a, y)
        else:
            grads, loss = self._grads_vmap(s, a, y)
        with torch.no_grad():
            self.steps += 1
            b1, b2 = cfg.adam_beta1, cfg.adam_beta2
            g = self._gflat
            if self.technique != "bmm":  # bmm wrote its gradients there already
                for dst, src in zip(self._gviews, grads):
                    dst.copy_(src)
            if cfg.grad_clip is not None:
                sq = sum(x.reshape(self.n_models, -1).pow(2).sum(1) for x in self._gviews)  # [M]
                factor = (cfg.grad_clip / (sq.sqrt() + 1e-6)).clamp_(max=1.0)
                for x in self._gviews:
                    x.mul_(factor.view(-1, *([1] * (x.ndim - 1))))
            bc1 = 1.0 - b1**self.steps
            bc2 = 1.0 - b2**self.steps
            flat = self.flat.detach()
            self.m.lerp_(g, 1.0 - b1)  # m = b1 m + (1 - b1) g
            self.v.mul_(b2).addcmul_(g, g, value=1.0 - b2)  # v = b2 v + (1 - b2) g^2
            # NumPy's sqrt: torch's CPU sqrt is ~10x slower on zeros (never-updated
            # entries), which dominate a fresh bank's optimiser state
            denom = self._denom
            np.sqrt(self.v.numpy(), out=denom.numpy())
            denom.div_(bc2**0.5).add_(cfg.adam_eps)
            flat.addcdiv_(self.m, denom, value=-cfg.lr / bc1)
            self.target_flat.lerp_(flat, cfg.tau)  # soft target update
        return loss

    def greedy(self, states) -> np.ndarray:
        """Greedy actions ``[M, B]`` for states ``[M, B, n_inputs]``."""
        return self.q(states).argmax(-1).numpy()


__all__ = ["BatchedDQN", "DQNConfig", "TECHNIQUES", "LOSSES", "torch_threads"]
