"""Score a JSONL file of rollouts: every component and the verdict per row, resumable.

The output is appended chunk by chunk and flushed, so a killed run loses at most
the chunk in flight; ``resume=True`` skips the input lines already in the output
(each output row carries its input ``line``). The input is never written to.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.data.jsonl import BadLine, complete_rows, iter_jsonl
from rlvr.errors import ConfigError
from rlvr.rewards.base import GOLD_COLUMNS
from rlvr.rewards.combine import Total
from rlvr.types import Status

COMPLETION_FIELDS = ("completion", "response", "output", "solution_str", "generated_text")
CHUNK_ROWS = 1024


@dataclass
class ScoreSummary:
    """What a scoring run produced (over the whole output file, resumed rows included)."""

    rows: int = 0
    skipped_resumed: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)
    means: dict[str, float | None] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)


def _pick(row: dict[str, Any], wanted: str | None, defaults: Sequence[str], what: str) -> str:
    if wanted:
        if wanted not in row:
            raise KeyError(f"no {what} field {wanted!r} (fields: {sorted(row)})")
        return wanted
    for name in defaults:
        if name in row:
            return name
    raise KeyError(f"no {what} field: expected one of {', '.join(defaults)} (fields: {sorted(row)})")


def _score_chunk(
    total: Total,
    rows: list[tuple[int, dict[str, Any]]],
    completion_field: str | None,
    gold_field: str | None,
    on_verified: Callable[[int], None] | None,
) -> list[dict[str, Any]]:
    completions, golds, others = [], [], []
    for _, row in rows:
        c = _pick(row, completion_field, COMPLETION_FIELDS, "completion")
        g = _pick(row, gold_field, GOLD_COLUMNS, "gold")
        completions.append(row[c])
        golds.append(row[g])
        others.append({k: v for k, v in row.items() if k not in (c, g)})
    # a run's rollouts.jsonl has a 'step' per row: it is kept in the output, not passed on, where it
    # would collide with breakdown()'s own ``step`` (the weights are those of the first step)
    keys = sorted({k for o in others for k in o} - {"verdicts", "score", "line", "step"})
    columns: dict[str, Any] = {k: [o.get(k) for o in others] for k in keys}
    breakdowns = total.breakdown(completions, gold=golds, _on_verified=on_verified, **columns)
    return [{"line": n, **row, "score": b.to_dict()} for (n, row), b in zip(rows, breakdowns)]


def summarize(rows: Sequence[dict[str, Any]]) -> tuple[dict[str, float | None], dict[str, int]]:
    """Mean of each component and of the total (over rows where it applies), and status counts."""
    sums: dict[str, list[float]] = {}
    statuses: Counter[str] = Counter()
    for row in rows:
        score = row.get("score") or {}
        for name, v in {**(score.get("components") or {}), "total": score.get("total")}.items():
            sums.setdefault(name, [])
            if v is not None:
                sums[name].append(v)
        if score.get("verdict"):
            statuses[score["verdict"]["status"]] += 1
    means = {k: (sum(v) / len(v) if v else None) for k, v in sums.items()}
    return means, {s.value: statuses.get(s.value, 0) for s in Status}


def score_file(
    src: str | Path,
    out: str | Path,
    total: Total,
    *,
    completion_field: str | None = None,
    gold_field: str | None = None,
    resume: bool = False,
    chunk_rows: int = CHUNK_ROWS,
    on_rows: Callable[[int], None] | None = None,
    on_verified: Callable[[int], None] | None = None,
    on_bad_line: Callable[[BadLine], None] | None = None,
) -> ScoreSummary:
    """Score ``src`` into ``out`` (JSONL). See the module docstring for the guarantees.

    Raises:
        ConfigError: ``out`` is ``src``, or exists and ``resume`` is off.
    """
    src, out = Path(src), Path(out)
    if out.resolve() == src.resolve():
        raise ConfigError(f"--out {out} is the input file; rlvr never overwrites its input")
    if out.exists() and not resume:
        raise ConfigError(f"{out} exists: pass --resume to continue it, or remove it to start over")
    done = {r["line"] for r in complete_rows(out) if isinstance(r.get("line"), int)}
    summary = ScoreSummary(skipped_resumed=len(done))
    if done and on_rows is not None:
        on_rows(len(done))
    buffer: list[tuple[int, dict[str, Any]]] = []

    def flush(f: Any) -> None:
        if not buffer:
            return
        good: list[tuple[int, dict[str, Any]]] = []
        for n, row in buffer:  # a row missing its fields is a bad line, reported, never fatal
            try:
                _pick(row, completion_field, COMPLETION_FIELDS, "completion")
                _pick(row, gold_field, GOLD_COLUMNS, "gold")
                good.append((n, row))
            except KeyError as e:
                bad = BadLine(n, str(e).strip("'\""))
                summary.bad_lines.append(bad)
                if on_bad_line:
                    on_bad_line(bad)
        for scored in _score_chunk(total, good, completion_field, gold_field, on_verified) if good else []:
            f.write(json.dumps(scored, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
        if on_rows is not None:
            on_rows(len(buffer))
        buffer.clear()

    with open(out, "a", encoding="utf-8") as f:
        for n, row in iter_jsonl(src):
            if n in done:
                continue
            if isinstance(row, BadLine):
                summary.bad_lines.append(row)
                if on_bad_line:
                    on_bad_line(row)
                if on_rows is not None:
                    on_rows(1)
                continue
            buffer.append((n, row))
            if len(buffer) >= chunk_rows:
                flush(f)
        flush(f)
    rows = complete_rows(out)
    summary.rows = len(rows)
    summary.means, summary.statuses = summarize(rows)
    return summary
