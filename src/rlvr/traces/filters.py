"""Which sampled traces of one prompt are kept for SFT (R1's step 2: verified traces, filtered).

Pure: rows in, kept flags out. A row is kept when it is verified ``correct`` and passes every
filter that is on: finished (not cut at the token budget: SFT on it would teach stopping
mid-answer), format-valid (the format reward gave 1), language-consistent (the
language-consistency reward gave 1), not an exact duplicate of a kept row, and among the
``max_per_prompt`` shortest of what is left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class KeepRules:
    """What makes a trace worth keeping.

    Attributes:
        max_per_prompt: at most this many kept per prompt (None: no cap).
        shortest_first: when capping, keep the shortest (R1 filters long, rambling traces).
        dedup: drop exact duplicates (the same completion text twice).
        complete_only: only traces that ended on their own (``finish`` is not ``length``).
        format_only: only traces whose ``format`` component is 1.
        language_only: only traces whose ``language_consistency`` component is 1.
    """

    max_per_prompt: int | None = None
    shortest_first: bool = True
    dedup: bool = True
    complete_only: bool = True
    format_only: bool = False
    language_only: bool = False


def why_dropped(row: dict[str, Any], rules: KeepRules) -> str | None:
    """Why one row is not kept on its own merits (None: it may be kept)."""
    v = row.get("verdict") or {}
    if v.get("status") != "correct":
        return f"not correct ({v.get('status', 'no verdict')})"
    if rules.complete_only and row.get("finish") == "length":
        return "truncated"
    comps = row.get("components") or {}
    if rules.format_only and comps.get("format") != 1.0:
        return "format not valid"
    if rules.language_only and comps.get("language_consistency") != 1.0:
        return "language not consistent"
    return None


def keep_flags(rows: Sequence[dict[str, Any]], rules: KeepRules) -> list[str | None]:
    """One entry per row of a prompt: None when kept, else the reason it was not."""
    reasons: list[str | None] = [why_dropped(r, rules) for r in rows]
    seen: set[str] = set()
    order = (
        sorted(range(len(rows)), key=lambda i: len(rows[i].get("completion", "")))
        if rules.shortest_first
        else list(range(len(rows)))
    )
    kept = 0
    for i in order:
        if reasons[i] is not None:
            continue
        text = rows[i].get("completion", "")
        if rules.dedup and text in seen:
            reasons[i] = "duplicate"
            continue
        if rules.max_per_prompt is not None and kept >= rules.max_per_prompt:
            reasons[i] = f"over the cap of {rules.max_per_prompt} per prompt"
            continue
        seen.add(text)
        kept += 1
    return reasons
