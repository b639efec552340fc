"""Constrained decoding: the answer grammar (xgrammar or llguidance) masking tokens in the sampling loop."""

from rlvr.decoding.constrain import Constrainer, forced_tokens, from_config
from rlvr.decoding.truncation import Truncation

__all__ = ["Constrainer", "Truncation", "forced_tokens", "from_config"]
