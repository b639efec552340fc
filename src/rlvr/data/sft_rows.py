"""Supervised rows for ``rlvr sft --data``: a prompt (chat messages) and the completion to learn.

Two layouts, told apart row by row:

* **prompt / completion** (what ``rlvr sample`` writes, TRL's prompt-completion layout): ``prompt``
  is a string or a list of chat messages; ``completion`` a string (or ``[{"role": "assistant",
  "content": ...}]``). A row with ``kept: false`` (a trace ``rlvr sample`` did not keep) is not
  learnt from; its prompt and gold still serve held-out evaluation (unsolved prompts included).
* **messages** (TRL's conversational layout): the last turn is the assistant's completion, every
  turn before it the prompt.

The gold (the first of ``gold``, ``answer``, ``solution``, ``ground_truth``, ``target``) and
``task`` are kept when present, so held-out rows can be verified. Any row that fits neither layout
is an error naming the file and line: a training set must be whole (``rlvr sample`` writes whole
ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.data.datasets import GOLD_FIELDS, resolve
from rlvr.data.jsonl import BadLine, iter_jsonl
from rlvr.data.tasks import Sample
from rlvr.errors import DataError


def _messages(value: Any, where: str, what: str) -> list[dict[str, str]]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if (
        isinstance(value, list)
        and value
        and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in value
        )
    ):
        return [{"role": m["role"], "content": m["content"]} for m in value]
    raise DataError(f"{where}: {what} must be a string or a list of {{role, content}} messages")


def row_to_sample(row: Any, where: str) -> Sample:
    """One JSONL row as a :class:`Sample` whose ``extra["completion"]`` is the text to learn and
    ``extra["kept"]`` whether to learn it (False: a trace ``rlvr sample`` did not keep)."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: a JSON {type(row).__name__}, expected an object")
    kept = row.get("kept") is not False
    if "messages" in row:
        msgs = _messages(row["messages"], where, "messages")
        if len(msgs) < 2 or msgs[-1]["role"] != "assistant":
            raise DataError(f"{where}: messages must end with an assistant turn (the completion to learn)")
        prompt, completion = msgs[:-1], msgs[-1]["content"]
    elif "prompt" in row and "completion" in row:
        prompt = _messages(row["prompt"], where, "prompt")
        completion = row["completion"]
        if isinstance(completion, list):
            turns = _messages(completion, where, "completion")
            completion = "".join(m["content"] for m in turns if m["role"] == "assistant")
        if not isinstance(completion, str):
            raise DataError(f"{where}: completion must be a string")
    else:
        raise DataError(f"{where}: neither prompt/completion nor messages (keys: {', '.join(sorted(row)) or 'none'})")
    if kept and not completion.strip():
        raise DataError(f"{where}: the completion is empty")
    gold = next((row[k] for k in GOLD_FIELDS if row.get(k) is not None), None)
    return Sample(
        prompt=prompt,
        gold="" if gold is None else str(gold),
        task=str(row.get("task") or "math"),
        id=str(row.get("prompt_id") or row.get("id") or where),
        extra={"completion": completion, "has_gold": gold is not None, "kept": kept},
    )


def load_sft_rows(path: str | Path) -> list[Sample]:
    """Every row of a JSONL file, kept or not (see the module docstring).

    Raises:
        DataError: a missing file, a malformed line or a row that fits no layout (naming the line);
            a file with no usable row.
    """

    p = resolve(path)
    if not p.is_file():
        raise DataError(f"{p}: no such file (rlvr sft --data takes a JSONL file)")
    out: list[Sample] = []
    for n, row in iter_jsonl(p):
        if isinstance(row, BadLine):
            raise DataError(f"{p}:{n}: {row.problem}")
        out.append(row_to_sample(row, f"{p}:{n}"))
    if not any(s.extra["kept"] for s in out):
        raise DataError(f"{p}: no rows to learn from (every row was a trace marked kept: false, or none at all)")
    return out
