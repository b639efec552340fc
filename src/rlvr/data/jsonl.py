"""Read JSONL line by line, reporting bad lines by number instead of stopping."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BadLine:
    """A line that is not a JSON object."""

    line: int
    problem: str


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | BadLine]]:
    """``(line number, row)`` for each non-blank line; malformed lines come as :class:`BadLine`."""
    with open(path, "rb") as f:
        for n, data in enumerate(f, 1):
            if not data.strip():
                continue
            try:
                raw = data.decode("utf-8")
            except UnicodeDecodeError as e:
                yield n, BadLine(n, f"not UTF-8 (byte {e.start + 1} of the line)")
                continue
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as e:
                yield n, BadLine(n, f"not valid JSON ({e.msg} at column {e.colno})")
                continue
            if not isinstance(row, dict):
                yield n, BadLine(n, f"a JSON {type(row).__name__}, expected an object")
                continue
            yield n, row


def read_log(path: str | Path) -> tuple[list[dict[str, Any]], bool]:
    """Records of a JSONL log that may still be written (or was killed), and whether its last line
    was cut off (then skipped).

    Raises:
        ValueError: a line other than the last is not JSON (names the file and the line).
    """
    rows, torn = [], False
    lines = Path(path).read_bytes().splitlines()
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            if i == len(lines) - 1:  # a writer killed mid-line (a multi-byte character cut too)
                torn = True
                continue
            what = "not UTF-8" if isinstance(e, UnicodeDecodeError) else "not valid JSON"
            raise ValueError(f"{path}:{i + 1}: {what}") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{i + 1}: a JSON {type(row).__name__}, expected an object")
        rows.append(row)
    return rows, torn


def count_lines(path: str | Path) -> int:
    """Non-blank lines (for a progress bar's total)."""
    with open(path, "rb") as f:
        return sum(1 for raw in f if raw.strip())


def complete_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file we are appending to, cutting off a torn last line (a killed writer).

    Everything up to the last newline is kept; a partial line after it is truncated
    so that appending continues on a clean line.
    """
    p = Path(path)
    if not p.exists():
        return []
    data = p.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(p, "r+b") as f:
            f.truncate(end)
            f.flush()
            os.fsync(f.fileno())
    rows = []
    for raw in data[:end].splitlines():
        if raw.strip():
            try:
                row = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows
