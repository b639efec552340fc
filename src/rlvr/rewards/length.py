"""``cosine``: correctness scaled by length on a cosine (seed 001; arXiv 2502.03373 App. C.1).

``r = v_min + 0.5 (v_max - v_min) (1 + cos(pi * L / max_len))``. Correct answers go
from ``max_value_correct`` (short) down to ``min_value_correct`` (at ``max_len``);
wrong ones from ``min_value_wrong`` (short wrong answers are punished most) up to
``max_value_wrong``. Lengths beyond ``max_len`` count as ``max_len`` (the cosine
would otherwise turn back up).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from rlvr.errors import ConfigError
from rlvr.rewards.base import Reward, Scored, column, register
from rlvr.rewards.verdicts import row_verdicts
from rlvr.types import Status
from rlvr.verify.math.verifier import DEFAULT_TIMEOUT


def cosine_scale(length: float, max_len: float, v_min: float, v_max: float) -> float:
    """The seed's cosine interpolation: ``v_max`` at length 0, ``v_min`` at ``max_len``."""
    progress = min(max(length, 0.0) / max_len, 1.0)
    return v_min + 0.5 * (v_max - v_min) * (1.0 + math.cos(progress * math.pi))


@register("cosine")
class Cosine(Reward):
    """Length-scaled correctness.

    Args:
        max_len: the length at which the schedule ends (1000 in the seeds).
        min_value_wrong, max_value_wrong: the wrong-answer range (-0.5, -0.1).
        min_value_correct, max_value_correct: the correct-answer range (0.8, 1.0).
        length: ``chars``, or ``tokens`` (the ``completion_ids`` column that TRL
            passes, else ``tokenizer``).
        tokenizer: a Hugging Face tokenizer, for ``length="tokens"`` outside TRL.

    ``no_answer`` counts as wrong; ``bad_gold``, ``timeout`` and ``error`` get ``None``
    (length shaping is meaningless when correctness is unknown).
    """

    name = "cosine"
    needs_verdict = True

    def __init__(
        self,
        *,
        max_len: int = 1000,
        min_value_wrong: float = -0.5,
        max_value_wrong: float = -0.1,
        min_value_correct: float = 0.8,
        max_value_correct: float = 1.0,
        length: Literal["chars", "tokens"] = "chars",
        tokenizer: Any = None,
        strict: bool = False,
        gold_field: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__()
        if max_len <= 0:
            raise ConfigError(f"cosine max_len must be positive, got {max_len}")
        if length not in ("chars", "tokens"):
            raise ConfigError(f"cosine length must be 'chars' or 'tokens', got {length!r}")
        self.max_len = max_len
        self.min_value_wrong, self.max_value_wrong = min_value_wrong, max_value_wrong
        self.min_value_correct, self.max_value_correct = min_value_correct, max_value_correct
        self.length = length
        self._tokenizer = tokenizer
        self.strict, self.gold_field, self.timeout = strict, gold_field, timeout

    def _lengths(self, texts: list[str], columns: Mapping[str, Any]) -> list[int]:
        if self.length == "chars":
            return [len(t) for t in texts]
        ids = column(columns, "completion_ids", len(texts))
        if ids is not None:
            return [len(x) for x in ids]
        if self._tokenizer is None:
            raise ConfigError("cosine length='tokens' needs a completion_ids column or tokenizer=")
        return [len(x) for x in self._tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def value(self, status: Status, length: int) -> float | None:
        """The reward for one verdict status and completion length."""
        if status is Status.CORRECT:
            return cosine_scale(length, self.max_len, self.min_value_correct, self.max_value_correct)
        if status in (Status.WRONG, Status.NO_ANSWER):
            # bounds swapped: v(0) = min_value_wrong, v(max_len) = max_value_wrong
            return cosine_scale(length, self.max_len, self.max_value_wrong, self.min_value_wrong)
        return None

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        verdicts = row_verdicts(texts, columns, gold_field=self.gold_field, strict=self.strict, timeout=self.timeout)
        lengths = self._lengths(texts, columns)
        return [Scored(self.value(v.status, n), v, {"length": n}) for v, n in zip(verdicts, lengths)]
