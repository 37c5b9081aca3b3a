"""GAPS's networks: a Transformer encoder over the subflows, an actor and a critic head.

Input: ``x`` [batch, S, F] (S = ``max_subflows`` tokens, one per subflow in
ascending sRTT order, padded with zeros) and ``mask`` [batch, S] (1.0 for a
real subflow, 0.0 for padding). Each token is projected to ``d_model``, the
position embedding of its RTT rank is added, and ``layers`` post-norm encoder
layers (multi-head self-attention, then a ReLU feed-forward, each with a
residual connection and LayerNorm, as ``torch.nn.TransformerEncoderLayer``)
follow. Padded tokens are excluded as attention keys by an additive mask.

* :class:`Actor`: a per-token head (``actor_hidden`` ReLU layers, then one
  tanh unit): the change of each subflow's GAP in [-1, 1] [batch, S].
* :class:`Critic`: its own encoder; the masked mean of the tokens,
  concatenated with the action vector [batch, S], through ``critic_hidden``
  ReLU layers to one value [batch].

The encoder layer is written out (not ``nn.TransformerEncoderLayer``) so that
the torch model, the ONNX graph (:mod:`baselines.gaps.export`, built node by
node as the DQN's is) and the NumPy reader of the HDF5 weights are the same
few operations with the same additive mask: the library layer's fast path and
boolean masks have no one-to-one ONNX form.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from envs.errors import ConfigError

#: the largest number of subflows the encoder takes (the GAPS paper's: up to 8)
MAX_SUBFLOWS = 8
#: additive attention bias of a padded key (large and finite: exp underflows to 0 in float32)
MASK_BIAS = -1e9


@dataclass(frozen=True)
class GapsNetConfig:
    """Sizes of the networks. ``paper`` is the GAPS paper's (6 layers of 512;
    8 heads, FFN 2048 and dropout 0.1, which it does not give, are ours);
    ``cpu`` (the default) is small enough to train in minutes on two cores."""

    n_features: int
    d_model: int = 32
    layers: int = 2
    heads: int = 4
    ff: int = 64
    dropout: float = 0.0
    max_subflows: int = MAX_SUBFLOWS
    actor_hidden: tuple[int, ...] = field(default=(48, 48))
    critic_hidden: tuple[int, ...] = field(default=(48, 48))

    def __post_init__(self):
        for key in ("n_features", "d_model", "layers", "heads", "ff", "max_subflows"):
            v = getattr(self, key)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"gaps.network.{key}: must be a positive integer, got {v!r}")
        if self.d_model % self.heads:
            raise ConfigError(
                f"gaps.network: d_model ({self.d_model}) must be a multiple of heads ({self.heads})"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"gaps.network.dropout: must be in [0, 1), got {self.dropout!r}")
        if self.max_subflows > MAX_SUBFLOWS:
            raise ConfigError(
                f"gaps.network.max_subflows: at most {MAX_SUBFLOWS}, got {self.max_subflows}"
            )
        object.__setattr__(self, "actor_hidden", tuple(int(h) for h in self.actor_hidden))
        object.__setattr__(self, "critic_hidden", tuple(int(h) for h in self.critic_hidden))

    def as_dict(self) -> dict:
        d = asdict(self)
        d["actor_hidden"] = list(self.actor_hidden)
        d["critic_hidden"] = list(self.critic_hidden)
        return d


PRESETS = {
    "cpu": {},
    "paper": {"d_model": 512, "layers": 6, "heads": 8, "ff": 2048, "dropout": 0.1},
}


def net_config(n_features: int, size: str = "cpu", **overrides) -> GapsNetConfig:
    """The config of a preset (``cpu`` | ``paper``) with ``overrides``."""
    if size not in PRESETS:
        raise ConfigError(f"gaps.size: unknown size {size!r}; known: {', '.join(PRESETS)}")
    kw = {**PRESETS[size], **{k: v for k, v in overrides.items() if v is not None}}
    return GapsNetConfig(n_features=n_features, **kw)


class EncoderLayer(nn.Module):
    """Post-norm Transformer encoder layer (module docstring)."""

    def __init__(self, d: int, heads: int, ff: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.norm2 = nn.LayerNorm(d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.heads
        dh = d // h

        def split(t):
            return t.reshape(b, s, h, dh).transpose(1, 2)  # [b, h, s, dh]

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh) + bias  # bias [b, 1, 1, s]
        att = torch.softmax(scores, dim=-1)
        ctx = (self.drop(att) @ v).transpose(1, 2).reshape(b, s, d)
        x = self.norm1(x + self.drop(self.o(ctx)))
        return self.norm2(x + self.drop(self.ff2(self.drop(torch.relu(self.ff1(x))))))


class Encoder(nn.Module):
    def __init__(self, cfg: GapsNetConfig):
        super().__init__()
        self.embed = nn.Linear(cfg.n_features, cfg.d_model)
        self.position = nn.Parameter(
            torch.randn(cfg.max_subflows, cfg.d_model) * 0.02
        )  # by RTT rank
        self.layers = nn.ModuleList(
            EncoderLayer(cfg.d_model, cfg.heads, cfg.ff, cfg.dropout) for _ in range(cfg.layers)
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.embed(x) + self.position
        bias = ((1.0 - mask) * MASK_BIAS)[:, None, None, :]
        for layer in self.layers:
            h = layer(h, bias)
        return h


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers of ``sizes`` with ReLU between them (none after the last)."""
    mods: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        mods.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


class Actor(nn.Module):
    """GAP change per subflow in [-1, 1] (module docstring)."""

    def __init__(self, cfg: GapsNetConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.head = mlp([cfg.d_model, *cfg.actor_hidden, 1])
        # token 0 is the fastest subflow, whose GAP is 0 by definition (GAPs count from it): no action
        self.register_buffer("controllable", (torch.arange(cfg.max_subflows) > 0).float())

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.head(self.encoder(x, mask))).squeeze(-1) * mask * self.controllable


class Critic(nn.Module):
    """Q(state, action) (module docstring)."""

    def __init__(self, cfg: GapsNetConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.head = mlp([cfg.d_model + cfg.max_subflows, *cfg.critic_hidden, 1])

    def forward(self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        h = self.encoder(x, mask)
        pooled = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
        return self.head(torch.cat([pooled, action * mask], dim=-1)).squeeze(-1)


__all__ = [
    "GapsNetConfig",
    "PRESETS",
    "net_config",
    "Actor",
    "Critic",
    "Encoder",
    "EncoderLayer",
    "mlp",
    "MAX_SUBFLOWS",
    "MASK_BIAS",
]
