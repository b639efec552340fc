"""rlvr on TRL: ``FailureAwareGRPOTrainer`` (a ``trl.GRPOTrainer`` with rlvr's failure-aware step) and
``train_trl`` (``rlvr train --set engine=trl``). TRL takes rlvr's rewards unchanged as well."""

from rlvr.integrations.trl.from_config import grpo_args, train_trl, trl_dataset
from rlvr.integrations.trl.trainer import FailureAwareGRPOTrainer

__all__ = ["FailureAwareGRPOTrainer", "grpo_args", "train_trl", "trl_dataset"]
