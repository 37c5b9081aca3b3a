"""The reference of an A -> B change: the best known policy on B, and a check
that the change can show adaptation at all.

A convergence experiment measures how fast a scheduler that was doing well on
condition A becomes good on condition B. That is only visible when the
policy that was best on A is poor on B: if A's best policy is already near
the best on B, every scheduler "converges" on its first download and the
packets to the target are 0 for all of them (what the paper-style setting of
this project measured: M-Peekaboo 0.99 and FALCON 0.93 on the first download
after the change).

So the reference is computed from policies anyone can run, not from one
learner trained on B:

* **Candidates**: the rule schedulers ``rules`` (agent config names) and the
  fixed splits ``shares`` (the share of packets on path 0; 0 and 1 are the
  single paths), each run on the same ``runs`` download seeds of A and of B
  (a fresh scheduler per download).
* **Best known on B**: the candidate with the lowest median download time on
  B. Its download times on B are the numerator of every relative score
  (``best-known median on B / scheduler median``). It is one policy chosen by
  its median, not the per-seed hindsight oracle of the learnability suite.
* **A's policy**: the candidate with the lowest median on A. Its gap on B =
  its median on B / the best known median on B - 1 must be at least
  ``min_gap`` (default 0.2): otherwise the setting cannot show adaptation
  and the job stops with an error naming the gap.

The ``reference`` section holds both kinds' settings and ``kind`` picks one;
``kind: dqn_off`` keeps the paper's reference (DQN-Off trained offline on
logs of B; :func:`falcon.experiments.common.train_reference`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from envs.errors import ConfigError
from falcon.experiment import info
from falcon.experiments import common

KINDS = ("best_known", "dqn_off")
KEYS = {
    "best_known": ("rules", "shares", "runs", "min_gap"),
    "dqn_off": (
        "collect_episodes",
        "behaviour_epsilon",
        "gradient_steps",
        "runs",
        "agent",
        "agent_overrides",
    ),
}
#: seed offsets of the reference's downloads on A and on B (apart from the runs' seeds)
SEED_A, SEED_B = 700_000, 800_000


def check_reference(value, where: str) -> dict:
    """The validated ``reference`` section: ``{kind, best_known: {...}, dqn_off: {...}}``;
    returns the chosen kind's settings with ``kind`` set. Unknown keys, an
    empty candidate set, a share outside [0, 1] or a negative ``min_gap`` are
    errors (the other kind's section is not read)."""
    sec = dict(value or {})
    kind = sec.get("kind", "best_known")
    if kind not in KINDS:
        raise ConfigError(f"{where}.kind: expected one of {list(KINDS)}, got {kind!r}")
    unknown = sorted(set(sec) - {"kind", *KINDS})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: kind, {', '.join(KINDS)}")
    where = f"{where}.{kind}"
    ref = dict(sec.get(kind) or {})
    unknown = sorted(set(ref) - set(KEYS[kind]))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {list(KEYS[kind])}")
    ref["kind"] = kind
    ref["runs"] = common.check_positive_int(ref, "runs", 20)
    if kind == "dqn_off":
        return ref
    rules, shares = ref.get("rules") or [], ref.get("shares") or []
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise ConfigError(f"{where}.rules: expected a list of agent names, got {rules!r}")
    if not isinstance(shares, list) or not all(
        isinstance(s, (int, float)) and not isinstance(s, bool) and 0 <= s <= 1 for s in shares
    ):
        raise ConfigError(f"{where}.shares: expected a list of numbers in [0, 1], got {shares!r}")
    if not rules and not shares:
        raise ConfigError(f"{where}: no candidate policy (rules and shares are both empty)")
    gap = ref.get("min_gap", 0.2)
    if isinstance(gap, bool) or not isinstance(gap, (int, float)) or gap < 0:
        raise ConfigError(f"{where}.min_gap: expected a number >= 0, got {gap!r}")
    ref.update(rules=list(rules), shares=[float(s) for s in shares], min_gap=float(gap))
    return ref


def candidates(ref: Mapping) -> dict[str, tuple[str, dict]]:
    """``{label: (agent name, agent config)}`` of the reference's candidate policies."""
    out = {name: (name, common.agent_config(name)) for name in ref["rules"]}
    for s in ref["shares"]:
        out[f"share={s:g}"] = (
            "split_threshold",
            common.agent_config("split_threshold", {"share": s}),
        )
    return out


def candidate_times(
    cands: Mapping[str, tuple[str, dict]], scenario, app, seeds: Sequence[int]
) -> dict[str, list[float]]:
    """Download times [s] of every candidate on ``scenario``, one fresh scheduler per seed."""
    return {
        label: [
            common.download(common.build_agent(name, cfg, s), scenario, app, s)["download_time_s"]
            for s in seeds
        ]
        for label, (name, cfg) in cands.items()
    }


def _median(times: Sequence[float]) -> float:
    """Median [s], an unfinished download ranked last (common.ranked_median); inf without one."""
    m = common.ranked_median(times)
    return math.inf if math.isnan(m) else m


def best_known(
    scen_a, scen_b, app, ref: Mapping, seed: int, where: str, progress: bool = True
) -> dict:
    """The best known policy on B and A's policy's gap on it (module
    docstring); raises :class:`ConfigError` when the gap is below
    ``ref["min_gap"]``. Returns the reference record of the results."""
    cands = candidates(ref)
    n = ref["runs"]
    times_a = candidate_times(cands, scen_a, app, [seed + SEED_A + i for i in range(n)])
    times_b = candidate_times(cands, scen_b, app, [seed + SEED_B + i for i in range(n)])
    med_a = {k: _median(v) for k, v in times_a.items()}
    med_b = {k: _median(v) for k, v in times_b.items()}
    a_policy = min(med_a, key=med_a.__getitem__)
    best = min(med_b, key=med_b.__getitem__)
    if not math.isfinite(med_b[best]):
        raise ConfigError(f"{where}: no candidate finished a download on B")
    gap = med_b[a_policy] / med_b[best] - 1.0
    if progress:
        info(
            f"reference: best known on B = {best} (median {med_b[best]:.3f} s over {n} downloads); "
            f"A's policy {a_policy} is {gap:.0%} behind it on B"
        )
    if not gap >= ref["min_gap"]:
        raise ConfigError(
            f"{where}: condition_b cannot show adaptation: A's best policy ({a_policy}) is only "
            f"{gap:.0%} behind the best known on B ({best}); at least {ref['min_gap']:.0%} needed "
            "(reference.min_gap)"
        )
    return {
        "kind": "best_known",
        "policy": best,
        "median_time_s": med_b[best],
        "times": times_b[best],
        "a_policy": a_policy,
        "a_policy_gap": gap,
        "medians_a_s": med_a,
        "medians_b_s": med_b,
    }


def dqn_off(scen_b, app, ref: Mapping, seed: int, progress: bool = True) -> dict:
    """The paper's reference: DQN-Off trained offline on logs of B, then
    ``runs`` greedy downloads of B (their times are the numerator)."""
    model, train = common.train_reference([scen_b], app, seed + 900_000, ref, progress)
    times = common.reference_times(
        model, scen_b, app, [seed + SEED_B + i for i in range(ref["runs"])]
    )
    med = _median(times)
    if progress:
        info(f"reference: DQN-Off on B: median {med:.3f} s over {ref['runs']} downloads")
    return {
        "kind": "dqn_off",
        "policy": common.REFERENCE,
        "median_time_s": med if math.isfinite(med) else math.nan,
        "times": times,
        "train": train,
    }


def reference(scen_a, scen_b, app, ref: Mapping, seed: int, where: str, progress=True) -> dict:
    """The reference record of ``ref["kind"]`` (validated by :func:`check_reference`)."""
    if ref["kind"] == "dqn_off":
        return dqn_off(scen_b, app, ref, seed, progress)
    return best_known(scen_a, scen_b, app, ref, seed, where, progress)


__all__ = ["check_reference", "candidates", "candidate_times", "best_known", "dqn_off", "reference"]
