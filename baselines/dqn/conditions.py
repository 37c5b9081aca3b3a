"""Network-condition transforms: the deviated conditions of DQN-On(N/W) and DQN-Off*.

The FALCON paper varies two properties of every path: the *RTT variation*
(here the standard deviation of the per-packet base RTT, ``rtt_std_ms``) and
the *loss rate* (``loss``; for Gilbert-Elliott loss both state loss
probabilities). :func:`deviate_scenario` scales them by ``1 + d``:

* DQN-On(N): buffered experience from ``d = -0.03`` and ``+0.03``;
* DQN-On(W): from ``d = -0.06, -0.03, +0.03, +0.06``;
* DQN-Off*: DQN-Off evaluated with ``d = -0.05`` ("RTT variation and loss
  reduced by 5 %").

Deviations are relative (a 5 % decrease of a 0.1 % loss is 0.095 %); mean
RTT, bandwidth and everything else are unchanged. Loss or delay read from a
trace's own series (``trace_loss`` / ``trace_delay``) are not scaled.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from envs.errors import ConfigError
from envs.scenario import normalise_scenario


def deviate_scenario(
    scenario: Mapping, rtt_variation: float = 0.0, loss: float = 0.0, name_suffix: str | None = None
) -> dict:
    """A normalised copy of ``scenario`` whose paths' RTT standard deviation
    is scaled by ``1 + rtt_variation`` and loss probabilities by ``1 + loss``
    (relative changes, each > -1). The name gets ``name_suffix`` (default
    e.g. ``"@rttvar-5%,loss-5%"``)."""
    for key, d in (("rtt_variation", rtt_variation), ("loss", loss)):
        if not float(d) > -1.0:
            raise ConfigError(f"deviation {key}: must be > -1 (a relative change), got {d!r}")
    s = copy.deepcopy(normalise_scenario(scenario))
    fv, fl = 1.0 + float(rtt_variation), 1.0 + float(loss)
    for p in s["paths"]:
        p["rtt_std_ms"] = float(p["rtt_std_ms"]) * fv
        p["loss"] = min(1.0, float(p["loss"]) * fl)
        ge = p.get("ge")
        if isinstance(ge, dict):
            for k in ("loss_good", "loss_bad"):
                if k in ge and ge[k] is not None:
                    ge[k] = min(1.0, float(ge[k]) * fl)
    if name_suffix is None:
        name_suffix = f"@rttvar{rtt_variation:+.0%},loss{loss:+.0%}"
    s["name"] = f"{s.get('name', 'scenario')}{name_suffix}"
    return normalise_scenario(s)


def path_conditions(scenario: Mapping) -> list[dict[str, float]]:
    """Per path: the summary conditions an experience log records
    (``bandwidth_mbps`` (NaN for trace/synthetic capacity), ``rtt_ms``,
    ``rtt_std_ms``, ``loss``)."""
    s = normalise_scenario(scenario)
    out = []
    for p in s["paths"]:
        bw = p.get("bandwidth_mbps")
        out.append(
            {
                "bandwidth_mbps": float("nan") if bw is None else float(bw),
                "rtt_ms": float(p["rtt_ms"]),
                "rtt_std_ms": float(p["rtt_std_ms"]),
                "loss": float(p["loss"]),
            }
        )
    return out


CONDITION_FIELDS = ("bandwidth_mbps", "rtt_ms", "rtt_std_ms", "loss")

__all__ = ["deviate_scenario", "path_conditions", "CONDITION_FIELDS"]
