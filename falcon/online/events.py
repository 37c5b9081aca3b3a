"""What FALCON's online module records and assumes: the adaptation phases,
:class:`AdaptationEvent` (one trigger and what followed), and the prior
conditions of its fallback (:func:`prior_conditions`: Table I 4G + 5G by
default, read from :data:`envs.scenario.LINKS`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from envs.errors import ConfigError
from metalearning.grid import PathCondition

# adaptation phases of the model in use
IDLE = "idle"  # the fallback acts, no selection yet in this connection
COLLECTING = "collecting"  # a meta-model was selected, waiting for post-change transitions
FINETUNING = "finetuning"  # the K-step job is running (the old policy acts)
DEPLOYED = "deployed"  # the fine-tuned model acts


@dataclass
class AdaptationEvent:
    """One trigger (connection start or detected change) and what followed.

    Times are emulated seconds within the episode ``episode``. ``action``:
    ``"adapt"`` (new cell: meta-model loaded and fine-tuned), ``"keep"``
    (same cell as the model in use), ``"superseded"`` (a newer trigger
    arrived before the window closed), or None while the window is open.
    ``decisions_*`` count decisions (online packets) since the trigger.
    ``old_policy_decisions``: decisions taken by the previous policy while
    the K steps ran. ``guard``: what the deployment guard deployed
    (:mod:`falcon.online.guard`).
    """

    episode: int
    time: float
    path: int | None
    signal: str  # "start" | "rtt" | "loss"
    decisions_at_change: int
    conditions: tuple[PathCondition, ...] | None = None
    sources: tuple | None = None  # per path (rtt source, loss source), see the estimator
    select_time: float | None = None
    decisions_to_select: int | None = None
    cell: int | None = None
    previous_cell: int | None = None
    action: str | None = None
    finetune_start: float | None = None
    finetune_steps: int = 0
    finetune_cost_s: float = 0.0
    deploy_time: float | None = None
    decisions_to_deploy: int | None = None
    old_policy_decisions: int = 0
    guard: str | None = (
        None  # deployment guard: "fine-tuned" | "meta-model" (deployed instead) | None (not judged)
    )
    guard_errors: tuple | None = None  # held-out Bellman errors (fine-tuned, meta-model)
    wall_s: dict = field(
        default_factory=dict
    )  # wall time of estimation+selection and of the K steps


def table1_prior() -> tuple[dict, dict]:
    """Table I 4G and 5G (FALCON paper Sec. V-D; :data:`envs.scenario.LINKS`): the
    default prior conditions of the fallback, ``{loss, rtt_ms, rtt_std_ms}``."""
    from envs.scenario import LINKS

    return tuple(
        {
            "loss": LINKS[k]["loss"],
            "rtt_ms": LINKS[k]["rtt_ms"],
            "rtt_std_ms": LINKS[k]["rtt_std_ms"],
        }
        for k in ("4g", "5g")
    )


def prior_conditions(prior, n_paths: int) -> list[PathCondition]:
    """``prior`` (a list of ``{loss, rtt_ms, rtt_std_ms}`` per path, one for
    every path, or None: :func:`table1_prior`) as ``n_paths`` conditions."""
    if prior is None:
        prior = table1_prior()
    if isinstance(prior, Mapping) or not isinstance(prior, Sequence) or not prior:
        raise ConfigError(
            f"prior_conditions: expected a list of {{loss, rtt_ms, rtt_std_ms}} per path, got {prior!r}"
        )
    out = []
    for p in prior:
        if isinstance(p, PathCondition):
            out.append(p)
            continue
        try:
            out.append(
                PathCondition(
                    loss=float(p["loss"]),
                    rtt_ms=float(p["rtt_ms"]),
                    rtt_std_ms=float(p["rtt_std_ms"]),
                )
            )
        except (KeyError, TypeError, ValueError):
            raise ConfigError(
                f"prior_conditions: expected {{loss, rtt_ms, rtt_std_ms}}, got {p!r}"
            ) from None
    if len(out) == 1:
        out = out * n_paths
    if len(out) < n_paths:
        raise ConfigError(f"prior_conditions: {len(out)} paths given, the scenario has {n_paths}")
    return out[:n_paths]


__all__ = [
    "AdaptationEvent",
    "IDLE",
    "COLLECTING",
    "FINETUNING",
    "DEPLOYED",
    "prior_conditions",
    "table1_prior",
]
