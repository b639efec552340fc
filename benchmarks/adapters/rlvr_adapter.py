"""rlvr's maths verifier as a ``../shared/bench/verifier/run.py`` adapter, with rlvr's defaults.

python run.py --verifier /path/to/benchmarks/adapters/rlvr_adapter.py:verify
"""

from rlvr import verify_math
from rlvr.verify.math import warm_up

# What verify_math_batch does too: warm the LaTeX parser once, before the harness
# forks its workers, so each worker starts with the parser's prediction cache filled.
warm_up()


def verify(prediction: str, gold: str) -> bool:
    return verify_math(prediction, gold).correct
