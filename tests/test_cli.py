"""Error lines and atomic output folders of the entry points."""

from __future__ import annotations

import pytest

from envs.errors import ConfigError, TraceError
from falcon.cli import guard, one_line, staged_output


def test_output_appears_only_when_complete(tmp_path):
    final = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with staged_output(final) as tmp:
            (tmp / "summary.json").write_text("{}")
            assert not final.exists()
            raise RuntimeError("episode failed")
    assert list(tmp_path.iterdir()) == []  # neither the output nor the staging folder
    with staged_output(final) as tmp:
        (tmp / "summary.json").write_text("{}")
    assert (final / "summary.json").read_text() == "{}"


def test_output_replaces_an_earlier_output_only(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "summary.json").write_text("old")
    (final / "stale.png").write_text("x")
    with staged_output(final) as tmp:
        (tmp / "summary.json").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["summary.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("keep me")
    with pytest.raises(ConfigError, match="not an earlier output folder"):
        with staged_output(precious):
            pass
    assert (precious / "thesis.tex").read_text() == "keep me"


def test_one_line_messages():
    assert one_line(TraceError("a.csv", "bad number", line=3)) == "trace a.csv:3: bad number"
    from hydra.errors import MissingConfigException

    hydra_msg = (
        "In 'evaluate': Could not find 'agent/x'\n\nAvailable options in 'agent':\n\tblest\n\tminrtt\n"
        "Config search path:\n\tprovider=hydra, path=pkg://hydra.conf"
    )
    assert one_line(MissingConfigException(hydra_msg)) == "unknown agent 'x' (known: blest, minrtt)"


def test_guard_turns_input_errors_into_exit_2(capsys):
    @guard
    def job():
        raise ConfigError("paths[0].loss: 2 is outside [0.0, 1.0]")

    with pytest.raises(SystemExit) as exc:
        job()
    assert exc.value.code == 2
    assert capsys.readouterr().err == "error: paths[0].loss: 2 is outside [0.0, 1.0]\n"

    @guard
    def bug():
        raise ZeroDivisionError("a bug keeps its traceback")

    with pytest.raises(ZeroDivisionError):
        bug()
