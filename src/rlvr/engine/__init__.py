"""rlvr's own engine: sampling with a KV cache, multi-turn episodes, the GRPO loop (synchronous, or a
sampler process beside the learner), held-out evaluation."""

from rlvr.engine.async_engine import AsyncGRPOTrainer, train_engine
from rlvr.engine.evaluate import greedy_eval
from rlvr.engine.rollout import RolloutBatch, generate, sample_tokens, stop_ids_of
from rlvr.engine.trainer import Drawn, GRPOTrainer
from rlvr.engine.turns import Turns

__all__ = [
    "AsyncGRPOTrainer",
    "Drawn",
    "GRPOTrainer",
    "RolloutBatch",
    "Turns",
    "generate",
    "greedy_eval",
    "sample_tokens",
    "stop_ids_of",
    "train_engine",
]
