"""Path traces: one internal representation, many file formats, synthetic generators.

Units: capacity in bytes/s (generators and format options take Mbit/s),
times in s, delay one-way in s, loss as a probability. The shipped files'
train / validation / test split: :mod:`envs.traces.split`; the guard that
keeps test files out of anything that learns: :mod:`envs.traces.guard`.
"""

from envs.traces.base import CapacityTrace, PathTrace, StepSeries
from envs.traces.catalog import data_dir, list_traces, resolve_trace_path, traces_dir
from envs.traces.guard import training_reads
from envs.traces.loaders import TRACE_FORMATS, detect_format, load_trace
from envs.traces.split import split_of
from envs.traces.synthetic import constant, from_stats, gaussian_rate, mmwave_blockage

__all__ = [
    "CapacityTrace",
    "StepSeries",
    "PathTrace",
    "load_trace",
    "detect_format",
    "TRACE_FORMATS",
    "constant",
    "gaussian_rate",
    "mmwave_blockage",
    "from_stats",
    "data_dir",
    "traces_dir",
    "resolve_trace_path",
    "list_traces",
    "split_of",
    "training_reads",
]
