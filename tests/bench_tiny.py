"""A benchmark of seconds for the falcon.bench tests: two validation
conditions (one on synthetic paths, one on a validation trace file), 100 kB
downloads, three seeds, two rules, three fixed shares and one oracle family
member group."""

from __future__ import annotations

from pathlib import Path

from baselines.rule_based.fixed_split import FixedSplit

TRACE = "aydin_multipath_wifi_cellular/8_2_wifi.csv"
CONDITIONS = (
    "bench.conditions={validation: ["
    "{name: fast_slow, scenario: {paths: [{bandwidth_mbps: 3, rtt_ms: 20, rtt_std_ms: 5}, "
    "{bandwidth_mbps: 30, rtt_ms: 90, rtt_std_ms: 20}]}}, "
    f"{{name: wifi_lte, scenario: {{paths: [{{trace: {TRACE}, trace_start_s: random, rtt_ms: 20, "
    "rtt_std_ms: 6}, {bandwidth_mbps: 8, rtt_ms: 60, rtt_std_ms: 15, loss: 0.01}]}}]}"
)
OVERRIDES = [
    CONDITIONS,
    "bench.splits=[validation]",
    "bench.runs=3",
    "bench.rules=[minrtt,rr]",
    "bench.fixed_split_shares=[0.0,0.5,1.0]",
    "bench.oracle={thresholds: [null], reinject: [true]}",
    "bench.bulk_size_bytes=200000",
    "progress=false",
    "runtime.workers=1",
]


def compose_tiny(compose, *extra: str):
    """The tiny benchmark's composed config with ``extra`` overrides."""
    return compose("bench", [*OVERRIDES, *extra])


def run_tiny(compose, out: Path, agents: str, *extra: str) -> Path:
    """Run the tiny benchmark on ``agents`` (``"[a,b]"``) untracked into ``out``; its results file."""
    from falcon.bench.run import run_job

    run_job(compose_tiny(compose, f"agent_list={agents}", "tracking=none", f"output={out}", *extra))
    return out / "bench.json"


class ThirtySeventy(FixedSplit):
    """A scheduler from outside the project's packages (``agent_list=[bench_tiny:ThirtySeventy]``):
    30 % of the packets on path 0, 70 % on path 1."""

    name = "thirty_seventy"

    def __init__(self, share: float = 0.3) -> None:
        super().__init__(share=share)
