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


def _checkout_head() -> str:
    import pytest

    from falcon.reproduce.runs import code_state

    head = code_state()["commit"]
    if head == "unknown":
        pytest.skip("not a git checkout: --against needs the repository's history")
    return head


def test_against_a_revision_times_its_tree_turn_about_with_this_one(monkeypatch, tmp_path, capsys):
    """``--against HEAD``: HEAD's tracked files unpacked under the FALCON cache and run
    in every repeat beside this tree (each child imports the tree it is meant to: the
    benchmark checks the source of ``envs``), with the ratio and the checksums'
    agreement reported. ``FALCON_PURE_PYTHON=1`` at build time: no compiling, so the
    revision runs its ``.py`` core (and the report says so)."""
    import json

    from benchmarks.emulator_speed import main
    from benchmarks.revision_tree import MARKER

    head = _checkout_head()
    monkeypatch.setenv("FALCON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FALCON_PURE_PYTHON", "1")
    argv = ["--against", "HEAD", "--workloads", "short_episodes", "--episodes", "1"]
    assert main([*argv, "--repeats", "2"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["previous"]["commit"] == head and report["tree"]["commit"] == head
    trees = tmp_path / "revision-trees"
    assert [p.name for p in trees.iterdir()] == [head]  # no temporary folder left
    assert (trees / head / MARKER).is_file() and (trees / head / "envs" / "sim.py").is_file()
    entry = report["results"]["short_episodes"]
    assert entry["median_episodes_per_cpu_s"]["previous"] > 0
    assert len(entry["vs_previous"]) == 2 and entry["vs_previous_median"] > 0
    assert entry["identical_to_previous"] is True  # the same downloads, whatever the core
    assert entry["previous_core"] == "python"
    assert "runs its pure-Python core" in captured.err


def test_against_an_unknown_revision_is_a_one_line_error(monkeypatch, tmp_path, capsys):
    from benchmarks.emulator_speed import main

    _checkout_head()
    monkeypatch.setenv("FALCON_CACHE_DIR", str(tmp_path))
    assert main(["--against", "no-such-revision", "--workloads", "short_episodes"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no-such-revision" in err[0] and "no such commit" in err[0]
    assert not any(tmp_path.iterdir())


def test_a_revision_tree_whose_build_fails_leaves_nothing(tmp_path):
    import sys

    import pytest

    from benchmarks.revision_tree import RevisionTreeError, prepared_tree

    _checkout_head()
    fail = [sys.executable, "-c", "import sys; sys.exit('error: no C compiler here')"]
    with pytest.raises(
        RevisionTreeError, match="building its core failed: error: no C compiler here"
    ):
        prepared_tree("HEAD", cache=tmp_path, build=fail)
    assert not any(tmp_path.iterdir())


def test_a_built_revision_tree_is_kept_without_build_files_and_reused(tmp_path):
    import io
    import sys

    from benchmarks.revision_tree import prepared_tree

    head = _checkout_head()
    log = io.StringIO()
    # a stand-in build that leaves what setup.py's does: build/ and a generated C file
    build = (
        "import pathlib as p; p.Path('build/t').mkdir(parents=True); p.Path('envs/sim.c').touch()"
    )
    tree, commit = prepared_tree(
        "HEAD", cache=tmp_path, build=[sys.executable, "-c", build], log=log
    )
    assert commit == head and tree == tmp_path / head and "unpacking" in log.getvalue()
    assert not (tree / "build").exists() and not (tree / "envs" / "sim.c").exists()
    assert (tree / "envs" / "sim.py").is_file() and (tree / "envs" / "link_draws.h").is_file()
    fail = [sys.executable, "-c", "raise SystemExit(1)"]
    again = io.StringIO()
    assert prepared_tree(head[:12], cache=tmp_path, build=fail, log=again) == (tree, head)
    assert again.getvalue() == ""


def _entry(compiled: float, speedup: float, same: bool = True) -> dict:
    return {
        "median_packets_per_cpu_s": {"compiled": compiled, "python": compiled / speedup},
        "speedup_median": speedup,
        "identical_results": same,
    }


def test_targets_compare_each_figure_the_run_measured_with_its_bound():
    """A target whose workload ran gets its figure and whether it meets the bound (at
    least, or at most for a cost growth); one whose workload did not run is left out;
    the last row says whether every workload gave the same results on both cores."""
    from benchmarks.emulator_speed import target_rows

    report = {
        "results": {
            "minrtt": _entry(1_900_000, 40.0),
            "dqn_collect": {
                "median_decisions_per_cpu_s": {"compiled": 310_000, "python": 9_000},
                "speedup_median": 34.0,
                "identical_results": False,
            },
        },
        "scaling": {"paths": {"cost_growth": {"compiled": 1.6, "python": 1.2}}},
    }
    rows = {r["target"]: r for r in target_rows(report)}
    minrtt = rows["minRTT, 2 MB over Table I 4G + 5G [packets / CPU-s]"]
    assert minrtt["measured"] == 1_900_000 and not minrtt["met"]
    assert minrtt["bound"] == ">= 2,000,000"
    assert rows["minRTT, the pure-Python core's time over the compiled one's"]["met"]
    assert rows["bank task collection [decisions / CPU-s]"]["met"]
    growth = rows["per-packet cost growth, 2 to 8 paths"]
    assert growth["measured"] == 1.6 and not growth["met"] and growth["bound"] == "<= 1.5"
    assert not any("vector" in t or "connections" in t for t in rows)  # not run
    same = rows["the same results on both cores, every workload"]
    assert same["measured"] == "1 of 2" and not same["met"]


def test_out_writes_the_report_it_prints(monkeypatch, tmp_path, capsys):
    """``--out FILE`` keeps the printed report, its machine and its targets, in FILE."""
    import json

    from benchmarks.emulator_speed import main

    out = tmp_path / "speed" / "report.json"
    argv = ["--workloads", "short_episodes", "--episodes", "1", "--repeats", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert json.loads(out.read_text()) == printed
    assert printed["repeats"] == 1 and printed["machine"]["cpus"] >= 1
    assert printed["targets"] == [
        {
            "target": "the same results on both cores, every workload",
            "bound": "all",
            "measured": "1 of 1",
            "met": True,
        }
    ]
    assert [p.name for p in out.parent.iterdir()] == ["report.json"]  # no temporary left


def test_the_scaling_rows_give_each_workloads_events_per_packet(capsys):
    """A scaling workload counts the events its emulations processed beside their packets
    (the episodes' ``events`` metric), and the scaling row reports both workloads' events
    per packet beside the cost growth."""
    import json

    from baselines import make_scheduler
    from benchmarks.emulator_speed import _paths, _scaling, main
    from envs.runner import run_episode

    out = _scaling("paths_2", 1)  # one episode, seed 0
    r = run_episode(
        _paths(2), {"kind": "bulk", "size_bytes": 2_000_000}, make_scheduler("minrtt"), 0
    )
    assert (out["count"], out["events"]) == (r.metrics["packets_sent"], r.metrics["events"])
    assert main(["--workloads", "paths_2,paths_8", "--episodes", "4", "--repeats", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    row = report["scaling"]["paths"]
    lo, hi = (report["results"][w] for w in ("paths_2", "paths_8"))
    assert row["events_per_packet"] == [lo["events_per_packet"], hi["events_per_packet"]]
    assert all(1.0 < e < 3.0 for e in row["events_per_packet"])


def test_same_share_holds_each_connections_traffic_where_connections_64_congests():
    """``same_share_64`` is ``connections_64`` with a bottleneck 64 times as fast: each of
    its connections sends the packets that ``connections_1``'s sends, none retransmitted,
    so that from one to the other only the number of connections changes; ``connections_64``
    congests its bottleneck and retransmits (module docstring)."""
    from benchmarks.emulator_speed import SCALING, SCALING_ROWS, _scaling

    assert "same_share_64" in SCALING
    assert SCALING_ROWS["same_share"] == ("connections_1", "same_share_64")
    one, same, congested = (
        _scaling(name, 8) for name in ("connections_1", "same_share_64", "connections_64")
    )  # equal bytes: 64 runs of one connection (seeds 0-63), one run of 64 (seed 0)
    assert one["retransmissions"] == same["retransmissions"] == 0
    assert same["count"] == one["count"]
    assert congested["retransmissions"] > 0.02 * congested["count"]


def test_the_report_names_the_machine_beyond_its_cpus_name(monkeypatch, tmp_path):
    """The report's machine gives the CPU's family, model and stepping (the first CPU's
    fields of /proc/cpuinfo) and its caches (sysfs): a virtual machine's CPU name may be
    one that CPUs of different speed share. Without those files, the name and count only."""
    from benchmarks import emulator_speed as bench

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"
        "stepping\t: 1\n\nprocessor\t: 1\ncpu family\t: 99\n"
    )
    caches = tmp_path / "cache"
    for i, (level, kind, size) in enumerate(((1, "Data", "48K"), (2, "Unified", "1024K"))):
        (caches / f"index{i}").mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (caches / f"index{i}" / name).write_text(f"{value}\n")
    monkeypatch.setattr(bench, "CPUINFO", cpuinfo)
    monkeypatch.setattr(bench, "CPU_CACHES", caches)
    m = bench.machine()
    assert (m["cpu"], m["cpu_id"], m["caches"]) == (
        "AMD EPYC",
        "family 26 model 2 stepping 1",
        "L1d 48K, L2 1024K",
    )
    monkeypatch.setattr(bench, "CPUINFO", tmp_path / "none")
    monkeypatch.setattr(bench, "CPU_CACHES", tmp_path / "none")
    m = bench.machine()
    assert "cpu_id" not in m and "caches" not in m and m["cpus"] >= 1


def test_scaling_workloads_run_in_turn_within_each_repeat_and_rows_pair_their_repeats(
    monkeypatch, capsys
):
    """The scaling workloads run in turn within each repeat (every core of one, then the
    next), and a scaling row's cost growth is the median of the per-repeat ratios, not the
    ratio of the medians: a phase of the machine's speed that slows one repeat of both
    workloads cancels, as it does in a speed-up."""
    import json

    from benchmarks import emulator_speed as bench

    # packets per CPU-second of (workload, core) in repeat k: repeat 1 runs in a slow phase
    speed = {
        ("connections_1", False): [4.0e6, 2.0e6, 4.2e6],
        ("connections_64", False): [2.0e6, 1.9e6, 2.0e6],
        ("connections_1", True): [1.0e5, 0.5e5, 1.0e5],
        ("connections_64", True): [0.8e5, 0.45e5, 0.8e5],
    }
    calls = []

    def child(name, pure, args, tree=bench.ROOT):
        k = sum(1 for c in calls if c[:2] == (name, pure))
        calls.append((name, pure))
        return {
            "per_cpu_s": speed[(name, pure)][k],
            "unit": "packets",
            "count": 1000,
            "events": 1500,
            "retransmissions": 0,
            "checksum": 1.0,
            "core": "python" if pure else "compiled",
            "source": str(tree.resolve()),
        }

    monkeypatch.setattr(bench, "_child", child)
    args = ["--workloads", "connections_1,connections_64", "--repeats", "3"]
    assert bench.main(args) == 0
    one_repeat = [
        ("connections_1", False),
        ("connections_1", True),
        ("connections_64", False),
        ("connections_64", True),
    ]
    assert calls == one_repeat * 3
    row = json.loads(capsys.readouterr().out)["scaling"]["connections"]
    assert row["cost_growths"]["compiled"] == [2.0, 1.053, 2.1]
    assert row["cost_growth"]["compiled"] == 2.0
    assert row["cost_growths"]["python"] == [1.25, 1.111, 1.25]
    assert row["cost_growth"]["python"] == 1.25
    speed[("connections_64", False)] = [2.5e6, 1.0e6, 2.1e6]
    calls.clear()
    assert bench.main(args) == 0
    row = json.loads(capsys.readouterr().out)["scaling"]["connections"]
    assert row["cost_growths"]["compiled"] == [1.6, 2.0, 2.0]
    assert row["cost_growth"]["compiled"] == 2.0  # the medians' ratio: 4.0 / 2.1 = 1.90
