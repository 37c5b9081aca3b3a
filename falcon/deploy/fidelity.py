"""python -m falcon.deploy.fidelity: the emulator against the real transport, per trace set.

    python -m falcon.deploy.fidelity                                     # configs/fidelity.yaml
    python -m falcon.deploy.fidelity 'only=[raca_5g_2020]' runs=3 output=/tmp/f table=/tmp/f.md
    python -m falcon.deploy.fidelity --config-name fidelity_quick output=/tmp/f table=/tmp/f.md

For every trace set of ``sets`` and every size of ``sizes_bytes`` (a *cell*)
one falcon.deploy run (:func:`falcon.deploy.job.settings`,
:func:`~falcon.deploy.job.run_worlds`, minRTT only) downloads the size over one
path of the set's trace (``configs/scenario/single_path.yaml``, path 0 merged
with the set's ``path``, the scenario keys of ``scenario`` given to the
emulator) in the emulator and with the real transport through the relay, on
the same seeds: run ``k`` has seed ``seed + k`` in both worlds, so the same
trace start (:func:`trace_start_s`). A real download the relay served late
(``repeat.late_p99_ms``, at most ``repeat.late_max`` times; the least late one
is kept) or that did not complete (``repeat.failed_max`` times) is measured
again; every repeat is recorded.

Per cell, ``fidelity.json`` (``<output>/``, written whole or not at all)
holds each run's download time [s] from the request to the last byte in both
worlds, its utilisation (:func:`utilisation`), the relay's lateness p99 [ms]
and drops, and the medians with the emulated / real ratio and its 95 %
bootstrap interval over the paired seeds (:mod:`falcon.compare`). The table
(``table``, :mod:`falcon.deploy.fidelity_table`) is generated from it.
Bad input: one line, exit status 2 (:mod:`falcon.cli`).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from envs.errors import ConfigError, is_whole_number
from falcon import cli
from falcon.config import CONFIG_DIR
from falcon.experiment import info

#: the job's name (``fidelity.json``'s ``job``)
JOB = "fidelity"
#: version of ``fidelity.json``'s layout
SCHEMA_VERSION = 1
#: a cell's emulated median within this share of its real one counts as agreeing (issue #46)
AGREEMENT = 0.10


# ---------------------------------------------------------------- inputs
def checked_sets(sets, only) -> list[dict]:
    """The configured trace sets (``only``: these names), each with a ``name`` and a ``path`` holding a trace."""
    if not isinstance(sets, list) or not sets:
        raise ConfigError(f"sets: expected a list of trace sets, got {sets!r}")
    out = []
    for k, s in enumerate(sets):
        if (
            not isinstance(s, dict)
            or not s.get("name")
            or not isinstance(s.get("path"), dict)
            or not s["path"].get("trace")
            or not isinstance(s.get("runs") or {}, dict)
        ):
            raise ConfigError(
                f"sets.{k}: expected {{name, path: {{trace: ...}}, window, leaves_out, runs: "
                f"{{size: n}}}}, got {s!r}"
            )
        out.append(s)
    names = [s["name"] for s in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"sets: a name appears twice in {names}")
    if only is not None:
        wanted = [only] if isinstance(only, str) else list(only)
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise ConfigError(f"only: unknown set {unknown[0]!r} (known: {', '.join(names)})")
        out = [s for s in out if s["name"] in wanted]
    return out


def runs_for(size: int, runs: int, by_size: Mapping, where: str = "runs_by_size") -> int:
    """Runs of a size: ``by_size[size]`` or ``runs``."""
    n = by_size.get(size, by_size.get(str(size), runs))
    if not is_whole_number(n, 1):
        raise ConfigError(f"{where}.{size}: expected a positive integer, got {n!r}")
    return n


def checked_sizes(sizes) -> list[int]:
    if (
        not isinstance(sizes, list)
        or not sizes
        or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in sizes)
    ):
        raise ConfigError(
            f"sizes_bytes: expected a list of positive integers [bytes], got {sizes!r}"
        )
    return sizes


# ---------------------------------------------------------------- one cell
def cell_config(
    tset: Mapping, size: int, runs: int, c: Mapping, warmup: int, build: bool
) -> DictConfig:
    """The falcon.deploy config of one cell: ``configs/deploy.yaml`` with
    ``scenario=single_path``, its path 0 merged with the set's ``path``
    (``bandwidth_mbps`` cleared), ``scenario`` of the fidelity config, minRTT."""
    from hydra import compose

    cfg = compose(
        config_name="deploy",
        overrides=["scenario=single_path", "tracking=none", "agent_list=[minrtt]"],
    )
    plain = OmegaConf.to_container(cfg, resolve=True)
    scen = plain["scenario"]
    path = {**scen["paths"][0], "bandwidth_mbps": None, **dict(tset["path"])}
    scen = _merged(scen, c["scenario"] or {})
    scen["paths"] = [path]
    scen["name"] = str(tset["name"])
    t = dict(c["transport"])
    plain.update(
        scenario=scen,
        runs=runs,
        seed=int(c["seed"]),
        progress=bool(c["progress"]),
        output=None,
        app={**plain["app"], "size_bytes": int(size)},
    )
    plain["transport"] = {
        **plain["transport"],
        "cc": t["cc"],
        "timeout_s": float(t["timeout_s"]),
        "warmup": int(warmup),
        "build": bool(build),
    }
    return OmegaConf.create(plain)


def _merged(base: Mapping, over: Mapping) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = (
            _merged(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
        )
    return out


def built_path(scenario: Mapping, seed: int):
    """Path 0 as both worlds build it for ``seed`` (:meth:`envs.emulation.Emulation.build_path`,
    the first child seed in the relay and in the emulated episode alike)."""
    from envs.emulation import Emulation
    from envs.scenario import normalise_scenario

    s = normalise_scenario(scenario)
    return Emulation(seed).build_path(s["paths"][0], s)


def trace_start_s(scenario: Mapping, seed: int) -> float:
    """The trace time [s] at which ``seed``'s episode (and relay) starts."""
    return built_path(scenario, seed).link.offset


