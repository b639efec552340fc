"""The code verifier: generated programs run against tests in a namespace sandbox with hard limits
(batches: :func:`rlvr.verify.verify_code_batch`)."""

from rlvr.verify.code.languages import get_language
from rlvr.verify.code.verifier import DEFAULT_CODE_TIMEOUT, verify_code

__all__ = ["DEFAULT_CODE_TIMEOUT", "get_language", "verify_code"]
