"""Verifiers: each returns a :class:`rlvr.types.Verdict`, never a bare bool."""

from rlvr.verify.math import verify_math, verify_math_batch

__all__ = ["verify_math", "verify_math_batch"]
