"""reasoning-gym's procedural datasets as a data source.

``reasoning-gym:<dataset>[,<dataset>...][?size=N&seed=S&<option>=<value>...]`` in ``data.path``,
``rlvr sample --data`` or an evaluation set.

The ``reasoning-gym`` package (offline; ``pip install 'rlvr[tasks]'``) builds ~100 tasks (chain sums,
graph colouring, sudoku, ...) from a seed. Each entry becomes a :class:`Sample` of task
``reasoning_gym/<dataset>`` (death causes are tabled per dataset) whose gold is JSON naming the
dataset, its options and the entry itself, so the verifier (:mod:`rlvr.verify.reasoning_gym`)
scores it with that dataset's own ``score_answer``.
Options other than ``size`` and ``seed`` go to the dataset's config (numbers and booleans parsed).
Several datasets (comma-separated) give ``size`` entries each, interleaved: mixed-task training.
"""

from __future__ import annotations

import json
from typing import Any

from rlvr.data.specs import split_spec
from rlvr.data.tasks import Sample
from rlvr.errors import DataError

SCHEME = "reasoning-gym:"
TASK = "reasoning_gym"
#: rlvr's answer format, asked for after the dataset's own question.
INSTRUCTION = "Give your final answer inside <answer></answer> tags."


def parse_spec(spec: str) -> tuple[list[str], dict[str, Any]]:
    """``(["chain_sum"], {"size": 8, "seed": 1, "min_terms": 2})`` from ``reasoning-gym:chain_sum?size=8&...``.

    Raises:
        DataError: not a ``reasoning-gym:`` spec, or no dataset named.
    """
    if not spec.startswith(SCHEME):
        raise DataError(f"{spec!r} is not a reasoning-gym source ({SCHEME}<dataset>?size=N&seed=S)")
    name, opts = split_spec(spec, SCHEME)
    if not name:
        raise DataError(f"{spec!r}: name a dataset, e.g. {SCHEME}chain_sum?size=100&seed=0")
    return [n.strip() for n in name.split(",") if n.strip()], opts


def _module() -> Any:
    try:
        import reasoning_gym
    except ImportError:
        raise DataError(
            "reasoning-gym sources need the reasoning-gym package: pip install 'rlvr[tasks]' (make test installs it)"
        ) from None
    return reasoning_gym


def create(name: str, options: dict[str, Any]) -> Any:
    """The reasoning-gym dataset ``name`` built with ``options`` (size and seed included).

    Raises:
        DataError: an unknown dataset (the message lists some known ones) or an option its config refuses.
    """
    rg = _module()
    from reasoning_gym.factory import DATASETS

    if name not in DATASETS:
        known = sorted(DATASETS)
        raise DataError(f"reasoning-gym has no dataset {name!r}; {len(known)} known, e.g. {', '.join(known[:12])}")
    try:
        return rg.create_dataset(name, **options)
    except (TypeError, ValueError, AssertionError) as e:
        raise DataError(f"reasoning-gym dataset {name!r} refused options {options}: {e}") from None


def gold_of(name: str, options: dict[str, Any], entry: dict[str, Any]) -> str:
    """The JSON gold that lets the verifier score ``entry`` with its own dataset."""
    return json.dumps({"dataset": name, "options": options, "entry": entry}, default=str, ensure_ascii=False)


def load(spec: str, *, system_prompt: str | None = None, **_: Any) -> list[Sample]:
    """Samples of a ``reasoning-gym:`` spec (default 100 entries per dataset, seed 0)."""
    names, opts = parse_spec(spec)
    opts = {"size": 100, "seed": 0, **opts}
    per: list[list[Sample]] = []
    for name in names:
        ds = create(name, opts)
        rows = []
        for i in range(len(ds)):
            entry = ds[i]
            msgs = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [
                {"role": "user", "content": f"{entry['question']}\n\n{INSTRUCTION}"}
            ]
            rows.append(
                Sample(
                    prompt=msgs, gold=gold_of(name, opts, entry), task=f"{TASK}/{name}", id=f"{name}-{opts['seed']}-{i}"
                )
            )
        per.append(rows)
    return [s for group in zip(*per, strict=True) for s in group]
