"""The benchmark's definition and its id.

A benchmark is the learnability suite (:mod:`falcon.experiments.learnability`)
frozen: the conditions of each split (``configs/conditions/<split>.yaml``, or
the ``bench.conditions`` mapping of a custom benchmark), the SHA-256 of every
trace file they read, the evaluation seeds, the rules and references the
ratios are taken against, and the emulator's build version. The benchmark id
``falcon-bench-v<version>-<12 hex digits>`` is the SHA-256 of that definition
as canonical JSON: two results files with the same id ran the same downloads
(the references in both are bit-identical) and merge into one leaderboard.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from envs.errors import ConfigError, is_whole_number
from falcon.experiments.condition_lists import ALLOWED_SPLITS, check_list_files, trace_files
from falcon.experiments.learnability_settings import check_conditions, check_shares
from falcon.experiments.oracle import check_oracle

JOB = "bench"
#: the splits a benchmark defines when bench.conditions is null (configs/conditions/<split>.yaml)
SPLITS = ("train", "validation", "test")
#: the keys of bench: (all but splits are part of the definition)
SECTION_KEYS = (
    "version",
    "splits",
    "runs",
    "conditions",
    "rules",
    "fixed_split_shares",
    "oracle",
    "headroom_margin",
    "bulk_size_bytes",
)
METRIC = "download_time_s"


def _positive_int(sec: Mapping, key: str, allow_none: bool = False) -> int | None:
    v = sec.get(key)
    if v is None and allow_none:
        return None
    if not is_whole_number(v, 1):
        raise ConfigError(f"{JOB}.{key}: expected an integer >= 1, got {v!r}")
    return v


def _names(sec: Mapping, key: str) -> list[str]:
    v = sec.get(key)
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise ConfigError(f"{JOB}.{key}: expected a non-empty list of names, got {v!r}")
    dup = sorted({x for x in v if v.count(x) > 1})
    if dup:
        raise ConfigError(f"{JOB}.{key}: {', '.join(dup)} listed twice")
    return list(v)


def check_section(sec: Mapping) -> dict:
    """The validated ``bench:`` section (plain dict); conditions are checked by
    :func:`load_conditions`."""
    unknown = sorted(set(sec) - set(SECTION_KEYS))
    if unknown:
        raise ConfigError(f"{JOB}: unknown key(s) {unknown}; known: {list(SECTION_KEYS)}")
    out = dict(sec)
    out["version"] = _positive_int(sec, "version")
    out["runs"] = _positive_int(sec, "runs")
    out["bulk_size_bytes"] = _positive_int(sec, "bulk_size_bytes", allow_none=True)
    out["splits"] = _names(sec, "splits")
    out["rules"] = _names(sec, "rules")
    try:
        out["fixed_split_shares"] = check_shares(sec)
    except ConfigError as e:
        raise ConfigError(str(e).replace("learnability.", f"{JOB}.", 1)) from None
    missing = [s for s in (0.0, 1.0) if s not in out["fixed_split_shares"]]
    if missing:
        raise ConfigError(f"{JOB}.fixed_split_shares: must include 0 and 1, missing {missing}")
    out["oracle"] = check_oracle(sec.get("oracle"), f"{JOB}.oracle")
    m = sec.get("headroom_margin")
    if isinstance(m, bool) or not isinstance(m, int | float) or not 0 <= m < 1:
        raise ConfigError(f"{JOB}.headroom_margin: expected a number in [0, 1), got {m!r}")
    out["headroom_margin"] = float(m)
    raw = sec.get("conditions")
    if raw is not None and (not isinstance(raw, Mapping) or not raw):
        raise ConfigError(
            f"{JOB}.conditions: expected null (the shipped lists) or a mapping "
            f"{{split: [{{name, scenario, app}}, ...]}}, got {raw!r}"
        )
    defined = list(raw) if raw is not None else list(SPLITS)
    bad = [s for s in defined if s not in ALLOWED_SPLITS]
    if bad:
        raise ConfigError(
            f"{JOB}.conditions: unknown split(s) {bad} (known: {', '.join(ALLOWED_SPLITS)})"
        )
    absent = [s for s in out["splits"] if s not in defined]
    if absent:
        raise ConfigError(
            f"{JOB}.splits: {absent} not among the benchmark's splits ({', '.join(defined)})"
        )
    out["defined_splits"] = defined
    return out


def load_conditions(sec: Mapping) -> dict[str, list[dict]]:
    """``{split: [validated condition]}`` for every split the benchmark defines, each
    checked to read only trace files of its split (:mod:`falcon.experiments.condition_lists`)."""
    from falcon.config import load_groups, to_plain

    raw = sec.get("conditions")
    if raw is None:
        lists = {
            s: to_plain(node)["learnability"]["conditions"]
            for s, node in zip(SPLITS, load_groups("conditions", list(SPLITS)), strict=True)
        }
    else:
        lists = {s: raw[s] for s in sec["defined_splits"]}
    out = {}
    for split, entries in lists.items():
        try:
            conds = check_conditions(entries, sec["bulk_size_bytes"])
            check_list_files(conds, split, "learnability")
        except ConfigError as e:
            raise ConfigError(
                f"{JOB}.conditions.{split}: {str(e).removeprefix('learnability.')}"
            ) from None
        out[split] = conds
    return out


def build_version() -> dict:
    """The versions the benchmark's numbers depend on: the emulator's build version
    (bumped whenever a change moves a seeded result) and the package's."""
    from falcon import __version__
    from metalearning.build import BUILD_VERSION

    return {"emulator_build": BUILD_VERSION, "falcon": __version__}


def definition(sec: Mapping, seed: int, conditions: Mapping[str, list[dict]]) -> dict:
    """Everything the benchmark id pins (plain JSON): per split its conditions with the
    SHA-256 of each trace file, the seeds, the rules, the references' settings and the
    build version."""
    from envs.traces.split import content_hash

    splits = {}
    for split, conds in conditions.items():
        splits[split] = [
            {
                "name": c["name"],
                "scenario": c["scenario"],
                "app": c["app"],
                "traces": [
                    {"path": i, "file": f, "sha256": content_hash(f)}
                    for i, f in trace_files(c["scenario"])
                ],
            }
            for c in conds
        ]
    return {
        "version": sec["version"],
        "metric": METRIC,
        "seeds": list(range(seed, seed + sec["runs"])),
        "rules": list(sec["rules"]),
        "fixed_split_shares": list(sec["fixed_split_shares"]),
        "oracle": sec["oracle"],
        "headroom_margin": sec["headroom_margin"],
        "build": build_version(),
        "splits": splits,
    }


def benchmark_id(defn: Mapping) -> str:
    """``falcon-bench-v<version>-<first 12 hex digits of the definition's SHA-256>``."""
    text = json.dumps(defn, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return f"falcon-bench-v{defn['version']}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


__all__ = [
    "JOB",
    "SPLITS",
    "SECTION_KEYS",
    "METRIC",
    "check_section",
    "load_conditions",
    "build_version",
    "definition",
    "benchmark_id",
]
