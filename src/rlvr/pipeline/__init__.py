"""The R1 pipeline as one command: RL from zero, verified traces, SFT, RL again (``rlvr pipeline``)."""

from rlvr.pipeline.config import PipelineConfig, Stage
from rlvr.pipeline.load import load_pipeline
from rlvr.pipeline.run import StageFailed, run_pipeline

__all__ = ["PipelineConfig", "Stage", "StageFailed", "load_pipeline", "run_pipeline"]
