"""A minimal trainable agent for the falcon.train end-to-end test.

It follows the training contract of falcon.train (``envs.scheduler.Trainable``: ``fit``, and ``save``): it runs
real emulator episodes, learns the mean download time it saw, and schedules
like minRTT.
"""

from __future__ import annotations

import json
from pathlib import Path

import envs
from baselines.rule_based.minrtt import MinRTT
from envs.scheduler import Trainable


class StubLearner(MinRTT, Trainable):
    name = "stub"

    def __init__(self, tag: str = "stub") -> None:
        self.tag = tag
        self.learned: dict | None = None

    def fit(
        self,
        scenario: dict,
        app: dict,
        seed: int,
        episodes: int = 1,
        log=None,
        progress: bool = True,
    ) -> dict:
        times = []
        for i in range(episodes):
            res = envs.run_episode(scenario, app, MinRTT(), seed + i)
            times.append(res.metrics["download_time_s"])
            if log is not None:
                log({"download_time_s": times[-1]}, step=i)
        self.learned = {"episodes": episodes, "mean_download_time_s": sum(times) / len(times)}
        return dict(self.learned)

    def save(self, directory: Path) -> None:
        (Path(directory) / "model.json").write_text(
            json.dumps({"tag": self.tag, **(self.learned or {})})
        )
