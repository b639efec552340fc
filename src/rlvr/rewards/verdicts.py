"""Get each row's verdict once, however many rewards need it.

Three sources, in order: a ``verdicts`` column (the caller verified already, e.g.
:class:`rlvr.rewards.combine.Total` or ``rlvr score`` with worker processes); an
in-process cache (TRL calls ``accuracy`` and then ``cosine`` on the same rows: the
second call verifies nothing); the task's verifier.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from rlvr.rewards.base import column, gold_column
from rlvr.types import Status, Verdict
from rlvr.verify.math.verifier import DEFAULT_TIMEOUT
from rlvr.verify.registry import verify_with


@lru_cache(maxsize=32_768)
def _cached(completion: str, gold: str, task: str | None, strict: bool, timeout: float | None) -> Verdict:
    return _verify(completion, gold, task, strict, timeout)


def _verify(completion: str, gold: Any, task: str | None, strict: bool, timeout: float | None) -> Verdict:
    return verify_with(completion, gold, task, strict=strict, timeout=timeout)


def row_verdicts(
    texts: list[str],
    columns: Mapping[str, Any],
    *,
    gold_field: str | None = None,
    strict: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> list[Verdict]:
    """One verdict per completion text (see the module docstring for where it comes from)."""
    n = len(texts)
    given = column(columns, "verdicts", n)
    if given is not None:
        return [v if isinstance(v, Verdict) else Verdict.from_dict(v) for v in given]
    golds = gold_column(columns, n, gold_field)
    tasks = column(columns, "task", n) or [None] * n
    out = []
    for text, gold, task in zip(texts, golds, tasks):
        if gold is None:
            out.append(Verdict(Status.BAD_GOLD, reason="the row has no gold answer"))
        elif isinstance(gold, str):
            out.append(_cached(text, gold, task, strict, timeout))
        else:  # structured golds (test specs) are not hashable: verify directly
            out.append(_verify(text, gold, task, strict, timeout))
    return out


def clear_cache() -> None:
    """Forget cached verdicts (tests; long-lived processes that want the memory back)."""
    _cached.cache_clear()
