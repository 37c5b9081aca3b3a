"""The codes of the native rules (:mod:`envs.rules`): a scheduler's
``native_rule`` name, and the number the connection dispatches on. The
compiled core's modules read the numbers as C integers (their ``.pxd``)."""

#: ``native_rule`` names and their codes (0: none, ``decide`` is called)
MINRTT, ROUND_ROBIN, MINRTT_UNLESS_SLOWER, FIXED_SPLIT, SPLIT_THRESHOLD = 1, 2, 3, 4, 5
MINRTT_UNTIL_TAIL, MODES, COMPLETION_DQN = 6, 7, 8
RULES = {
    "minrtt": MINRTT,
    "rr": ROUND_ROBIN,
    "minrtt_unless_slower": MINRTT_UNLESS_SLOWER,
    "minrtt_until_tail": MINRTT_UNTIL_TAIL,
    "fixed_split": FIXED_SPLIT,
    "split_threshold": SPLIT_THRESHOLD,
    "modes": MODES,
    "completion_dqn": COMPLETION_DQN,
}

__all__ = [
    "COMPLETION_DQN",
    "FIXED_SPLIT",
    "MINRTT",
    "MINRTT_UNLESS_SLOWER",
    "MINRTT_UNTIL_TAIL",
    "MODES",
    "ROUND_ROBIN",
    "RULES",
    "SPLIT_THRESHOLD",
]
