"""Verifiers: each returns a :class:`rlvr.types.Verdict`, never a bare bool.

One verifier per task (:func:`get_verifier`, :func:`register_verifier`); :func:`verify` picks it by
the row's task, :func:`verify_many` runs many rows in worker processes with hard deadlines.
"""

from rlvr.verify.code import verify_code
from rlvr.verify.instruction import verify_instruction
from rlvr.verify.math import verify_math
from rlvr.verify.mcq import verify_mcq
from rlvr.verify.registry import (
    available_tasks,
    canonical_task,
    get_verifier,
    register_verifier,
    verify,
    verify_code_batch,
    verify_many,
    verify_math_batch,
)

__all__ = [
    "available_tasks",
    "canonical_task",
    "get_verifier",
    "register_verifier",
    "verify",
    "verify_code",
    "verify_code_batch",
    "verify_instruction",
    "verify_many",
    "verify_math",
    "verify_math_batch",
    "verify_mcq",
]
