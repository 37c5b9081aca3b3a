"""The condition grid: cell counts, mixed-radix indices, boundaries, sampling, (de)serialisation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from envs.errors import ConfigError
from envs.scenario import LINKS, normalise_scenario
from metalearning.grid import ConditionGrid, PathCondition, conditions_of_scenario

GRID = ConditionGrid()


def test_paper_grid_counts_and_names():
    assert GRID.n_path_cells == 27 and GRID.n_cells == 729
    assert GRID.name(0) == "cell_000" and GRID.name(728) == "cell_728"
    names = GRID.names()
    assert len(set(names)) == 729 and names == [GRID.name(c) for c in range(729)]
    one = ConditionGrid(n_paths=1)
    assert one.n_cells == 27 and one.name(0) == "cell_00" and one.name(26) == "cell_26"
    three = ConditionGrid(n_paths=3)
    assert three.n_cells == 27**3 and three.name(5) == "cell_00005"


def test_cells_are_distinct_and_cover_the_paper_ranges():
    seen = {json.dumps(GRID.ranges(c)) for c in range(GRID.n_cells)}
    assert len(seen) == 729
    assert (
        GRID.ranges(0)
        == [{"loss": (0.0, 0.01), "rtt_ms": (0.0, 50.0), "dev_ratio": (0.0, 0.4)}] * 2
    )
    top = {"loss": (0.05, 1.0), "rtt_ms": (200.0, math.inf), "dev_ratio": (0.8, math.inf)}
    assert GRID.ranges(728) == [top, top]


def test_mixed_radix_index():
    for cell in range(GRID.n_cells):
        pcs = GRID.path_cells_of(cell)
        assert cell == pcs[0] * 27 + pcs[1]
        assert GRID.cell_of_path_cells(pcs) == cell
        for pc in pcs:
            i_loss, i_rtt, i_dev = GRID.range_indices(pc)
            assert pc == (i_loss * 3 + i_rtt) * 3 + i_dev
    # path 0 most significant; within a path loss, then RTT, then deviation
    assert GRID.path_cells_of(27) == (1, 0)
    assert GRID.range_indices(1) == (0, 0, 1) and GRID.range_indices(3) == (0, 1, 0)
    assert GRID.range_indices(9) == (1, 0, 0)


@pytest.mark.parametrize(
    "loss, rtt, std, want",
    [
        (0.0, 0.0, 0.0, (0, 0, 0)),
        (0.00999, 49.999, 0.0, (0, 0, 0)),
        (0.01, 50.0, 20.0, (1, 1, 1)),  # lower edges belong to the upper range
        (0.049999, 199.99, 39.99, (1, 1, 0)),
        (0.05, 200.0, 160.0, (2, 2, 2)),
        (1.0, 1e6, 1e7, (2, 2, 2)),  # loss 1.0 and values above the caps: top ranges
        (0.5, 10.0, 3.9999, (2, 0, 0)),
        (0.0, 10.0, 4.0, (0, 0, 1)),
        (0.0, 0.0, 1.0, (0, 0, 2)),  # a deviation around a zero mean is unbounded
    ],
)
def test_boundaries(loss, rtt, std, want):
    pc = GRID.path_cell(PathCondition(loss, rtt, std))
    assert GRID.range_indices(pc) == want


@pytest.mark.parametrize(
    "cond, msg",
    [
        (PathCondition(-0.01, 10.0, 1.0), "loss"),
        (PathCondition(float("nan"), 10.0, 1.0), "loss"),
        (PathCondition(1.5, 10.0, 1.0), "loss"),
        (PathCondition(0.0, -1.0, 1.0), "rtt_ms"),
        (PathCondition(0.0, float("nan"), 1.0), "rtt_ms"),
        (PathCondition(0.0, math.inf, 1.0), "rtt_ms"),
        (PathCondition(0.0, 10.0, -1.0), "rtt_std_ms"),
        (PathCondition(0.0, 10.0, float("nan")), "rtt_std_ms"),
    ],
)
def test_bad_conditions_are_one_line_errors(cond, msg):
    with pytest.raises(ConfigError, match=msg) as e:
        GRID.cell_index([cond, PathCondition(0.0, 10.0, 1.0)])
    assert "\n" not in str(e.value)


def test_bad_arguments():
    ok = PathCondition(0.0, 10.0, 1.0)
    with pytest.raises(ConfigError, match="2 paths"):
        GRID.cell_index([ok])
    with pytest.raises(ConfigError, match="2 paths"):
        GRID.cell_index(ok)
    for cell in (-1, 729, True, 1.5, "3"):
        with pytest.raises(ConfigError, match="cell"):
            GRID.name(cell)
        with pytest.raises(ConfigError, match="cell"):
            GRID.path_cells_of(cell)
    assert GRID.name(np.int64(7)) == "cell_007"
    for sub in (0, -1, True, (1, 2), "2", (1, 0, 1), 1.5):
        with pytest.raises(ConfigError, match="subranges"):
            ConditionGrid(subranges=sub)
    for caps in (
        {"loss": 0.05},
        {"loss": 1.0},
        {"rtt_ms": 100},
        {"dev_ratio": math.inf},
        {"jitter": 1},
        {"loss": "x"},
        [0.2],
    ):
        with pytest.raises(ConfigError, match="caps"):
            ConditionGrid(caps=caps)
    for links in ((), ("lte",), "4g"):
        with pytest.raises(ConfigError, match="links"):
            ConditionGrid(links=links)
    with pytest.raises(ConfigError, match="n_paths"):
        ConditionGrid(n_paths=0)
    with pytest.raises(ConfigError, match="minimum RTT"):
        ConditionGrid(subranges=(1, 50, 1))


def test_subranges():
    g = ConditionGrid(subranges=2)
    assert g.n_ranges == (6, 6, 6) and g.n_path_cells == 216 and g.n_cells == 216**2
    assert g.edges("rtt_ms") == (0.0, 25.0, 50.0, 125.0, 200.0, 400.0, math.inf)
    assert g.edges("dev_ratio") == (0.0, 0.2, 0.4, 0.6, 0.8, 1.15, math.inf)
    assert g.edges("loss") == (0.0, 0.005, 0.01, 0.03, 0.05, 0.125, 1.0)
    # above the cap still in the (open) last part
    assert g.range_indices(g.path_cell(PathCondition(0.9, 5000.0, 0.0))) == (5, 5, 0)
    mixed = ConditionGrid(n_paths=1, subranges=(2, 1, 3))
    assert mixed.n_ranges == (6, 3, 9) and mixed.n_path_cells == 162 and mixed.n_cells == 162
    assert len({json.dumps(mixed.ranges(c)) for c in range(mixed.n_cells)}) == 162


def test_every_sampled_task_maps_back_to_its_cell():
    rng = np.random.default_rng(0)
    base = {"cc": "olia", "max_duration_s": 30}
    for cell in range(GRID.n_cells):
        task = GRID.sample_task(cell, rng, base)
        conds = conditions_of_scenario(task)
        assert GRID.cell_index(conds) == cell
        for cond, p in zip(conds, task["paths"]):
            assert (
                0.0 <= cond.loss <= 0.20 and 1.0 <= cond.rtt_ms <= 600.0 and cond.dev_ratio <= 1.5
            )
            assert (
                p["link"] in GRID.links
                and p["bandwidth_mbps"] == LINKS[p["link"]]["bandwidth_mbps"]
            )
        assert task["cc"] == "olia" and task["max_duration_s"] == 30.0
        assert task["name"] == f"grid-{GRID.name(cell)}"
        assert normalise_scenario(task) == task


def test_subrange_tasks_map_back():
    for g in (ConditionGrid(n_paths=1, subranges=2), ConditionGrid(n_paths=1, subranges=(3, 1, 2))):
        rng = np.random.default_rng(1)
        for cell in range(g.n_cells):
            assert g.cell_index(conditions_of_scenario(g.sample_task(cell, rng))) == cell


class _EdgeRng:
    """A generator stand-in that draws one fixed uniform value (0 or just below 1)."""

    def __init__(self, u):
        self.u = u

    def random(self, shape):
        return np.full(shape, self.u)

    def integers(self, n, size):
        return np.zeros(size, np.int64)


@pytest.mark.parametrize("u", [0.0, float(np.nextafter(1.0, 0.0))])
def test_samples_on_the_range_edges_stay_in_the_cell(u):
    for g in (GRID, ConditionGrid(n_paths=1, subranges=3)):
        for cell in range(g.n_cells):
            conds = g.sample_conditions(cell, _EdgeRng(u))
            assert g.cell_index(conds) == cell
            assert g.cell_index(conditions_of_scenario(g.sample_task(cell, _EdgeRng(u)))) == cell
            assert all(c.rtt_ms >= 1.0 for c in conds)


def test_sampling_is_deterministic_for_an_rng_state():
    a = [GRID.sample_task(c, np.random.default_rng(7)) for c in (0, 300, 728)]
    b = [GRID.sample_task(c, np.random.default_rng(7)) for c in (0, 300, 728)]
    assert a == b
    rng = np.random.default_rng(7)
    assert GRID.sample_task(300, rng) != GRID.sample_task(300, rng)


def test_links_and_base_paths():
    g = ConditionGrid(links=("wlan",))
    task = g.sample_task(100, np.random.default_rng(0), {"paths": {"buffer_bdp": 2.0}})
    assert [p["link"] for p in task["paths"]] == ["wlan", "wlan"]
    assert all(p["bandwidth_mbps"] == 30.0 and p["buffer_bdp"] == 2.0 for p in task["paths"])
    task = g.sample_task(
        100, np.random.default_rng(0), {"paths": [{"cc": "cubic"}, {}], "name": "t"}
    )
    assert task["paths"][0]["cc"] == "cubic" and task["name"] == "t"
    with pytest.raises(ConfigError, match="set by the grid"):
        g.sample_task(0, np.random.default_rng(0), {"paths": {"loss": 0.1}})
    with pytest.raises(ConfigError, match="paths"):
        g.sample_task(0, np.random.default_rng(0), {"paths": [{}]})
    with pytest.raises(ConfigError, match="unknown key"):
        g.sample_task(0, np.random.default_rng(0), {"colour": "red"})


def test_bandwidth_range_tasks():
    g = ConditionGrid(bandwidth_mbps=(2, 800))
    rng = np.random.default_rng(3)
    bws = []
    for cell in range(0, g.n_cells, 7):
        task = g.sample_task(cell, rng)
        assert (
            g.cell_index(conditions_of_scenario(task)) == cell
        )  # the bandwidth does not move the cell
        assert all(p.get("link") is None for p in task["paths"])
        bws += [p["bandwidth_mbps"] for p in task["paths"]]
    assert 2.0 <= min(bws) and max(bws) <= 800.0
    logs = np.log(bws)  # log-uniform: about half the draws below the geometric midpoint
    assert 0.35 < np.mean(logs < np.log(40.0)) < 0.65 and max(bws) > 400 and min(bws) < 4
    assert (
        g != ConditionGrid() and ConditionGrid.from_dict(json.loads(json.dumps(g.to_dict()))) == g
    )
    for bad in ((0, 10), (10, 5), (1, math.inf), "fast", (1, 2, 3)):
        with pytest.raises(ConfigError, match="bandwidth_mbps"):
            ConditionGrid(bandwidth_mbps=bad)


def test_to_dict_round_trip():
    for g in (
        GRID,
        ConditionGrid(n_paths=1, subranges=(2, 1, 3), caps={"rtt_ms": 800}, links=("5g", "4g")),
    ):
        d = json.loads(json.dumps(g.to_dict()))
        back = ConditionGrid.from_dict(d)
        assert back == g and hash(back) == hash(g) and back.to_dict() == g.to_dict()
    assert ConditionGrid(subranges=2) != GRID and ConditionGrid(n_paths=1) != GRID
    assert ConditionGrid(caps={"loss": 0.3}) != GRID
    d = GRID.to_dict()
    d["edges"]["loss"][1] = 0.02
    with pytest.raises(ConfigError, match="edges"):
        ConditionGrid.from_dict(d)
    with pytest.raises(ConfigError, match="unknown key"):
        ConditionGrid.from_dict({**GRID.to_dict(), "extra": 1})
    with pytest.raises(ConfigError, match="version"):
        ConditionGrid.from_dict({**GRID.to_dict(), "version": 9})
    with pytest.raises(ConfigError, match="n_paths"):
        ConditionGrid.from_dict({"subranges": 1})
    assert ConditionGrid.from_dict({"n_paths": 2}) == GRID


def test_conditions_of_scenario():
    conds = conditions_of_scenario(
        {
            "paths": [
                {"link": "4g"},
                {"bandwidth_mbps": 10, "rtt_ms": 80, "rtt_std_ms": 40, "loss": 0.02},
            ]
        }
    )
    assert conds[0] == PathCondition(0.001, 29.2, 4.8)
    assert conds[1].dev_ratio == 0.5 and GRID.range_indices(GRID.path_cell(conds[1])) == (1, 1, 1)
    ge = {"p_gb": 0.01, "p_bg": 0.09, "loss_good": 0.0, "loss_bad": 0.5}
    (c,) = conditions_of_scenario(
        {"paths": [{"bandwidth_mbps": 10, "loss_model": "gilbert_elliott", "ge": ge}]}
    )
    assert c.loss == pytest.approx(0.05)


def test_bad_path_cells():
    for pc in (-1, 27, True, 2.0):
        with pytest.raises(ConfigError, match="path cell"):
            GRID.range_indices(pc)
        with pytest.raises(ConfigError, match="path cell"):
            GRID.cell_of_path_cells([0, pc])
    with pytest.raises(ConfigError, match="2 path cells"):
        GRID.cell_of_path_cells([0])
