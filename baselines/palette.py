"""One colour per scheduler, the same in every plot of the project.

Every figure that draws schedulers (the evaluate/train reports, the
experiments' plots, the stream-aware figures, the notebooks) takes its
colours from :func:`color`, so that minRTT is the same blue in a CDF, a box
plot and a bar chart, whatever else the figure shows and in whatever order.

Names are the ``configs/agent`` names and the names experiments give their
variants (``hop_paper``, ``cubic+minrtt``, ``lia`` ...). Families share a hue:
FALCON and its variants are reds, the DQN agents browns, the bandits
purples; the paper's version of one of our designs (``*_paper``) is a lighter
tone of it. A name not listed gets a fixed colour derived from the name
itself (never from its position in a figure), so it too is stable.

Colours are matplotlib colour strings (hex); nothing here imports matplotlib.
"""

from __future__ import annotations

import hashlib

#: scheduler name -> colour (hex); every name is unique and so is every colour
COLORS: dict[str, str] = {
    # rule-based
    "minrtt": "#1f77b4",
    "blest": "#ff7f0e",
    "ecf": "#2ca02c",
    "rr": "#7f7f7f",
    "daps": "#bcbd22",
    "stms": "#17becf",
    "dems": "#8c6d31",
    "sttf": "#637939",
    "fixed_split": "#393b79",
    # re-injecting minRTT variants share minRTT's blues; the references are greys/navies
    "minrtt_or": "#6b9ac4",
    "minrtt_xlink": "#0b3c5d",
    "redundant": "#9edae5",
    "split_threshold": "#636363",
    "best_single_path": "#bdbdbd",
    "best_fixed_split": "#6b6ecf",
    "oracle": "#252525",
    # GAP rules and the GAPS agent
    "blest_gap": "#ffbb78",
    "ecf_gap": "#98df8a",
    "fixed_gap": "#5254a3",
    "gaps": "#e6550d",
    "gaps_paper": "#fdae6b",
    # bandits
    "peekaboo": "#c5b0d5",
    "mpeekaboo": "#9467bd",
    # DQN
    "dqn_on": "#8c564b",
    "dqn_on_n": "#c49c94",
    "dqn_on_w": "#5e3a33",
    "dqn_on_paper": "#bd9e39",
    "dqn_off": "#e377c2",
    "dqn_off_star": "#f7b6d2",
    "dqn_off_paper": "#ce6dbd",
    "dqn_modes": "#a55194",
    "dqn_modes_general": "#9c9ede",
    "dqn_modes_on": "#e7ba52",
    # FALCON
    "falcon": "#d62728",
    "falcon_n": "#ff9896",
    "falcon_s": "#843c39",
    "falcon_paper": "#e7969c",
    "falcon_modes": "#7f2704",
    # stream-aware
    "srpt_ecf": "#3182bd",
    "sa_ecf": "#fd8d3c",
    "fcfs_minrtt": "#31a354",
    "srpt_minrtt": "#756bb1",
    # HOP and its baselines (MPQUIC pairs of congestion control + scheduler)
    "hop": "#a50f15",
    "hop_backlog": "#fb6a4a",
    "hop_paper": "#fcbba1",
    "ideal_jump": "#000000",
    "ideal_jump_paper": "#969696",
    "leap": "#7b4173",
    "cubic+minrtt": "#6baed6",
    "bbr+daps": "#dbdb8d",
    "bbr+sttf": "#8ca252",
    "bbr+dems": "#bd9e5a",
    # hybrid MPTCP (distributed edge learning)
    "hybrid": "#cb181d",
    "hybrid_paper": "#fc9272",
    "drl_mptcp": "#6a51a3",
    "lia": "#08519c",
    "cubic": "#525252",
}


def color(name: str) -> str:
    """The colour of scheduler ``name`` (hex): its entry in :data:`COLORS`,
    else a fixed colour derived from the name's bytes (the same in every
    figure and every run)."""
    if name in COLORS:
        return COLORS[name]
    digest = hashlib.sha256(name.encode()).digest()
    # mid-range components: never near-white (invisible) nor near-black
    r, g, b = (40 + digest[i] % 176 for i in range(3))
    return f"#{r:02x}{g:02x}{b:02x}"


def colors(names) -> list[str]:
    """:func:`color` of each name, in order (for ``boxplot`` patches, bar lists)."""
    return [color(n) for n in names]


__all__ = ["COLORS", "color", "colors"]
