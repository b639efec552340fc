"""rlvr: reinforcement learning with verifiable rewards.

The verifier core imports without torch; training lives behind the ``train`` extra.
"""

from rlvr.types import Method, Status, Verdict
from rlvr.verify import verify_math, verify_math_batch

__all__ = ["Method", "Status", "Verdict", "verify_math", "verify_math_batch"]
__version__ = "0.1.0"
