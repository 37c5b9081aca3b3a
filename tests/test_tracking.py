"""MLflow tracking: run states, params/metrics/artifacts, store resolution, failed pipelines;
in the job's process and through the tracking process of a command line (falcon.tracking_worker)."""

from __future__ import annotations

import pytest
from conftest import mlflow_runs

from envs.errors import ConfigError
from falcon import tracking_worker
from falcon.tracking import (
    Tracker,
    TrackingError,
    default_artifact_location,
    flatten,
    resolve_uri,
    tracked_run,
)


@pytest.fixture(params=["in_process", "background"])
def mode(request, monkeypatch):
    """Track in this process, or through a tracking process started first, as
    ``falcon.cli.main`` does; yields the expected tracker class."""
    monkeypatch.delenv(tracking_worker.PREWARM_ENV, raising=False)
    if request.param == "background":
        tracking_worker.prewarm([])
        yield tracking_worker.BackgroundTracker
    else:
        yield Tracker
    while tracking_worker.take() is not None:  # an unused one (a test that failed early)
        pass


def test_resolve_uri_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert resolve_uri(None, tmp_path) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking.example:5000")
    assert resolve_uri(None, tmp_path) == "http://tracking.example:5000"
    assert resolve_uri("sqlite:////x/y.db", tmp_path) == "sqlite:////x/y.db"
    assert default_artifact_location("sqlite:////x/y.db") == "file:///x/mlartifacts"
    assert default_artifact_location("http://tracking.example:5000") is None


def test_flatten_config():
    flat = flatten({"a": {"b": 1, "c": None}, "paths": [{"x": 1}, {"x": 2}], "l": [1, 2], "e": {}})
    assert flat == {
        "a.b": "1",
        "a.c": "null",
        "paths.0.x": "1",
        "paths.1.x": "2",
        "l": "[1, 2]",
        "e": "{}",
    }


def test_run_finished_with_params_metrics_artifacts(tmp_path, mlflow_uri, mode):
    art = tmp_path / "art"
    art.mkdir()
    (art / "summary.json").write_text("{}")
    params = {f"p{i}": i for i in range(150)}  # more than one MLflow batch
    with tracked_run({"uri": mlflow_uri}, run_name="ok", tags={"falcon.job": "test"}) as tr:
        assert type(tr) is mode
        tr.log_params(params)
        tr.log_metrics({"minrtt/download_time_s_median": 0.5})
        tr.log_artifacts(art)
    client, runs = mlflow_runs(mlflow_uri)
    (run,) = runs
    assert run.info.status == "FINISHED" and run.info.run_name == "ok"
    assert run.data.params == {k: str(v) for k, v in params.items()}
    assert run.data.metrics == {"minrtt/download_time_s_median": 0.5}
    assert run.data.tags["falcon.job"] == "test"
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["summary.json"]
    # artifacts of the default SQLite store live next to it
    assert client.get_experiment_by_name("falcon").artifact_location.endswith("/mlartifacts")


@pytest.mark.parametrize(
    ("exc", "status"),
    [(RuntimeError("boom"), "FAILED"), (KeyboardInterrupt(), "KILLED"), (SystemExit(2), "FAILED")],
)
def test_run_marked_failed_on_exception(mlflow_uri, exc, status, mode):
    with pytest.raises(type(exc)):
        with tracked_run({"uri": mlflow_uri}, run_name="bad") as tr:
            assert type(tr) is mode
            raise exc
    _, runs = mlflow_runs(mlflow_uri)
    assert [r.info.status for r in runs] == [status]


def test_disabled_tracking_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with tracked_run({"enabled": False}, run_name="x") as tr:
        tr.log_metrics({"a": 1.0})
        assert tr.run_id is None
    assert not (tmp_path / "mlflow.db").exists()


def test_failing_pipeline_marks_run_failed_and_writes_nothing(
    tmp_path, mlflow_uri, compose, monkeypatch
):
    """An error in the middle of a run: MLflow run FAILED, no output folder, no staging left."""
    import falcon.experiment as experiment

    calls = []

    def failing_job(job):
        calls.append(job.index)
        if len(calls) == 3:
            raise ConfigError("paths[1]: synthetic failure in episode 3")
        return {"download_time_s": 1.0}

    monkeypatch.setattr(experiment, "run_episode_job", failing_job)
    out = tmp_path / "out"
    cfg = compose("evaluate", ["experiment=tiny", f"output={out}", f"tracking.uri={mlflow_uri}"])
    with pytest.raises(ConfigError, match="synthetic failure"):
        experiment.run_pipeline(cfg, "evaluate")
    assert calls == [0, 1, 2]
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
    _, runs = mlflow_runs(mlflow_uri)
    assert [r.info.status for r in runs] == ["FAILED"]


def test_the_tracking_process_ends_with_its_run(mlflow_uri):
    tracking_worker.prewarm([])
    with tracked_run({"uri": mlflow_uri}, run_name="ok") as tr:
        proc = tr._proc
    assert proc.wait(timeout=10) == 0


def test_a_bad_store_is_one_line_naming_it(mode):
    bad = "nosuchscheme://nowhere"
    with pytest.raises(TrackingError, match=r"^tracking store nosuchscheme://nowhere: \w+") as err:
        with tracked_run({"uri": bad}, run_name="bad") as tr:
            _ = tr.run_id
    assert "\n" not in str(err.value)


def test_no_tracking_process_when_the_command_line_turns_tracking_off(monkeypatch):
    assert tracking_worker.tracking_disabled_in(["runs=1", "tracking=none"])
    assert tracking_worker.tracking_disabled_in(["tracking.enabled=false"])
    assert not tracking_worker.tracking_disabled_in(["tracking.uri=sqlite:///x.db"])
    tracking_worker.prewarm(["tracking=none"])
    monkeypatch.setenv(tracking_worker.PREWARM_ENV, "0")
    tracking_worker.prewarm([])
    assert tracking_worker.take() is None
