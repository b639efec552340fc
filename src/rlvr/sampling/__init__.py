"""Sampling, shared by every engine: the rollout batch, the decode loop (draws, the model's cached
forward, grammar masks with jump-forward, tool turns, row compaction), multi-turn episodes and greedy
held-out evaluation. rlvr's engine, the TRL adapter, trace sampling and the pipeline import it;
nothing here imports an engine."""

from rlvr.sampling.batch import FinishReason, RolloutBatch
from rlvr.sampling.decode import generate
from rlvr.sampling.draws import sample_tokens
from rlvr.sampling.evaluate import greedy_eval
from rlvr.sampling.steppers import stop_ids_of
from rlvr.sampling.turns import Turns

__all__ = ["FinishReason", "RolloutBatch", "Turns", "generate", "greedy_eval", "sample_tokens", "stop_ids_of"]
