"""The GRPO objective, pure and engine-neutral: group advantages, the clipped-ratio loss and its
normalisers, and the off-policy correction (behaviour vs proximal log-probs).

Every engine (rlvr's own, the TRL adapter, verl's estimator) and the failure step import these; they
import no engine. What each aggregation divides by, and the invariances that follow, are in
:mod:`rlvr.algo.loss`.
"""

from rlvr.algo.advantages import (
    Scale,
    flat_groups,
    group_advantages,
    indexed_group_advantages,
    normalized_sum,
    scale_of,
    zero_std_fraction,
)
from rlvr.algo.correction import Correction, CorrectionSettings, correction, mismatch
from rlvr.algo.loss import AGGREGATIONS, LossStats, Normalizer, k3_kl, policy_loss, register_aggregation, token_logprobs

__all__ = [
    "AGGREGATIONS",
    "Correction",
    "CorrectionSettings",
    "LossStats",
    "Normalizer",
    "Scale",
    "correction",
    "flat_groups",
    "group_advantages",
    "indexed_group_advantages",
    "k3_kl",
    "mismatch",
    "normalized_sum",
    "policy_loss",
    "register_aggregation",
    "scale_of",
    "token_logprobs",
    "zero_std_fraction",
]