def utilisation(path, size: int, start_s: float, seconds: float) -> float:
    """The download's bytes over what the path's link offered from the request
    (``start_s``, emulated seconds since the connection started) to the last
    byte (``start_s + seconds``): payload against wire bytes, so a link carrying
    nothing but full packets of 1500 bytes (1440 of payload) reaches 0.96."""
    if not (seconds > 0 and math.isfinite(seconds)):
        return math.nan
    offered = path.link.offered_bytes(start_s, start_s + seconds)
    return size / offered if offered > 0 else math.nan


def _by_seed(records: Sequence[dict], metric: str) -> dict[int, float]:
    return {r["seed"]: r["metrics"].get(metric, math.nan) for r in records}


def run_cell(
    tset: Mapping, size: int, runs: int, c: Mapping, warmup: int, build: bool, keep: Path | None
) -> dict:
    """One set and size in both worlds (module docstring): the cell's record for ``fidelity.json``."""
    from falcon.deploy.job import run_worlds, settings
    from falcon.deploy.worlds import run_emulated

    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    st = settings(cell_config(tset, size, runs, c, warmup, build))
    with tempfile.TemporaryDirectory(prefix="falcon-fidelity-") as tmp:
        w = run_worlds(st, Path(tmp))
        if c["baseline"]:
            info(f"fidelity: emulating {tset['name']} again with {c['baseline']}")
            w["baseline"], _ = run_emulated(
                _merged(st.scenario_cfg, c["baseline"]), st.app, st.agents, st.seeds, None
            )
        repeats = measure_again(st, w["real"], c["repeat"], f"{tset['name']} {size} B", Path(tmp))
    if keep is not None:
        keep_deploy_output(st, w, keep / f"{tset['name']}__{size}", t0)
    return cell_record(tset, size, st, w, repeats, load0, time.perf_counter() - t0)


def measure_again(st, real: list[dict], rep: Mapping, label: str, log_dir: Path) -> list[dict]:
    """Repeat the real downloads of ``real`` (replaced in place) that were late or
    did not complete (module docstring); returns what each repeat measured."""
    from falcon.deploy.worlds import run_real

    repeats = []
    for i, rec in enumerate(real):
        left = {"late": int(rep["late_max"]), "failed": int(rep["failed_max"])}
        while (why := _repeat_reason(rec["metrics"], float(rep["late_p99_ms"]))) and left[
            why[0]
        ] > 0:
            left[why[0]] -= 1
            info(f"fidelity: {label} seed {rec['seed']}: measured again ({why[1]})")
            again, _ = run_real(
                st.scenario,
                st.size,
                st.agents,
                [rec["seed"]],
                onnx=None,
                cc=st.cc,
                listen=st.listen,
                lead_s=st.lead_s,
                timeout_s=st.timeout_s,
                warmup=0,
                log_dir=log_dir,
                progress=st.progress,
                decision_log="none",
            )
            repeats.append(
                {
                    "seed": rec["seed"],
                    "why": why[1],
                    "before": _run_view(rec["metrics"]),
                    "again": _run_view(again[0]["metrics"]),
                }
            )
            if _better(again[0]["metrics"], rec["metrics"]):
                rec = real[i] = again[0]
    return repeats


