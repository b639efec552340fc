"""The reasoning-gym verifier: a dataset's own ``score_answer``, turned into an rlvr verdict.

The gold is the JSON :mod:`rlvr.data.reasoning_gym` writes (dataset, options, entry). The answer
is the last ``<answer>`` block (reasoning-gym's own ``extract_answer``). Nothing extractable is
``no_answer``; a score of 1 is ``correct``; a partial score is ``wrong`` with ``details["score"]``
(the ``reasoning_gym_score`` reward hands it on); a scorer that raises is ``error`` and one that runs
past the time limit ``timeout``, never ``wrong``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from rlvr.data.reasoning_gym import create
from rlvr.errors import VerifierTimeout
from rlvr.types import Method, Status, Verdict
from rlvr.verify.timeout import time_limit


@lru_cache(maxsize=64)
def _dataset(name: str, options: str) -> Any:

    return create(name, {**json.loads(options), "size": 1})  # the scorer reads the config, not the entries


def verify_reasoning_gym(completion: str, gold: Any, timeout: float | None = None, **_: object) -> Verdict:
    """Score ``completion`` with the gold's dataset (see the module docstring)."""
    try:
        spec = json.loads(gold) if isinstance(gold, str) else gold
        name, options, entry = spec["dataset"], spec.get("options", {}), spec["entry"]
        ds = _dataset(name, json.dumps(options, sort_keys=True))
    except Exception as e:
        return Verdict(Status.BAD_GOLD, reason=f"not a reasoning-gym gold: {str(e)[:120]}", gold=str(gold)[:200])
    from reasoning_gym.utils import extract_answer

    answer = extract_answer(completion)
    shown = str(entry.get("answer", ""))[:200]
    if answer is None or not answer.strip():
        return Verdict(Status.NO_ANSWER, reason="no <answer> block", gold=shown, details={"dataset": name})
    try:
        with time_limit(timeout):
            score = float(ds.score_answer(answer, entry))
    except VerifierTimeout:
        return Verdict(
            Status.TIMEOUT,
            answer,
            reason=f"{name}'s score_answer ran past {timeout} s",
            gold=shown,
            details={"dataset": name},
        )
    except Exception as e:
        return Verdict(
            Status.ERROR,
            answer,
            reason=f"{name}'s score_answer raised {type(e).__name__}: {str(e)[:120]}",
            gold=shown,
            details={"dataset": name},
        )
    details = {"dataset": name, "score": score}
    if score >= 1.0:
        return Verdict(Status.CORRECT, answer, Method.STRUCTURAL, f"{name} scores it 1", shown, details)
    return Verdict(Status.WRONG, answer, Method.STRUCTURAL, f"{name} scores it {score:.3g}", shown, details)
