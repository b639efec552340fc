"""rlvr's own engine: the GRPO loop, synchronous or with a sampler process beside the learner. What it
samples with (the decode loop, episodes, held-out evaluation) is :mod:`rlvr.sampling`, which every
engine shares."""

from rlvr.engine.async_engine import AsyncGRPOTrainer, train_engine
from rlvr.engine.trainer import Drawn, GRPOTrainer

__all__ = ["AsyncGRPOTrainer", "Drawn", "GRPOTrainer", "train_engine"]
