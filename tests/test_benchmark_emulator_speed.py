"""The emulator benchmark's short-episode workload (benchmarks/emulator_speed.py)."""

from __future__ import annotations


def test_short_episodes_time_one_packet_downloads_of_consecutive_seeds():
    """``short_episodes`` runs ``SHORT_PER_EPISODE`` one-packet minRTT downloads per
    ``--episodes``, seeds 0, 1, ...; its checksum is their download times' sum."""
    from baselines import make_scheduler
    from benchmarks.emulator_speed import SCENARIO, SHORT_PER_EPISODE, SHORT_SIZE, _short_episodes
    from envs.runner import run_episode

    out = _short_episodes(1)
    assert out["unit"] == "episodes" and out["count"] == SHORT_PER_EPISODE
    assert out["per_cpu_s"] > 0
    app = {"kind": "bulk", "size_bytes": SHORT_SIZE}
    want = 0.0
    for seed in range(SHORT_PER_EPISODE):
        r = run_episode(SCENARIO, app, make_scheduler("minrtt"), seed)
        assert r.metrics["packets_sent"] == 1  # one packet: the episode is its fixed cost
        want += r.metrics["download_time_s"]
    assert out["checksum"] == want
