"""Local and Ray fan-out: same jobs, same seeds -> identical results, in job order."""

from __future__ import annotations

import pytest

from envs.errors import ConfigError
from falcon.config import make_plan
from falcon.experiment import execute, make_jobs
from falcon.jobs import run_episode_job
from falcon.runtime import run_jobs

CHOICES = {"scenario": "static_4g_5g", "app": "bulk", "agent": "minrtt"}


@pytest.fixture
def tiny_plan(compose):
    """2 schedulers x 2 seeds on static 4G+5G, 300 kB file."""
    cfg = compose(
        "evaluate", ["experiment=tiny", "agent_list=[minrtt,blest]", "app.size_bytes=300000"]
    )
    return make_plan(cfg, choices=CHOICES, cli_keys=set())


def test_make_jobs_covers_the_product_in_order(tiny_plan):
    jobs = make_jobs(tiny_plan)
    assert [j.index for j in jobs] == list(range(4))
    assert [(j.agent_name, j.seed) for j in jobs] == [
        ("minrtt", 0),
        ("minrtt", 1),
        ("blest", 0),
        ("blest", 1),
    ]


def test_local_runs_are_reproducible(tiny_plan):
    a = execute(tiny_plan, {"name": "local"}, progress=False)
    b = execute(tiny_plan, {"name": "local"}, progress=False)
    assert a == b
    assert [(r["agent"], r["seed"]) for r in a] == [
        ("minrtt", 0),
        ("minrtt", 1),
        ("blest", 0),
        ("blest", 1),
    ]
    # different seeds give different episodes (the comparison is not trivially equal)
    assert a[0]["metrics"] != a[1]["metrics"]


def test_process_pool_equals_inline(tiny_plan):
    jobs = make_jobs(tiny_plan)
    inline = run_jobs(jobs, run_episode_job, {"name": "local", "workers": 1}, progress=False)
    pooled = run_jobs(jobs, run_episode_job, {"name": "local", "workers": 2}, progress=False)
    assert pooled == inline


def test_ray_equals_local(tiny_plan):
    pytest.importorskip("ray")
    jobs = make_jobs(tiny_plan)
    local = run_jobs(jobs, run_episode_job, {"name": "local"}, progress=False)
    ray_results = run_jobs(
        jobs, run_episode_job, {"name": "ray", "address": None, "num_cpus": 2}, progress=False
    )
    assert ray_results == local  # bit for bit, in job order


def test_worker_input_error_propagates(tiny_plan):
    jobs = make_jobs(tiny_plan)
    bad = jobs[1].__class__(
        **{**jobs[1].__dict__, "scenario": {**jobs[1].scenario, "cc": "nosuch"}}
    )
    with pytest.raises(ConfigError):
        run_jobs([jobs[0], bad], run_episode_job, {"name": "local"}, progress=False)


def test_a_failing_job_ends_the_pool_without_waiting_for_the_others():
    """One job fails at once while the other would run a minute: the error
    arrives after the failure, not after the long job (its worker is ended)."""
    import time

    t0 = time.monotonic()
    with pytest.raises(TypeError):
        run_jobs([60.0, "not a duration"], time.sleep, {"name": "local", "workers": 2})
    assert time.monotonic() - t0 < 30.0


def test_a_pool_keeps_job_order_over_many_more_jobs_than_it_holds_at_once():
    jobs = list(range(-50, 50))
    assert run_jobs(jobs, abs, {"name": "local", "workers": 2}, progress=False) == [
        abs(j) for j in jobs
    ]


def test_unknown_runtime_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown runtime 'slurm'"):
        run_jobs([], run_episode_job, {"name": "slurm"})


@pytest.mark.parametrize("tty", [True, False])
def test_progress_bar_only_on_a_terminal(monkeypatch, tty):
    import io
    import sys

    class Err(io.StringIO):
        def isatty(self):
            return tty

    err = Err()
    monkeypatch.setattr(sys, "stderr", err)
    assert run_jobs([3, -4], abs, {"name": "local"}, progress=True, desc="episodes") == [3, 4]
    assert ("episodes: 100%" in err.getvalue()) is tty


@pytest.mark.parametrize("workers", [1, 2])
def test_on_result_is_called_once_per_job_as_it_arrives(workers):
    seen = []
    out = run_jobs(
        [3, -4, 5, -6],
        abs,
        {"name": "local", "workers": workers},
        progress=False,
        on_result=lambda i, r: seen.append((i, r)),
    )
    assert out == [3, 4, 5, 6]
    assert sorted(seen) == [(0, 3), (1, 4), (2, 5), (3, 6)]


def test_progress_off_a_terminal_is_a_plain_line_now_and_then():
    """A log file or CI gets ``desc: done/total (percent) [s]`` lines (every
    LOG_EVERY_S seconds), not tqdm's carriage returns nor silence."""
    import io

    from falcon.runtime import LineProgress, _progress

    buf = io.StringIO()
    with LineProgress(4, "episodes", every_s=0.0, file=buf) as bar:
        for _ in range(4):
            bar.update(1)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("episodes: 1/4 (25 %) [") and lines[3].startswith(
        "episodes: 4/4 (100 %)"
    )
    quiet = io.StringIO()
    with LineProgress(4, "episodes", every_s=3600.0, file=quiet) as bar:
        bar.update(4)
    assert quiet.getvalue() == ""  # a short job says nothing
    assert isinstance(_progress(5, True, "x"), LineProgress)  # pytest's stderr is not a terminal
    assert not isinstance(_progress(5, False, "x"), LineProgress)
