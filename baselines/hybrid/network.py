"""Hybrid MPTCP's networks: an LSTM over the subflows, a per-subflow actor head, a critic.

Input: ``x`` [batch, S, F] (one row per subflow in path order, F = 6
features, :mod:`baselines.hybrid.features`) and ``mask`` [batch, S] (1.0 for
a subflow, 0.0 for padding). Padding may only follow the real subflows: the
LSTM reads the rows one after another (as in the paper, which takes any
subflow count this way), so a real subflow never sees a padded one, and
the *final state* is the LSTM output at the last real subflow (gathered at
index ``sum(mask) - 1``), exactly what the LSTM gives on the unpadded rows.

* :class:`Actor`: the per-step LSTM outputs ``o_i`` [batch, S, H] and the
  final state ``h`` [batch, H]; each subflow's head reads ``[o_i, h]`` (its
  own step, which has seen the subflows before it, plus the summary of all of
  them) through ``hidden`` ReLU layers (the paper's: two of 128) and one tanh unit:
  the window exponent ``a_i`` in [-1, 1] [batch, S] (0 for padding). One head
  shared by every subflow, so any subflow count is served by the same weights.
* :class:`Critic`: its own LSTM reading ``[x_i, a_i]`` per subflow (the
  state and the action of each subflow, so it takes any subflow count as the
  actor does); its final state through ``hidden`` ReLU layers to one linear
  output: Q [batch].

The torch LSTM is ``nn.LSTM`` (one layer, gates i, f, g, o; ``c' = f c + i
g``, ``h' = o tanh(c')``); :mod:`baselines.hybrid.export` writes the same
equations out in NumPy and as the ONNX ``LSTM`` operator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from baselines.gaps.network import mlp
from envs.errors import ConfigError, is_whole_number

#: the largest subflow count a replay pads to (the networks themselves take any count)
MAX_SUBFLOWS = 8


@dataclass(frozen=True)
class HybridNetConfig:
    """Sizes of the networks: ``hidden`` is the paper's (two layers of
    128, ReLU); ``lstm_hidden`` (the LSTM state) is ours, the paper gives none."""

    n_features: int
    lstm_hidden: int = 64
    hidden: tuple[int, ...] = field(default=(128, 128))

    def __post_init__(self):
        for key in ("n_features", "lstm_hidden"):
            v = getattr(self, key)
            if not is_whole_number(v, 1):
                raise ConfigError(f"hybrid.network.{key}: must be a positive integer, got {v!r}")
        try:
            hidden = tuple(int(h) for h in self.hidden)
        except (TypeError, ValueError):
            raise ConfigError(
                f"hybrid.network.hidden: must be a list of positive integers, got {self.hidden!r}"
            ) from None
        if not hidden or min(hidden) < 1:
            raise ConfigError(
                f"hybrid.network.hidden: must be a non-empty list of positive integers, "
                f"got {self.hidden!r}"
            )
        object.__setattr__(self, "hidden", hidden)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d


def _final(out: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The LSTM output at each row's last real subflow: [batch, H]."""
    last = (mask.sum(1).long() - 1).clamp(min=0)
    return out[torch.arange(out.shape[0]), last]


class Actor(nn.Module):
    """Window exponent per subflow in [-1, 1] (module docstring)."""

    def __init__(self, cfg: HybridNetConfig):
        super().__init__()
        self.cfg = cfg
        self.lstm = nn.LSTM(cfg.n_features, cfg.lstm_hidden, batch_first=True)
        self.head = mlp([2 * cfg.lstm_hidden, *cfg.hidden, 1])

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        h = _final(out, mask)
        z = torch.cat([out, h[:, None, :].expand_as(out)], dim=-1)
        return torch.tanh(self.head(z)).squeeze(-1) * mask


class Critic(nn.Module):
    """Q(state, action) (module docstring)."""

    def __init__(self, cfg: HybridNetConfig):
        super().__init__()
        self.cfg = cfg
        self.lstm = nn.LSTM(cfg.n_features + 1, cfg.lstm_hidden, batch_first=True)
        self.head = mlp([cfg.lstm_hidden, *cfg.hidden, 1])

    def forward(self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(torch.cat([x, (action * mask)[..., None]], dim=-1))
        return self.head(_final(out, mask)).squeeze(-1)


def build(cfg: HybridNetConfig) -> tuple[Actor, Critic]:
    """Actor and critic (the ``build`` hook of :class:`baselines.gaps.ddpg.DDPG`)."""
    return Actor(cfg), Critic(cfg)


__all__ = ["HybridNetConfig", "Actor", "Critic", "build", "MAX_SUBFLOWS"]
