"""The maths verifier: answer extraction, normalisation, equivalence."""

from rlvr.verify.math.parse import warm_up
from rlvr.verify.math.verifier import DEFAULT_TIMEOUT, verify_math, verify_math_batch

__all__ = ["DEFAULT_TIMEOUT", "verify_math", "verify_math_batch", "warm_up"]
