"""One colour per scheduler in every plot (baselines/palette.py): the palette
covers every agent config, and the plots take their colours from it (the
evaluate report's CDF and box plot alike, the experiments' figures).

The schedulers drawn here are chosen so that matplotlib's default colour
cycle (C0, C1, ...) differs from their palette colours: a plot that ignored
the palette would fail."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.colors import to_rgba

from baselines import palette
from falcon import report

REPO = Path(__file__).resolve().parent.parent

#: none of these has a palette colour equal to C0, C1 or C2 (their defaults here)
NAMES = ("falcon", "gaps", "hybrid")


@pytest.fixture
def figures(monkeypatch):
    """Capture the figures the plots save (``falcon.report.save_figure``)
    instead of writing them."""
    import matplotlib.pyplot as plt

    captured = []

    def save(fig, path, dpi=120, tight=True):
        captured.append(fig)
        return Path(path)

    monkeypatch.setattr(report, "save_figure", save)
    yield captured
    for fig in captured:
        plt.close(fig)


def _rgb(c) -> tuple:
    return to_rgba(c)[:3]


def test_every_agent_config_has_a_distinct_colour():
    agents = sorted(p.stem for p in (REPO / "configs" / "agent").glob("*.yaml"))
    assert agents
    assert [a for a in agents if a not in palette.COLORS] == []
    rgb = [_rgb(c) for c in palette.COLORS.values()]
    assert len(set(rgb)) == len(rgb)
    assert palette.colors(agents) == [palette.color(a) for a in agents]
    # a name not listed: a fixed colour, whatever its position
    assert palette.color("not_a_scheduler") == palette.color("not_a_scheduler")


def test_plot_metric_cdf_and_box_use_the_palette(tmp_path, figures):
    default = [_rgb(f"C{i}") for i in range(len(NAMES))]
    assert all(_rgb(palette.color(n)) != d for n, d in zip(NAMES, default))
    records = [
        {
            "scenario": "s",
            "app": "bulk",
            "agent": n,
            "seed": seed,
            "metrics": {"download_time_s": 1.0 + k + 0.5 * seed},
        }
        for k, n in enumerate(NAMES)
        for seed in range(3)
    ]
    paths = report.plot_metric(
        report.summarize(records, seeds=[0, 1, 2]), "download_time_s", tmp_path
    )
    assert [p.name for p in paths] == ["download_time_s__s__bulk.png"]
    [fig] = figures
    ax_cdf, ax_box = fig.axes
    lines = {ln.get_label().split(" ")[0]: _rgb(ln.get_color()) for ln in ax_cdf.get_lines()}
    assert list(lines) == list(NAMES)
    boxes = [p for p in ax_box.patches]
    assert len(boxes) == len(NAMES)
    ticks = [t.get_text() for t in ax_box.get_xticklabels()]
    assert ticks == list(NAMES)
    for name, box in zip(ticks, boxes):
        assert _rgb(box.get_facecolor()) == lines[name] == _rgb(palette.color(name))


def test_hybrid_plot_uses_the_palette(tmp_path, figures):
    from falcon.experiments import hybrid_report

    names = ["lia", "cubic", "hybrid"]
    series = {"t_s": [0.0, 1.0], "total_mbps": [1.0, 2.0], "straggler_mbps": [0.5, 1.0]}
    cell = {
        n: {"iteration_time_mean_s": 1.0 + i, "unfairness_std": 0.1 * i, "series": series}
        for i, n in enumerate(names)
    }
    res = {
        "settings": {"schedulers": names},
        "summary": {
            "settings": {
                "exp1": {"time_varying": cell},
                "exp23": {"bsp_20mbps": cell, "ssp_20mbps": cell},
                "exp6": {"stragglers_0": cell, "stragglers_1": cell},
            },
            "training": {"hybrid": {"curves": [[0.1, 0.2, 0.3]]}},
        },
    }
    hybrid_report.plot(res, tmp_path / "hybrid.png")
    main, throughput, training = figures
    for ax in main.axes + throughput.axes:
        assert ax.get_lines()
        for ln in ax.get_lines():
            name = ln.get_label().split(" ")[0]
            assert _rgb(ln.get_color()) == _rgb(palette.color(name)), (ln.get_label(), name)
    [curve] = training.axes[0].get_lines()
    assert _rgb(curve.get_color()) == _rgb(palette.color("hybrid"))


def test_gaps_bars_use_the_palette(tmp_path, figures):
    import matplotlib.pyplot as plt

    from falcon.experiments import gaps_report

    names = ["gaps", "falcon", "blest_gap"]
    summary = {
        "default": {n: {"oqs_mean_kb": 1.0 + i, "oqs_p99_kb": 2.0 + i} for i, n in enumerate(names)}
    }
    gaps_report._plot_bars({"summary": summary}, tmp_path / "bars.png", plt)
    [fig] = figures
    for ax in fig.axes:
        assert [_rgb(p.get_facecolor()) for p in ax.patches] == [
            _rgb(c) for c in palette.colors(names)
        ]


def test_stream_aware_figures_use_the_palette():
    import matplotlib.pyplot as plt

    from baselines.stream_aware.plots import plot_active_streams, plot_completion_cdf

    names = ["sa_ecf", "fcfs_minrtt", "srpt_ecf"]
    times = {n: [0.1 * (i + 1), 0.2 * (i + 1), 0.4] for i, n in enumerate(names)}
    fig = plot_completion_cdf(times, fluid={"sa_ecf": [0.1, 0.3]})
    try:
        for ln in fig.axes[0].get_lines():
            name = ln.get_label().split(" ")[0]
            assert _rgb(ln.get_color()) == _rgb(palette.color(name)), ln.get_label()
    finally:
        plt.close(fig)
    fig = plot_active_streams({n: [([0.0, 0.1], [0.2, 0.3 + i])] for i, n in enumerate(names)})
    try:
        assert [_rgb(ln.get_color()) for ln in fig.axes[0].get_lines()] == [
            _rgb(c) for c in palette.colors(names)
        ]
    finally:
        plt.close(fig)


def test_metric_axes_carry_units():
    from falcon.report import axis_label

    assert axis_label("download_time_s") == "download time [s]"
    assert axis_label("goodput_mbps") == "goodput [Mbit/s]"
    assert axis_label("oqs_p99_bytes") == "oqs p99 [bytes]"
    assert axis_label("retransmissions") == "retransmissions"
