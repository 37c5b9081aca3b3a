"""The trace files a run reads: one line each at the run's start, and each
file's SHA-256 in ``plan.yaml`` and the MLflow params.

Two runs of the same scenario name, one on a shipped trace and one on a
user's file, differ in their ``trace_sha256`` params
(``scenario.paths.<i>.trace_sha256``; ``scenario.<name>.paths.<i>.trace_sha256``
when the run has several scenarios, as the scenario params are named).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.emulation import load_path_trace
from envs.scenario import normalise_scenario
from envs.traces.base import PathTrace
from envs.traces.summary import display_name, summary_line


@dataclass(frozen=True)
class TraceUse:
    """One path of one scenario that reads a trace file, and the trace as read."""

    scenario: str
    path_index: int
    trace: PathTrace


def traces_read(scenarios: list[tuple[str, dict]]) -> list[TraceUse]:
    """Every (scenario, path) of ``scenarios`` (name, config) with a ``trace`` file, loaded
    as the emulator loads it (its format and options; a random start is applied later)."""
    uses = []
    for name, scenario in scenarios:
        for i, path in enumerate(normalise_scenario(scenario)["paths"]):
            if path["trace"] is not None:
                uses.append(
                    TraceUse(name, i, load_path_trace(path["trace"], np.random.SeedSequence(0)))
                )
    return uses


def summary_lines(uses: list[TraceUse]) -> list[str]:
    """One :func:`envs.traces.summary.summary_line` per distinct trace as read (a file read
    twice the same way is one line)."""
    lines = [summary_line(u.trace) for u in uses]
    return list(dict.fromkeys(lines))


def trace_params(uses: list[TraceUse], n_scenarios: int) -> dict[str, str]:
    """MLflow params: ``scenario[.<name>].paths.<i>.trace_sha256`` -> the file's SHA-256."""

    def key(u: TraceUse) -> str:
        prefix = "scenario." if n_scenarios == 1 else f"scenario.{u.scenario}."
        return f"{prefix}paths.{u.path_index}.trace_sha256"

    return {key(u): u.trace.sha256 for u in uses}


def plan_traces(uses: list[TraceUse]) -> list[dict]:
    """The ``traces`` list of ``plan.yaml``: scenario, path index, file, format, SHA-256."""
    return [
        {
            "scenario": u.scenario,
            "path": u.path_index,
            "file": display_name(u.trace.source),
            "format": u.trace.format,
            "sha256": u.trace.sha256,
        }
        for u in uses
    ]


__all__ = ["TraceUse", "traces_read", "summary_lines", "trace_params", "plan_traces"]
