"""Rewards: plain ``fn(completions, **columns) -> list[float | None]`` callables, by name.

>>> from rlvr.rewards import build_reward
>>> build_reward("accuracy")([r"so \\boxed{4}"], solution=["4"])
[1.0]
"""

from rlvr.rewards.accuracy import Accuracy
from rlvr.rewards.base import (
    REWARDS,
    Reward,
    Scored,
    available_rewards,
    build_reward,
    completion_text,
    register,
    register_alias,
)
from rlvr.rewards.code import Code, CodePassRate
from rlvr.rewards.combine import DEFAULT_WEIGHTS, Total
from rlvr.rewards.format import Format
from rlvr.rewards.instruction import Instruction
from rlvr.rewards.language import LanguageConsistency
from rlvr.rewards.length import Cosine
from rlvr.rewards.partial import PartialScore
from rlvr.rewards.process import Process
from rlvr.rewards.repetition import Repetition
from rlvr.rewards.schedule import Schedule
from rlvr.rewards.steps import ReasoningSteps
from rlvr.rewards.verdicts import clear_cache as clear_verdict_cache

__all__ = [
    "DEFAULT_WEIGHTS",
    "REWARDS",
    "Accuracy",
    "Code",
    "CodePassRate",
    "Cosine",
    "Format",
    "Instruction",
    "LanguageConsistency",
    "PartialScore",
    "Process",
    "ReasoningSteps",
    "Repetition",
    "Reward",
    "Schedule",
    "Scored",
    "Total",
    "available_rewards",
    "build_reward",
    "clear_verdict_cache",
    "completion_text",
    "register",
    "register_alias",
]