def keep_deploy_output(st, w: Mapping, folder: Path, t0: float) -> None:
    """The cell's falcon.deploy ``summary.json`` and ``table.txt`` in ``folder``."""
    from falcon.deploy.job import _finite, build_summary, table_text

    summary, emu_sum = build_summary(st, w, None, t0)
    real_sum = {k: summary[k] for k in ("results", "comparison") if k in summary}
    _write_atomic(folder / "table.txt", table_text(st, summary, real_sum, emu_sum))
    _write_atomic(folder / "summary.json", json.dumps(_finite(summary), indent=1) + "\n")


def _repeat_reason(m: Mapping, late_limit_ms: float) -> tuple[str, str] | None:
    """``(kind, why)`` to measure a real download again (kind ``failed`` or ``late``), or None."""
    if not m.get("bytes_verified"):
        return "failed", "did not complete"
    late = m.get("relay_late_p99_ms", 0.0)
    if late > late_limit_ms:
        return "late", f"relay lateness p99 {late:.1f} ms > {late_limit_ms:g} ms"
    return None


def _better(new: Mapping, old: Mapping) -> bool:
    """A repeat replaces a run when it completed and the run did not, or when both did and it was less late."""
    if bool(new.get("bytes_verified")) != bool(old.get("bytes_verified")):
        return bool(new.get("bytes_verified"))
    return new.get("relay_late_p99_ms", math.inf) < old.get("relay_late_p99_ms", math.inf)


def _run_view(m: Mapping) -> dict:
    return {k: _num(m.get(k)) for k in ("download_time_s", "relay_late_p99_ms", "bytes_verified")}


