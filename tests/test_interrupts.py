"""SIGTERM or SIGINT mid-run: python -m falcon.evaluate exits (143 / 130) and
leaves no staging folder (``.output.tmp-*``) and no output behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: long enough to be running when the signal comes (about 30 s on one core)
ARGS = ["experiment=tiny", "runs=5000", "tracking=none", "progress=false"]


def _env() -> dict:
    e = {k: v for k, v in os.environ.items() if k != "FALCON_DEBUG"}
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), e.get("PYTHONPATH", "")])
    return e


def _wait_for(pattern: str, root: Path, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    t_end = time.monotonic() + timeout_s
    while not list(root.glob(pattern)):
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < t_end, f"no {pattern} after {timeout_s} s"
        time.sleep(0.05)


@pytest.mark.parametrize(
    "sig, code, extra",
    [
        (signal.SIGTERM, 143, []),
        (signal.SIGINT, 130, []),
        (signal.SIGTERM, 143, ["runtime.workers=2"]),
    ],
    ids=["sigterm", "sigint", "sigterm-pool"],
)
def test_a_signal_mid_run_leaves_no_temporaries(tmp_path, sig, code, extra):
    proc = subprocess.Popen(
        [sys.executable, "-m", "falcon.evaluate", *ARGS, *extra],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a shell's background job (nohup make test &) ignores SIGINT, and a child inherits that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        _wait_for("results/evaluate/.output.tmp-*", tmp_path, proc)
        time.sleep(0.5)  # episodes running
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err[-2000:]
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert left == ["results", "results/evaluate"], left
    assert ("terminated" if sig == signal.SIGTERM else "interrupted") in err
