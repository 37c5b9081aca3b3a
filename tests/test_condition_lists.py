"""The learnability suite's condition lists (configs/conditions/, conditions=):
every condition of every list validates (scenarios build, traces and pages
load, no episode runs) and keeps to its list's split; a test file on the
train list, a file in no split and a learner on the test list fail with one
line before anything runs."""

from __future__ import annotations

import shutil

import pytest

from envs.errors import ConfigError
from envs.traces import split_of, traces_dir
from falcon.experiments import learnability as lb
from falcon.experiments.condition_lists import trace_files

LISTS = ("dev", "train", "validation", "test")
TEST_FILE = "lumos5g_mmwave_runs/lumos_trace_7.log"
DEV = [
    "t1_4g_5g",
    "t1_4g_wlan",
    "t1_5g_wlan",
    "50_10__5_150",
    "50_20__5_400",
    "20_20__20_20",
    "100_20__100_80",
    "10_40__100_40",
    "30_30_lossless__30_30_loss5",
    "50_30_std5__std100",
    "mobile_5g_5g",
    "aydin_wifi_cell",
    "mahimahi_lte_wlan",
    "t1_4g_5g_20mb",
    "github_4g_wlan",
]


def _settings(compose, *overrides):
    return lb.settings(
        compose(
            "train",
            ["experiment=learnability", "learnability.deployed=[]", "progress=false", *overrides],
        )
    )


def _one(name: str, trace: str) -> str:
    return f"learnability.conditions=[{{name: {name}, scenario: {{paths: [{{trace: {trace}}}, {{link: 4g}}]}}}}]"


@pytest.fixture(scope="module")
def lists():
    """``{list: (section, conditions)}`` of every list, as the suite validates them."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from falcon.config import CONFIG_DIR

    out = {}
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        for name in LISTS:
            cfg = hydra_compose(
                "train",
                [
                    "experiment=learnability",
                    f"conditions={name}",
                    "learnability.deployed=[]",
                    "progress=false",
                ],
            )
            _, sec, conds, _ = lb.settings(cfg)
            out[name] = (sec, conds)
    return out


@pytest.mark.parametrize("name", LISTS)
def test_every_condition_of_every_list_validates_and_keeps_to_its_split(lists, name):
    sec, conds = lists[name]
    assert sec["split"] == name and sec["runs"] == (10 if name == "dev" else 30)
    assert sec["learners"] == ([] if name == "test" else ["dqn_off", "dqn_on", "dqn_modes"])
    for c in conds:
        for i, f in trace_files(c["scenario"]):
            s = split_of(f)
            assert s != "test" if name == "dev" else s == name, (c["name"], f, s)
            if name != "dev":
                assert c["scenario"]["paths"][i]["trace_start_s"] == "random", c["name"]


def test_the_dev_list_is_the_development_conditions(lists):
    assert [c["name"] for c in lists["dev"][1]] == DEV


def test_the_trace_lists_cover_sets_apps_and_outages(lists):
    conds = [c for name in ("train", "validation", "test") for c in lists[name][1]]
    assert len(conds) >= 30 and min(len(lists[n][1]) for n in ("train", "validation", "test")) >= 10
    files = {f for c in conds for _, f in trace_files(c["scenario"])}
    assert len({f.split("/")[0] for f in files}) >= 6
    bulk = {c["app"]["size_bytes"] for c in conds if c["app"]["kind"] == "bulk"}
    assert {2_000_000, 20_000_000} <= bulk
    pages = [c["app"]["page"] for c in conds if c["app"]["kind"] == "web"]
    assert len(pages) >= 2 and set(pages) <= {"github", "google", "stackoverflow"}
    outage = [c["name"] for c in conds if "outage" in c["name"]]
    assert len(outage) >= 3
    # every list pairs across sets and uses a Table I preset somewhere
    for name in ("train", "validation", "test"):
        sets = [{f.split("/")[0] for _, f in trace_files(c["scenario"])} for c in lists[name][1]]
        assert any(len(s) == 2 for s in sets), name
        assert any(p.get("link") for c in lists[name][1] for p in c["scenario"]["paths"]), name


def test_a_test_file_on_the_train_list_fails_before_anything_runs(run_cli, tmp_path):
    out = tmp_path / "out"
    res = run_cli(
        "train",
        "experiment=learnability",
        "conditions=train",
        "tracking=none",
        f"output={out}",
        _one("leak", TEST_FILE),
    )
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines == [
        f"error: learnability.conditions[0] (leak): paths[0].trace {TEST_FILE} is a test file of "
        f"split.yaml; the train list takes train files only"
    ]
    assert not out.exists()


@pytest.mark.parametrize("name, allowed", [("dev", True), ("validation", False)])
def test_a_file_in_no_split_is_refused_on_a_split_list(compose, tmp_path, name, allowed):
    other = tmp_path / "own_lumos.log"  # a Lumos5G file by its name (its units: MB/s)
    shutil.copy(traces_dir() / "lumos5g_mmwave_runs/lumos_trace_3.log", other)
    other.write_text(other.read_text() + "999 1.5\n")
    overrides = [f"conditions={name}", "learnability.learners=[]", _one("own", other)]
    if allowed:
        assert [c["name"] for c in _settings(compose, *overrides)[2]] == ["own"]
    else:
        with pytest.raises(
            ConfigError,
            match=r"paths\[0\].trace .*own_lumos.log is in no split \(not listed\) of "
            r"split.yaml; the validation list takes validation files only",
        ):
            _settings(compose, *overrides)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["conditions=test", "learnability.learners=[dqn_off]"],
            "learnability.learners: ['dqn_off'] on the test list: its files are for reporting only",
        ),
        (
            ["learnability.split=tset"],
            "learnability.split: expected one of dev, train, validation, test",
        ),
        (
            ["conditions=validation", _one("x", "lumos5g_mmwave_runs/lumos_trace_1.log")],
            "is a train file of split.yaml; the validation list takes validation files only",
        ),
    ],
)
def test_list_violations_are_one_line_errors(compose, overrides, message):
    with pytest.raises(ConfigError) as e:
        _settings(compose, *overrides)
    assert message in str(e.value) and "\n" not in str(e.value)
