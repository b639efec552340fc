"""rlvr's maths verifier as a ``../shared/bench/verifier/run.py`` adapter, with rlvr's defaults.

    python run.py --verifier /path/to/benchmarks/adapters/rlvr_adapter.py:verify
"""

from rlvr import verify_math
from rlvr.verify.math.parse import latex_to_sympy

latex_to_sympy(r"\frac{x}{2}")  # load the LaTeX grammar before the harness forks its workers


def verify(prediction: str, gold: str) -> bool:
    return verify_math(prediction, gold).correct
