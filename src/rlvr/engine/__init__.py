"""rlvr's own engine: the GRPO loop, synchronous or with a sampler process beside the learner. What it
samples with (the decode loop, episodes, held-out evaluation) is :mod:`rlvr.sampling`, which every
engine shares."""

from rlvr.engine.async_engine import AsyncGRPOTrainer, train_engine
from rlvr.engine.draws import Drawn, Draws
from rlvr.engine.trainer import GRPOTrainer

__all__ = ["AsyncGRPOTrainer", "Drawn", "Draws", "GRPOTrainer", "train_engine"]
