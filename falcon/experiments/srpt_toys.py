"""The SRPT-ECF paper's toy schedules (Figs. 3, 5, 6, 8), computed by the exact fluid model.

    python -m falcon.train experiment=srpt_toys

The paths are the paper's: path 0 at 200 KB/s with 5 ms latency, path 1 at
500 KB/s with 10 ms (``srpt_toys.paths``: ``[rate B/ms, latency ms]``).
Each schedule comes from :mod:`baselines.stream_aware.fluid`; times are
exact fractions of a millisecond, written as floats:

* ``fig3``: ECF for one 10 KB stream: its completion time and the date
  path 1 stops (the switch to the low-latency path only);
* ``fig5``: SRPT-ECF for streams of 900 and 800 B, completion sequence;
* ``fig6``: SA-ECF (150-byte quantum, equal weights) on the same streams;
* ``fig8``: the offline algorithm against online SRPT-ECF on one big stream
  pre-empted by two later small ones (``srpt_toys.fig8_streams``, ``[size B,
  release ms]``; the paper does not state its sizes, so these are ours),
  and the big stream's gain.

Outputs: ``srpt_toys.json``, ``srpt_toys.txt``, ``srpt_toys.png`` (the
sending intervals of each schedule, one row per path).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from envs.errors import ConfigError
from falcon.experiments.common import format_table, job_config, publish, run_tracked


def _paths(sec: Mapping) -> list[tuple[float, float]]:
    paths = sec.get("paths")
    if (
        not isinstance(paths, list)
        or len(paths) < 2
        or not all(isinstance(p, list | tuple) and len(p) == 2 for p in paths)
    ):
        raise ConfigError(
            "srpt_toys.paths: expected a list of at least two [rate B/ms, latency ms] pairs"
        )
    return [(float(r), float(d)) for r, d in paths]


def _schedule(res) -> list[dict]:
    return [
        {"path": s.path, "stream": s.stream, "t0_ms": float(s.t0), "t1_ms": float(s.t1)}
        for s in res.segments
    ]


def run_toys(sec: Mapping) -> dict:
    """The four toy schedules (see the module docstring); times in ms."""
    from baselines.stream_aware.fluid import (
        ecf_single,
        ecf_switch_times,
        offline_oracle,
        sa_ecf,
        srpt_ecf,
    )

    paths = _paths(sec)
    t0 = time.perf_counter()
    single = ecf_single(int(sec["fig3_bytes"]), paths)
    stops = ecf_switch_times(int(sec["fig3_bytes"]), paths)
    pair = [int(s) for s in sec["pair_bytes"]]
    srpt = srpt_ecf(pair, paths)
    rr = sa_ecf(pair, paths, quantum=int(sec["quantum_bytes"]))
    streams = [(int(s), float(r)) for s, r in sec["fig8_streams"]]
    online = srpt_ecf(streams, paths)
    best = offline_oracle(streams, paths, "mean")
    gain = 1.0 - float(best.completion[0]) / float(online.completion[0])
    return {
        "job": "srpt_toys",
        "settings": dict(sec),
        "fig3": {
            "completion_ms": single.floats()[0],
            "switch_ms": float(max(stops[1:])),
            "stop_ms": [float(s) for s in stops],
            "schedule": _schedule(single),
        },
        "fig5": {
            "completion_ms": [float(c) for c in srpt.sorted_completion()],
            "schedule": _schedule(srpt),
        },
        "fig6": {
            "completion_ms": [float(c) for c in rr.sorted_completion()],
            "completion_ms_1dp": [round(float(c), 1) for c in rr.sorted_completion()],
            "schedule": _schedule(rr),
        },
        "fig8": {
            "streams": [list(s) for s in streams],
            "online_ms": online.floats(),
            "offline_ms": best.floats(),
            "offline_order": list(best.order or ()),
            "stream0_gain_pct": 100.0 * gain,
            "schedule_online": _schedule(online),
            "schedule_offline": _schedule(best),
        },
        "wall_s": time.perf_counter() - t0,
    }


def table(res: Mapping) -> str:
    rows = [
        [
            "Fig. 3 ECF, 10 KB",
            f"{res['fig3']['completion_ms']:.3f}",
            f"path 1 stops at {res['fig3']['switch_ms']:.2f} ms",
        ],
        ["Fig. 5 SRPT-ECF", ", ".join(f"{c:g}" for c in res["fig5"]["completion_ms"]), ""],
        [
            "Fig. 6 SA-ECF",
            ", ".join(f"{c:g}" for c in res["fig6"]["completion_ms"]),
            "one decimal: " + ", ".join(f"{c:g}" for c in res["fig6"]["completion_ms_1dp"]),
        ],
        [
            "Fig. 8 online / offline",
            ", ".join(f"{c:.2f}" for c in res["fig8"]["online_ms"])
            + " / "
            + ", ".join(f"{c:.2f}" for c in res["fig8"]["offline_ms"]),
            f"stream 0 gains {res['fig8']['stream0_gain_pct']:.1f} %",
        ],
    ]
    return format_table(["schedule", "completion times [ms]", "note"], rows) + "\n"


def plot(res: Mapping, path: Path) -> Path:
    """One panel per schedule: each path's sending intervals, coloured by stream."""
    from baselines.mpl import use_agg

    use_agg()
    import matplotlib.pyplot as plt

    from falcon import report

    panels = [
        ("Fig. 3: ECF, one 10 KB stream", res["fig3"]["schedule"]),
        ("Fig. 5: SRPT-ECF, 900 B + 800 B", res["fig5"]["schedule"]),
        ("Fig. 6: SA-ECF, 900 B + 800 B", res["fig6"]["schedule"]),
        ("Fig. 8: online SRPT-ECF", res["fig8"]["schedule_online"]),
        ("Fig. 8: offline (anticipating)", res["fig8"]["schedule_offline"]),
    ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.0, 1.45 * len(panels)), sharex=True)
    for ax, (title, segs) in zip(axes, panels):
        for s in segs:
            ax.barh(
                s["path"],
                s["t1_ms"] - s["t0_ms"],
                left=s["t0_ms"],
                height=0.6,
                color=f"C{s['stream']}",
                edgecolor="black",
                linewidth=0.5,
            )
        ax.set_yticks(sorted({s["path"] for s in segs} | {0, 1}))
        ax.set_yticklabels([f"path {p}" for p in sorted({s["path"] for s in segs} | {0, 1})])
        ax.set_title(title, fontsize=9)
    axes[-1].set_xlabel("sending time [ms] (colour: stream 0, 1, 2)")
    fig.tight_layout()
    return report.save_figure(fig, path, tight=False)


def run_job(cfg) -> dict:
    cfg, sec = job_config(cfg, "srpt_toys")

    def body(tracker, folder):
        return publish(tracker, folder, "srpt_toys", run_toys(sec), table, plot)

    return run_tracked(cfg, "srpt_toys", {"srpt_toys": sec}, body)


__all__ = ["run_toys", "run_job", "table", "plot"]
