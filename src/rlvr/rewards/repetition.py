"""``repetition``: n-gram repetition penalty (seed 001), CJK-aware.

Words are whitespace-separated runs, except that each CJK character (Han, kana,
Hangul) is a word of its own: Chinese has no spaces, so whitespace splitting would
make a whole paragraph one "word" and hide its repetition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rlvr.errors import ConfigError
from rlvr.rewards.base import Reward, Scored, register

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")


def words(text: str) -> list[str]:
    """Lower-cased words; each CJK character is one word."""
    return _WORD.findall(text.lower())


def repetition_fraction(text: str, n: int) -> tuple[float, int]:
    """``(1 - unique/total, total)`` over the word n-grams of ``text`` (0.0 when it has none)."""
    w = words(text)
    total = len(w) - n + 1
    if total <= 0:
        return 0.0, 0
    unique = len(set(zip(*(w[i:] for i in range(n)))))  # zip stops at the last full n-gram
    return 1.0 - unique / total, total


@register("repetition", "repetition_penalty")
class Repetition(Reward):
    """``(1 - unique_ngrams / total_ngrams) * max_penalty``, in ``[max_penalty, 0]``.

    Args:
        n: n-gram size (3).
        max_penalty: the penalty for text that is all repetition (-0.1); must be <= 0.
    """

    name = "repetition"

    def __init__(self, *, n: int = 3, max_penalty: float = -0.1) -> None:
        super().__init__()
        if n < 1:
            raise ConfigError(f"repetition n must be >= 1, got {n}")
        if max_penalty > 0:
            raise ConfigError(f"repetition max_penalty must be <= 0 (it is a penalty), got {max_penalty}")
        self.n, self.max_penalty = n, max_penalty

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        out = []
        for t in texts:
            frac, total = repetition_fraction(t, self.n)
            out.append(Scored(frac * self.max_penalty + 0.0 if total else 0.0, info={"ngrams": total}))
        return out
