"""Real services on loopback: an MLflow tracking server, and a Ray cluster
started with ``ray start --head``; the entry points use them through
``tracking.uri`` and ``runtime.address`` as a user would. Each test starts its
service in its own process group and stops it, whatever happens.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    """Terminate a service's whole process group (it forks workers)."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def kill_matching(pattern: str) -> None:
    """SIGTERM, then SIGKILL, every process whose command line contains ``pattern``."""

    def matching() -> list[int]:
        pids = []
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit() and int(proc.name) != os.getpid():
                try:
                    if pattern in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                        errors="replace"
                    ):
                        pids.append(int(proc.name))
                except OSError:
                    continue
        return pids

    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = matching()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while pids and time.monotonic() < deadline and matching():
            time.sleep(0.2)


def wait_until(check, timeout_s: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    pytest.fail(f"{what} did not come up in {timeout_s:.0f} s; its log:\n{log.read_text()[-3000:]}")


@pytest.fixture
def mlflow_server(tmp_path):
    exe = BIN / "mlflow"
    if not exe.exists():
        pytest.skip("no mlflow executable next to this interpreter")
    port = free_port()
    log = tmp_path / "mlflow-server.log"
    cmd = [
        str(exe),
        "server",
        "--backend-store-uri",
        f"sqlite:///{tmp_path / 'server.db'}",
        "--artifacts-destination",
        str(tmp_path / "server-artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"mlflow server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_until(healthy, 120, "mlflow server", log)
        yield url
    finally:
        stop(proc)


def test_runs_metrics_and_artifacts_reach_an_mlflow_server(mlflow_server, run_cli, tmp_path):
    from mlflow.tracking import MlflowClient

    res = run_cli(
        "evaluate",
        "experiment=tiny",
        "agent_list=[minrtt,ecf]",
        "runs=2",
        f"tracking.uri={mlflow_server}",
        "output=out",
    )
    assert res.returncode == 0, res.stderr[-2000:]
    client = MlflowClient(mlflow_server)
    exp = client.get_experiment_by_name("falcon")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["mlflow_run_id"] == run.info.run_id
    assert run.data.params["runs"] == "2"
    timing = [k for k in run.data.metrics if "download_time_s" in k and k.endswith("median")]
    assert timing, sorted(run.data.metrics)[:20]
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"summary.json", "table.txt", "config.yaml"} <= arts
    local = client.download_artifacts(run.info.run_id, "summary.json", str(tmp_path))
    assert json.loads(Path(local).read_text())["mlflow_run_id"] == run.info.run_id


@pytest.fixture
def ray_cluster(tmp_path, monkeypatch):
    """A one-node cluster with token authentication (Ray's default for local
    clusters since 2.59): drivers find the token in RAY_AUTH_TOKEN."""
    exe = BIN / "ray"
    if not exe.exists() or not Path("/proc").is_dir():
        pytest.skip("needs the ray executable next to this interpreter and /proc (Linux)")
    port = free_port()
    log = tmp_path / "ray-start.log"
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    env = dict(os.environ)
    # a short temp dir: Ray's socket paths must stay under the OS limit (107 bytes)
    ray_tmp = Path(f"/tmp/ray-falcon-{port}")
    cmd = [
        str(exe),
        "start",
        "--head",
        "--node-ip-address",
        "127.0.0.1",
        "--port",
        str(port),
        "--num-cpus",
        "2",
        "--include-dashboard",
        "false",
        "--disable-usage-stats",
        "--temp-dir",
        str(ray_tmp),
    ]
    with open(log, "w") as out:
        res = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=180)
    try:
        if res.returncode != 0:
            pytest.fail(f"ray start failed:\n{log.read_text()[-3000:]}")
        yield f"127.0.0.1:{port}"
    finally:
        kill_matching(
            str(ray_tmp)
        )  # this cluster only: `ray stop` would stop every Ray on the machine
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_a_ray_cluster_runs_a_bank_build_and_an_evaluation_like_the_local_runtime(
    ray_cluster, run_cli, tmp_path
):
    bank = [
        "experiment=build_bank",
        "bank=quick",
        "bank.grid.n_paths=1",
        "bank.hidden=[8,8,8]",
        "bank.reptile.meta_iterations=2",
        "bank.reptile.decisions_per_task=24",
        "bank.reptile.inner_steps=2",
        "bank.reptile.task_size_bytes=60000",
        "bank.chunk_size=9",
        "bank.generalist=null",
        "tracking=none",
    ]
    for name, runtime in (
        ("ray", ["runtime=ray", f"runtime.address={ray_cluster}"]),
        ("local", ["runtime.workers=1"]),
    ):
        res = run_cli("train", *bank, f"bank.path={tmp_path / name}.h5", *runtime, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
    from metalearning.bank import MetaModelBank

    ray_bank, local_bank = (
        MetaModelBank.read(tmp_path / "ray.h5"),
        MetaModelBank.read(tmp_path / "local.h5"),
    )
    assert ray_bank.meta["runtime"] == "ray" and (ray_bank.params == local_bank.params).all()

    evaluate = ["experiment=tiny", "agent_list=[minrtt,blest]", "runs=3", "tracking=none"]
    res = run_cli(
        "evaluate",
        *evaluate,
        "runtime=ray",
        f"runtime.address={ray_cluster}",
        "output=ray_eval",
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    res = run_cli("evaluate", *evaluate, "output=local_eval")
    assert res.returncode == 0, res.stderr[-2000:]
    ray_summary = json.loads((tmp_path / "ray_eval" / "summary.json").read_text())
    local_summary = json.loads((tmp_path / "local_eval" / "summary.json").read_text())
    assert ray_summary["results"] == local_summary["results"]