def _num(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def _paired_medians(a: list, b: list, keep: list[bool]) -> tuple[float | None, float | None]:
    """The medians of ``a`` and ``b`` over the runs ``keep`` marks (both worlds completed)."""
    return _median([x for x, k in zip(a, keep) if k]), _median([x for x, k in zip(b, keep) if k])


def _median(vals) -> float | None:
    import numpy as np

    v = [x for x in vals if x is not None and math.isfinite(x)]
    return float(np.median(v)) if v else None


def cell_record(
    tset: Mapping, size: int, st, w: Mapping, repeats: list, load0: float, wall_s: float
) -> dict:
    """What ``fidelity.json`` keeps of one cell (module docstring)."""
    from falcon.compare import compare_to_references

    seeds = st.seeds
    real_t, emu_t = _by_seed(w["real"], "download_time_s"), _by_seed(w["emu"], "download_time_s")
    base_t = _by_seed(w.get("baseline") or [], "download_time_s")
    hs = _by_seed(w["emu"], "handshake_s")
    paths = {s: built_path(st.scenario_cfg, s) for s in seeds}
    runs = []
    for s in seeds:
        m = next(r["metrics"] for r in w["real"] if r["seed"] == s)
        runs.append(
            {
                "seed": s,
                "trace_start_s": paths[s].link.offset,
                "handshake_s": _num(hs[s]),
                "emulated_s": _num(emu_t[s]),
                "real_s": _num(real_t[s]),
                "baseline_s": _num(base_t.get(s)),
                "emulated_utilisation": _num(utilisation(paths[s], size, hs[s], emu_t[s])),
                "real_utilisation": _num(utilisation(paths[s], size, hs[s], real_t[s])),
                "real_verified": bool(m.get("bytes_verified")),
                "relay_late_p99_ms": _num(m.get("relay_late_p99_ms")),
                "relay_dropped": _num(m.get("relay_dropped")),
                "emulated_retransmissions": _num(_by_seed(w["emu"], "retransmissions")[s]),
            }
        )
    ev, rv = [r["emulated_s"] for r in runs], [r["real_s"] for r in runs]
    done = [r["real_s"] is not None and r["emulated_s"] is not None for r in runs]
    em, rm = _paired_medians(ev, rv, done)
    cmp = compare_to_references(ev, {"real": rv})
    ratio = em / rm if em is not None and rm else None
    bm, brm = _paired_medians([r["baseline_s"] for r in runs], rv, done)
    eu, ru = _paired_medians(
        [r["emulated_utilisation"] for r in runs], [r["real_utilisation"] for r in runs], done
    )
    path0 = paths[seeds[0]]
    return {
        "set": tset["name"],
        "size_bytes": int(size),
        "runs": len(seeds),
        "seeds": list(seeds),
        "trace": _trace_name(tset["path"]["trace"]),
        "window": tset.get("window"),
        "rtt": _rtt_text(tset["path"]),
        "buffer_packets": path0.link.buffer_packets,
        "emulated_median_s": em,
        "real_median_s": rm,
        "emulated_over_real": ratio,
        "emulated_over_real_ci": cmp.get("ratio_ci"),
        "paired_runs": sum(done),
        "emulated_all_median_s": _median(ev),
        "baseline_median_s": bm,
        "baseline_over_real": bm / brm if bm is not None and brm else None,
        "within_10pct": ratio is not None and abs(ratio - 1) <= AGREEMENT,
        "emulated_utilisation_median": eu,
        "real_utilisation_median": ru,
        "relay_late_p99_ms_median": _median([r["relay_late_p99_ms"] for r in runs]),
        "relay_late_p99_ms_max": max((r["relay_late_p99_ms"] or 0.0 for r in runs), default=None),
        "real_verified": sum(r["real_verified"] for r in runs),
        "runs_detail": runs,
        "repeats": repeats,
        "leaves_out": " ".join(str(tset.get("leaves_out", "")).split()),
        "transport_cc": st.cc,
        "scenario_differences": st.diffs,
        "load_average_1min": [load0, os.getloadavg()[0]],
        "wall_s": wall_s,
    }


def _trace_name(trace) -> str:
    if isinstance(trace, Mapping):
        extra = ", ".join(f"{k} {v}" for k, v in trace.items() if k != "file")
        return f"{trace['file']} ({extra})" if extra else str(trace["file"])
    return str(trace)


def _rtt_text(path: Mapping) -> str:
    std = path.get("rtt_std_ms")
    if path.get("trace_delay"):
        return f"trace pings +- {std:g} ms" if std else "trace pings"
    return f"{path['rtt_ms']:g} +- {std:g} ms" if std else f"{path['rtt_ms']:g} ms"


# ---------------------------------------------------------------- the job
def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a written file is not
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=CONFIG_DIR.parent,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except OSError:
        return None
    return out.stdout.strip() or None


def run_fidelity_job(cfg) -> dict:
    """The whole job (module docstring); returns what ``fidelity.json`` holds."""
    from falcon.config import to_plain
    from falcon.deploy.fidelity_table import render

    c = to_plain(cfg)
    sets = checked_sets(c["sets"], c["only"])
    sizes = checked_sizes(c["sizes_bytes"])
    runs = c["runs"]
    if not is_whole_number(runs, 1):
        raise ConfigError(f"runs: expected a positive integer, got {runs!r}")
    by_size = dict(c["runs_by_size"] or {})
    n_runs = {size: runs_for(size, runs, by_size) for size in sizes}
    if not c["output"]:
        raise ConfigError("output: a folder for fidelity.json is required")
    out = Path(str(c["output"])).expanduser()
    keep = Path(str(c["deploy_output"])).expanduser() if c["deploy_output"] else None
    t0 = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    cells, build = [], bool(c["transport"]["build"])
    for tset in sets:
        for j, size in enumerate(sizes):
            n = runs_for(
                size, n_runs[size], dict(tset.get("runs") or {}), f"sets.{tset['name']}.runs"
            )
            info(f"fidelity: {tset['name']}, {size} bytes, {n} runs")
            cells.append(
                run_cell(
                    tset, size, n, c, int(c["transport"]["warmup"]) if j == 0 else 0, build, keep
                )
            )
            build = False
    result = {
        "schema_version": SCHEMA_VERSION,
        "job": JOB,
        "started": started,
        "commit": _commit(),
        "cpus": os.cpu_count(),
        "agreement": AGREEMENT,
        "seed": c["seed"],
        "sizes_bytes": sizes,
        "runs": n_runs,
        "scenario": c["scenario"],
        "baseline": c["baseline"],
        "transport": c["transport"],
        "repeat": c["repeat"],
        "leaves_out_all": [" ".join(str(x).split()) for x in c.get("leaves_out_all") or []],
        "wall_s": time.perf_counter() - t0,
        "cells": cells,
    }
    from falcon.deploy.job import _finite

    _write_atomic(out / "fidelity.json", json.dumps(_finite(result), indent=1) + "\n")
    info(f"fidelity: {out / 'fidelity.json'}")
    table = render(result)
    if c["table"]:
        _write_atomic(Path(str(c["table"])).expanduser(), table)
        info(f"fidelity: table {c['table']}")
    print(table, end="", flush=True)
    return result


@hydra.main(config_path=str(CONFIG_DIR), config_name="fidelity", version_base="1.3")
@cli.guard
def _hydra_main(cfg: DictConfig) -> dict:
    return run_fidelity_job(cfg)


def main() -> None:
    cli.main(_hydra_main)


if __name__ == "__main__":
    main()


__all__ = [
    "run_fidelity_job",
    "run_cell",
    "cell_config",
    "utilisation",
    "trace_start_s",
    "built_path",
    "checked_sets",
    "JOB",
    "SCHEMA_VERSION",
    "AGREEMENT",
]
