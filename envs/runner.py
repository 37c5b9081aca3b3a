"""Run one episode: a scenario, an app, a scheduler and a seed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy.typing as npt

from envs.apps import make_app
from envs.apps.base import App
from envs.emulation import Emulation
from envs.errors import ConfigError
from envs.metrics import episode_metrics
from envs.scenario import normalise_scenario
from envs.scheduler import Scheduler
from envs.sim import collector_paused
from envs.transport import Connection

#: a scenario or app: a mapping of its keys, or the name of a preset (``configs/``)
Config = Mapping[str, Any] | str


@dataclass
class EpisodeResult:
    """What one episode measured (see docs/reference/formats/scenario_schema.md)."""

    metrics: dict[str, float]
    #: per object (stream, web object): completion time minus request time [s]
    object_times: list[float]
    timeseries: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    scenario: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    #: per object: request time relative to the app's start [s]
    object_release_times: list[float] = field(default_factory=list)


def setup_episode(
    scenario: Config, app: Config, scheduler: Scheduler, seed: int = 0, normalised: bool = False
) -> tuple[Emulation, Connection, App, dict[str, Any]]:
    """Build (emulation, connection, app) without running; the app is started.
    ``normalised``: ``scenario`` is already :func:`normalise_scenario`'s output.
    ``scenario`` and ``app`` may be preset names (:mod:`envs.presets`)."""
    if isinstance(scheduler, str):
        raise ConfigError(
            f"scheduler: expected a Scheduler instance, got the name {scheduler!r} "
            f"(baselines.make_scheduler({scheduler!r}) makes one)"
        )
    s = cast("dict[str, Any]", scenario) if normalised else normalise_scenario(scenario)
    emu = Emulation(seed)
    conn = emu.connect(s, scheduler, normalised=True)
    request_delay = min(p["rtt_ms"] for p in s["paths"]) / 2000
    application = make_app(app, request_delay)
    scheduler.reset(conn)
    application.start(conn)
    return emu, conn, application, s


def run_episode(
    scenario: Config, app: Config, scheduler: Scheduler, seed: int = 0
) -> EpisodeResult:
    """Emulate until the app completes or ``scenario.max_duration_s`` passes.
    The garbage collector is paused for the episode (:func:`envs.sim.collector_paused`)."""
    with collector_paused():
        # the emulation must be unreachable when the pause ends, hence the inner function
        return _run_episode(scenario, app, scheduler, seed)


def closing_metrics(
    emu: Emulation, conn: Connection, application: App, end: float
) -> dict[str, float]:
    """The episode's metrics (:func:`envs.metrics.episode_metrics`, ``end``: its last
    emulated time [s]), then the emulation closed (:meth:`envs.emulation.Emulation.close`)."""
    metrics = episode_metrics(conn, application, end)
    emu.close()
    return metrics


def _run_episode(scenario: Config, app: Config, scheduler: Scheduler, seed: int) -> EpisodeResult:
    emu, conn, application, s = setup_episode(scenario, app, scheduler, seed)
    end = emu.sim.run(until=s["max_duration_s"])
    oqs_t, oqs_bytes = conn.oqs_series()  # (copies: the result keeps them)
    result = EpisodeResult(
        metrics=episode_metrics(conn, application, end, oqs_bytes),
        object_times=application.object_times(),
        object_release_times=application.object_release_times(),
        timeseries={"oqs_t": oqs_t, "oqs_bytes": oqs_bytes},
        scenario=s,
        seed=int(seed),
    )
    emu.close()
    return result
