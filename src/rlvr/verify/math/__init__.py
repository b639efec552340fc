"""The maths verifier: answer extraction, normalisation, equivalence.

Batches in worker processes: :func:`rlvr.verify.verify_math_batch`.
"""

from rlvr.verify.math.parse import warm_up
from rlvr.verify.math.verifier import DEFAULT_TIMEOUT, verify_math

__all__ = ["DEFAULT_TIMEOUT", "verify_math", "warm_up"]
