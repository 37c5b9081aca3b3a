"""python -m falcon.deploy.fidelity on its quick config (configs/fidelity_quick.yaml:
two trace sets, 300 kB, 2 runs, in both worlds): the JSON it writes, the table
generated from it (the same text again from python -m falcon.deploy.fidelity_table),
and its one-line errors. Skipped, as tests/test_deploy.py, when the transport
binaries are absent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import skip_unless_transport

skip_unless_transport()

ROOT = Path(__file__).resolve().parent.parent


def _run(module: str, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    d = tmp_path_factory.mktemp("fidelity")
    res = _run(
        "falcon.deploy.fidelity",
        "--config-name",
        "fidelity_quick",
        f"output={d / 'out'}",
        f"table={d / 'fidelity.md'}",
    )
    assert res.returncode == 0, res.stderr
    return (
        d,
        json.loads((d / "out" / "fidelity.json").read_text()),
        (d / "fidelity.md").read_text(),
        res,
    )


def test_json_holds_both_worlds_per_set(quick):
    _, result, _, _ = quick
    assert result["job"] == "fidelity" and result["sizes_bytes"] == [300_000]
    assert [c["set"] for c in result["cells"]] == [
        "aydin_multipath_wifi_cellular",
        "mahimahi_cellular_lte",
    ]
    for cell in result["cells"]:
        assert cell["runs"] == 2 and cell["seeds"] == [0, 1] and cell["real_verified"] == 2
        assert cell["paired_runs"] == 2
        runs = cell["runs_detail"]
        # both trace starts are fixed (trace_start_s: 0): both worlds replay the trace from its start
        assert [r["trace_start_s"] for r in runs] == [0.0, 0.0]
        for r in runs:
            # 300 kB at 20-50 Mbit/s and 20-40 ms: at least 50 ms, at most a few s, in both worlds
            assert 0.05 < r["emulated_s"] < 5 and 0.05 < r["real_s"] < 5
            assert 0 < r["emulated_utilisation"] <= 0.96 and 0 < r["real_utilisation"] <= 0.96
            assert r["relay_late_p99_ms"] >= 0 and r["handshake_s"] > 0 and r["baseline_s"] > 0
        em = sorted(r["emulated_s"] for r in runs)
        rm = sorted(r["real_s"] for r in runs)
        assert cell["emulated_median_s"] == pytest.approx(sum(em) / 2)
        assert cell["real_median_s"] == pytest.approx(sum(rm) / 2)
        assert cell["emulated_over_real"] == pytest.approx(
            cell["emulated_median_s"] / cell["real_median_s"]
        )
        assert cell["within_10pct"] == (abs(cell["emulated_over_real"] - 1) <= 0.10)
        assert cell["buffer_packets"] >= 10 and cell["leaves_out"]
    assert result["baseline"] == {"hystart": False, "setup": {"handshake_link": False}}
    assert result["scenario"]["hystart"] is True and result["leaves_out_all"]


def test_table_is_generated_from_the_json(quick, tmp_path):
    d, result, table, res = quick
    for cell in result["cells"]:
        assert f"## {cell['set']}" in table
        row = next(
            line for line in table.splitlines() if line.startswith(f"| {cell['set']} | 300 kB |")
        )
        assert f"| {cell['emulated_median_s']:.3f} | {cell['real_median_s']:.3f} |" in row
        assert cell["leaves_out"] in table
    assert table == res.stdout  # the job prints what it wrote
    again = _run(
        "falcon.deploy.fidelity_table",
        str(d / "out" / "fidelity.json"),
        "--out",
        str(tmp_path / "t.md"),
    )
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "t.md").read_text() == table
    assert not list(d.glob(".fidelity.md.*")) and not list((d / "out").glob(".fidelity.json.*"))


def test_one_line_errors(tmp_path):
    res = _run(
        "falcon.deploy.fidelity",
        "--config-name",
        "fidelity_quick",
        "only=[nosuch]",
        f"output={tmp_path / 'out'}",
    )
    assert res.returncode == 2 and res.stderr.strip().splitlines()[-1].startswith(
        "error: only: unknown set 'nosuch'"
    )
    assert not (tmp_path / "out").exists()
    res = _run(
        "falcon.deploy.fidelity",
        "--config-name",
        "fidelity_quick",
        "runs_by_size.300000=0",
        f"output={tmp_path / 'out'}",
    )
    assert (
        res.returncode == 2
        and "runs_by_size.300000" in res.stderr
        and not (tmp_path / "out").exists()
    )
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"job": "deploy"}))
    res = _run("falcon.deploy.fidelity_table", str(bad))
    assert (
        res.returncode == 2
        and res.stderr.strip() == f'error: {bad}: not a fidelity.json (no "job": "fidelity")'
    )
