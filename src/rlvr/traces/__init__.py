"""Verified traces (R1's step 2): sample K completions per prompt, verify them, keep the good ones."""

from rlvr.traces.filters import KeepRules, keep_flags
from rlvr.traces.sample import SampleRun, SampleSettings, answer_constraint, sample_file, trace_rewards
from rlvr.traces.summary import TaskSummary, summarize

__all__ = [
    "KeepRules",
    "SampleRun",
    "SampleSettings",
    "TaskSummary",
    "answer_constraint",
    "keep_flags",
    "sample_file",
    "summarize",
    "trace_rewards",
]
