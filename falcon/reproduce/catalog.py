"""What ``falcon.reproduce`` runs: one entry per experiment behind a seed figure.

Each :class:`Experiment` is a command of the project's own entry points
(``python -m falcon.train``/``falcon.evaluate`` with Hydra overrides, or a
module's own CLI) at two scales:

* ``quick``: every experiment in minutes on 2 cores (small seeds, budgets,
  downloads). Enough to see each figure's shape; the numbers are noisy;
* ``paper``: each experiment's full protocol (the defaults its page of
  docs/explanation/ documents; the main job with the paper's 120 repetitions), hours.

The command's output folder holds ``result`` (its results JSON), read by
:mod:`falcon.reproduce.claims`, and the plots the report shows (``plots``).
``bank`` marks the experiments that need the meta-model bank, built once
first (the ``bank`` entry) so that its time is its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from envs.errors import ConfigError

SCALES = ("quick", "paper")


@dataclass(frozen=True)
class Experiment:
    """One command of the reproduction (see the module docstring)."""

    name: str
    #: ``python -m <module>``: falcon.train, falcon.evaluate or a module with its own CLI
    module: str
    #: scale -> the command's arguments (without the output and tracking ones)
    args: Mapping[str, tuple[str, ...]]
    #: the results JSON, relative to the output folder
    result: str
    #: PNG files of the output folder the report shows (globs)
    plots: tuple[str, ...] = ()
    #: the meta-model bank of the scale is needed (built first by the ``bank`` entry)
    bank: bool = False
    #: Hydra entry point (output=..., tracking=none); else ``--out <folder>/<result>``
    hydra: bool = True
    what: str = ""

    def command(self, scale: str, out_dir: str, bank_preset: str) -> list[str]:
        """The argv (after ``python``) of this experiment at ``scale``, writing into ``out_dir``."""
        if scale not in self.args:
            raise ConfigError(f"reproduce: experiment {self.name!r} has no {scale!r} scale")
        argv = ["-m", self.module, *self.args[scale]]
        if self.hydra:
            argv += [f"output={out_dir}", "tracking=none", "progress=false"]
            if self.bank or self.name == "bank":
                argv.append(f"bank={bank_preset}")
        else:
            argv += ["--out", f"{out_dir}/{self.result}"]
        return argv


def _both(*args: str) -> dict[str, tuple[str, ...]]:
    return {"quick": tuple(args), "paper": tuple(args)}


#: the bank preset of each scale
BANK_PRESET = {"quick": "quick", "paper": "paper"}

_MAIN_AGENTS = "agent_list=[falcon,mpeekaboo,minrtt,blest,ecf,rr]"

EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment(
        "bank",
        "falcon.train",
        _both("experiment=build_bank", "runtime.workers=2"),
        result="bank.json",
        what="the meta-model bank of the scale's preset (reused when built)",
    ),
    Experiment(
        "main",
        "falcon.evaluate",
        {
            "quick": ("experiment=main", _MAIN_AGENTS, "runs=20"),
            "paper": ("experiment=main", _MAIN_AGENTS, "runs=120", "runtime.workers=2"),
        },
        result="summary.json",
        plots=("download_time_s*.png",),
        bank=True,
        what="FALCON Fig. 2: the four scenarios, 2 MB download",
    ),
    Experiment(
        "dqn_off_star",
        "falcon.experiments.dqn_evidence",
        {"quick": ("--quick",), "paper": ("--off-star",)},
        result="dqn_evidence.json",
        hydra=False,
        what="DQN-Off against DQN-Off* (5 % less RTT variation and loss)",
    ),
    Experiment(
        "convergence",
        "falcon.train",
        {
            # the paper's change and reference (experiment=convergence_paper): the claims are
            # the paper's; experiment=convergence changes to a B where A's policy is poor
            "quick": (
                "experiment=convergence_paper",
                "quick=true",
                "quick_variant.runs=5",
                "quick_variant.convergence.downloads_b=8",
                "quick_variant.convergence.bins={lo: 100, hi: 10000, per_decade: 2}",
            ),
            "paper": ("experiment=convergence_paper",),
        },
        result="convergence.json",
        plots=("convergence.png",),
        bank=True,
        what="FALCON Figs. 3-4: relative score vs online packets after a change",
    ),
    Experiment(
        "stress",
        "falcon.train",
        {
            # the paper's random changes and DQN-Off reference (experiment=stress_paper): the
            # claims are the paper's; experiment=stress alternates with a B where A's policy is poor
            "quick": (
                "experiment=stress_paper",
                "quick=true",
                "quick_variant.stress.schedulers=[falcon,minrtt,dqn_on,mpeekaboo,dqn_off]",
                "quick_variant.stress.intervals_s=[4.0,2.0,0.5]",
                "quick_variant.stress.n_conditions=12",
            ),
            "paper": ("experiment=stress_paper",),
        },
        result="stress.json",
        plots=("stress.png",),
        bank=True,
        what="FALCON Fig. 5: relative score per change interval",
    ),
    Experiment(
        "web_pages",
        "falcon.evaluate",
        {
            "quick": (
                "experiment=web_pages",
                "runs=3",
                "scenario_list=[mobile_5g_5g]",
                "agent_list=[falcon_s,falcon,mpeekaboo,minrtt]",
            ),
            "paper": (
                "experiment=web_pages",
                "agent_list=[falcon_s,falcon,mpeekaboo,minrtt,blest,ecf,rr]",
                "runtime.workers=2",
            ),
        },
        result="summary.json",
        plots=("download_time_s*.png",),
        bank=True,
        what="FALCON Fig. 6: web pages, FALCON-S",
    ),
    Experiment(
        "real_world",
        "falcon.train",
        {
            "quick": (
                "experiment=real_world",
                "quick=true",
                "quick_variant.real_world.schedulers=[falcon,falcon_n,mpeekaboo,minrtt,dqn_off]",
                "quick_variant.real_world.days=3",
                "quick_variant.real_world.downloads_per_day=3",
            ),
            "paper": ("experiment=real_world",),
        },
        result="real_world.json",
        plots=("real_world.png",),
        bank=True,
        what="FALCON Fig. 7: five days on held-out real traces",
    ),
    Experiment(
        "k_impact",
        "falcon.train",
        {
            "quick": (
                "experiment=k_impact",
                "quick=true",
                "quick_variant.runs=5",
                "quick_variant.k_impact.ks=[0,4,16]",
                "quick_variant.k_impact.subranges=[1,2]",
            ),
            "paper": ("experiment=k_impact",),
        },
        result="k_impact.json",
        plots=("k_impact.png",),
        bank=True,
        what="FALCON Figs. 8-9: fine-tuning steps K, sub-ranges",
    ),
    Experiment(
        "overhead",
        "falcon.train",
        {
            "quick": ("experiment=overhead", "quick=true", "quick_variant.runs=3"),
            "paper": ("experiment=overhead",),
        },
        result="overhead.json",
        plots=("overhead.png",),
        bank=True,
        what="FALCON Fig. 10: CPU and memory against minRTT",
    ),
    Experiment(
        "srpt_toys",
        "falcon.train",
        _both("experiment=srpt_toys"),
        result="srpt_toys.json",
        plots=("srpt_toys.png",),
        what="SRPT-ECF Figs. 3, 5, 6, 8: the toy schedules (exact fluid model)",
    ),
    Experiment(
        "stream_aware",
        "falcon.evaluate",
        {"quick": ("experiment=stream_aware", "runs=10"), "paper": ("experiment=stream_aware",)},
        result="summary.json",
        plots=("object_time_*.png", "objects*.png"),
        what="SRPT-ECF Figs. 9-10: Wikipedia page replay",
    ),
    Experiment(
        "gaps",
        "falcon.train",
        {
            "quick": (
                "experiment=gaps",
                "quick=true",
                "quick_variant.gaps.schedulers=[minrtt,daps,stms,blest_gap,ecf_gap,gaps]",
                "+quick_variant.gaps.agent_overrides={gaps: {train: {episodes: 8, size_bytes: 4000000}}}",
            ),
            "paper": ("experiment=gaps",),
        },
        result="gaps.json",
        plots=("gaps*.png",),
        what="GAPS: out-of-order queue, GAP deviation, goodput, FCT",
    ),
    Experiment(
        "hybrid",
        "falcon.train",
        {"quick": ("experiment=hybrid", "quick=true"), "paper": ("experiment=hybrid",)},
        result="hybrid.json",
        plots=("hybrid*.png",),
        what="Hybrid MPTCP: iteration time, fairness, stragglers (DEL workload)",
    ),
    Experiment(
        "hop",
        "falcon.train",
        {
            "quick": (
                "experiment=hop",
                "quick=true",
                "quick_variant.hop.duration_s=15",
                "quick_variant.hop.block_kb=[100,120,140]",
                "quick_variant.hop.cases=[balanced,unbalanced,highly_unbalanced]",
                "quick_variant.hop.schedulers=[hop,ideal_jump,leap,cubic+minrtt,bbr+daps,bbr+dems]",
            ),
            "paper": ("experiment=hop", "runtime.workers=2"),
        },
        result="hop.json",
        plots=("hop*.png",),
        what="HOP: block failure probability vs block size",
    ),
)

BY_NAME = {e.name: e for e in EXPERIMENTS}


def select(only) -> list[Experiment]:
    """The experiments to run: all, or those named in ``only`` (a list or a
    comma-separated string), plus the bank when one of them needs it; in
    catalogue order."""
    if only in (None, "", [], ()):
        return list(EXPERIMENTS)
    names = [
        s.strip() for s in (only.split(",") if isinstance(only, str) else only) if str(s).strip()
    ]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ConfigError(
            f"reproduce: only: unknown experiment(s) {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(BY_NAME)})"
        )
    wanted = set(names)
    if any(BY_NAME[n].bank for n in wanted):
        wanted.add("bank")
    return [e for e in EXPERIMENTS if e.name in wanted]


__all__ = ["Experiment", "EXPERIMENTS", "BY_NAME", "SCALES", "BANK_PRESET", "select"]
