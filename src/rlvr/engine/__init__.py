"""rlvr's own engine: sampling with a KV cache, multi-turn episodes, the GRPO loop, held-out evaluation."""

from rlvr.engine.evaluate import greedy_eval
from rlvr.engine.rollout import RolloutBatch, generate, sample_tokens, stop_ids_of
from rlvr.engine.trainer import GRPOTrainer
from rlvr.engine.turns import Turns

__all__ = ["GRPOTrainer", "RolloutBatch", "Turns", "generate", "greedy_eval", "sample_tokens", "stop_ids_of"]
