"""Data: rows as :class:`Sample`, synthetic tasks, dataset files and folders, prompts as tokens."""

from rlvr.data.datasets import load_samples, resolve
from rlvr.data.prompts import encode, render
from rlvr.data.reasoning_gym import load as load_reasoning_gym
from rlvr.data.stream import DataStream, default_data
from rlvr.data.tasks import TASKS, Sample, addition_eval, addition_train, arithmetic, countdown

__all__ = [
    "TASKS",
    "DataStream",
    "Sample",
    "addition_eval",
    "addition_train",
    "arithmetic",
    "countdown",
    "default_data",
    "encode",
    "load_reasoning_gym",
    "load_samples",
    "render",
    "resolve",
]
