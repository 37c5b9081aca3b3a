"""Meta-learning over the network-condition grid: the grid of path conditions
(:mod:`metalearning.grid`) and the bank of one meta-model per cell
(:mod:`metalearning.bank`)."""

from metalearning.bank import (
    BANK_FORMAT,
    BANK_FORMAT_VERSION,
    MetaModelBank,
    load_bank,
    read_bank_header,
)
from metalearning.grid import ConditionGrid, PathCondition, conditions_of_scenario

__all__ = [
    "ConditionGrid",
    "PathCondition",
    "conditions_of_scenario",
    "MetaModelBank",
    "load_bank",
    "read_bank_header",
    "BANK_FORMAT",
    "BANK_FORMAT_VERSION",
]
