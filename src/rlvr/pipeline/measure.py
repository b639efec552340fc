"""One model measured on the pipeline's held-out set: accuracy, the two deaths, truncation, length.

Greedy decoding (unconstrained unless a constrainer is given) through
:func:`rlvr.sampling.evaluate.greedy_eval`, each answer judged by its task's verifier:
``format_deaths`` is the share with no answer to parse, ``verification_deaths`` the share parsed
and wrong.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rlvr.data.tasks import Sample
from rlvr.models.device import lean_paths
from rlvr.sampling.evaluate import greedy_eval


def measure(
    model: Any, tokenizer: Any, samples: Sequence[Sample], *, max_new_tokens: int = 32, constrain: Any = None
) -> dict[str, Any]:
    """``{"accuracy", "format_deaths", "verification_deaths", "truncated", "mean_tokens", "n", "seconds"}``
    (``constrain``: decode under that :class:`rlvr.decoding.constrain.Constrainer`)."""

    t0 = time.perf_counter()
    ev = greedy_eval(
        model,
        tokenizer,
        samples,
        max_new_tokens=max_new_tokens,
        constrain=constrain,
        fast=lean_paths(None, next(model.parameters()).device),
    )
    return {
        "accuracy": ev["accuracy"],
        "format_deaths": ev["statuses"].get("no_answer", 0.0),
        "verification_deaths": ev["statuses"].get("wrong", 0.0),
        "truncated": ev["truncated"],
        "mean_tokens": ev["mean_tokens"],
        "n": ev["n"],
        "seconds": time.perf_counter() - t0,
    }
