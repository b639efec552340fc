"""The maths verifier: answer extraction, normalisation, equivalence.

Batches in worker processes: :func:`rlvr.verify.verify_math_batch`.
"""

from rlvr.verify.math.verifier import DEFAULT_TIMEOUT, verify_math, warm_up

__all__ = ["DEFAULT_TIMEOUT", "verify_math", "warm_up"]
