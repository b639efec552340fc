"""Rejection sampling with the verifiers (``rlvr sample``): K completions per prompt, each verified.

One JSONL row per completion: ``prompt_id``, ``task``, ``prompt``, ``gold``, ``completion``,
``finish``, ``verdict`` (status, extracted, reason...), ``components`` (every reward), ``total``,
``cause``, ``kept`` and, when not kept, ``dropped`` (why: :mod:`.filters`). ``keep="correct"``
writes only the kept rows (the SFT set), ``"all"`` every row.

Written batch by batch and fsynced; the prompts a batch finished are then appended to
``<out>.done``. ``resume=True`` continues a killed run: the rows of prompts not in ``<out>.done``
(a batch cut short) are dropped from the file first, so no prompt is written twice. A prompt id
that comes twice in the data is sampled once.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from rlvr.config import DecodingConfig
from rlvr.data.jsonl import complete_rows
from rlvr.data.prompts import encode
from rlvr.data.tasks import Sample
from rlvr.decoding.constrain import from_config
from rlvr.diagnostics.causes import cause_of
from rlvr.errors import ConfigError
from rlvr.rewards import Total
from rlvr.sampling import generate
from rlvr.traces.filters import KeepRules, keep_flags
from rlvr.traces.summary import TaskSummary, summarize


@dataclass(frozen=True)
class SampleSettings:
    """How to sample and what to keep (see ``rlvr sample --help``)."""

    per_prompt: int = 8
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    batch_prompts: int = 8
    keep: Literal["all", "correct"] = "all"
    rules: KeepRules = field(default_factory=KeepRules)
    seed: int = 0


def trace_rewards(*, strict: bool = True, think: bool = False, language: bool = False) -> Total:
    """The rewards a trace is judged by: the verifier's accuracy (``strict``: the answer must be where
    the format puts it, no last-number fallback; a row whose gold cannot be read is scored, not
    refused), the format (``think``: with a ``<think>`` block) and, with ``language``, language
    consistency; the last two weigh nothing (they are written, and the keep rules read them)."""
    weights = {"accuracy": 1.0, "format": 0.0} | ({"language_consistency": 0.0} if language else {})
    options: dict[str, dict[str, Any]] = {
        "format": {"think_tag": "think" if think else None},
        "accuracy": {"strict": strict, "bad_gold": None},
    }
    return Total(weights, options=options)


def answer_constraint(model: Any, tokenizer: Any, constrain: str, answer: str, total: Total) -> Any:
    """The grammar ``constrain`` (``none``, ``answer`` or ``full``) puts on the answer (``answer``:
    ``math``, ``integer``, ``json`` or ``text``), as ``decoding.constrain`` would in training; None
    for ``none``.

    Raises:
        ConfigError: a setting the grammar cannot take (named).
    """
    vocab = model.get_output_embeddings().weight.shape[0]
    return from_config(DecodingConfig(constrain=constrain, answer=answer), tokenizer, vocab, total)


@dataclass
class SampleRun:
    """What a run did: per-task figures, rows written, prompts resumed, and where the time went."""

    summaries: dict[str, TaskSummary] = field(default_factory=dict)
    written: int = 0
    resumed_prompts: int = 0
    duplicates: int = 0
    completions: int = 0
    seconds: float = 0.0
    generate_s: float = 0.0
    verify_s: float = 0.0


def done_path(out: Path) -> Path:
    return out.with_name(out.name + ".done")


def _prepare(out: Path, resume: bool) -> set[str]:
    """The prompt ids a previous run finished; rows of unfinished ones are cut from ``out``."""
    marker = done_path(out)
    if out.exists() and not resume:
        raise ConfigError(f"{out} exists: pass --resume to continue it, or remove it to start over")
    if not resume or not out.exists():
        marker.unlink(missing_ok=True)
        return set()
    done = set(marker.read_text(encoding="utf-8").split("\n")) - {""} if marker.exists() else set()

    rows = complete_rows(out)
    keep = [r for r in rows if r.get("prompt_id") in done]
    if len(keep) != len(rows):  # a batch cut short by the kill: its rows go, its prompts are sampled again
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in keep), encoding="utf-8")
        os.replace(tmp, out)
    return done


def sample_file(
    model: Any,
    tokenizer: Any,
    samples: Sequence[Sample],
    out: str | Path,
    total: Total,
    settings: SampleSettings = SampleSettings(),
    *,
    constrain: Any = None,
    fast: bool = True,
    dtype: torch.dtype | None = None,
    resume: bool = False,
    on_progress: Callable[[int, SampleRun], None] | None = None,
) -> SampleRun:
    """Sample, verify, filter and write (see the module docstring).

    Raises:
        ConfigError: ``out`` exists and ``resume`` is off.
    """

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _prepare(out, resume)
    unique = list({s.id: s for s in samples}.values())  # a prompt twice in the data is sampled once
    todo = [s for s in unique if s.id not in done]
    run = SampleRun(resumed_prompts=len(unique) - len(todo), duplicates=len(samples) - len(unique))
    t0 = time.perf_counter()
    groups: list[list[dict[str, Any]]] = []
    k = settings.per_prompt
    with open(out, "a", encoding="utf-8") as f, open(done_path(out), "a", encoding="utf-8") as marks:
        for b in range(0, len(todo), settings.batch_prompts):
            chunk = todo[b : b + settings.batch_prompts]
            gen = torch.Generator(device=next(model.parameters()).device)
            gen.manual_seed(settings.seed * 1_000_003 + run.resumed_prompts + b)
            tg = time.perf_counter()
            batch = generate(
                model,
                tokenizer,
                [encode(tokenizer, s.prompt) for s in chunk],
                group_size=k,
                max_new_tokens=settings.max_new_tokens,
                temperature=settings.temperature,
                top_p=settings.top_p,
                generator=gen,
                fast=fast,
                constrain=constrain,
                dtype=dtype,
            )
            tv = time.perf_counter()
            rows = [s for s in chunk for _ in range(k)]
            cols: dict[str, Any] = {
                "gold": [s.gold for s in rows],
                "task": [s.task for s in rows],
                "prompt": [s.prompt for s in rows],
            }
            for key in {key for s in rows for key in s.extra}:
                cols[key] = [s.extra.get(key) for s in rows]
            scored = total.breakdown(batch.texts, **cols)
            tw = time.perf_counter()
            run.generate_s += tv - tg
            run.verify_s += tw - tv
            for g, s in enumerate(chunk):
                group = []
                for j in range(k):
                    i = g * k + j
                    bd, text, fin = scored[i], batch.texts[i], batch.finish[i]
                    v = bd.verdict
                    cause = cause_of(v.status, fin, text=text).value if v is not None else "invalid"
                    group.append(
                        {
                            "prompt_id": s.id,
                            "task": s.task,
                            "prompt": s.prompt,
                            "gold": s.gold,
                            "sample": j,
                            "completion": text,
                            "finish": fin,
                            "verdict": v.to_dict() if v is not None else None,
                            "components": bd.components,
                            "total": bd.total,
                            "cause": cause,
                        }
                    )
                for row, reason in zip(group, keep_flags(group, settings.rules), strict=True):
                    row["kept"] = reason is None
                    row["dropped"] = reason
                written = group if settings.keep == "all" else [r for r in group if r["kept"]]
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in written)
                run.written += len(written)
                groups.append(group)
            f.flush()
            os.fsync(f.fileno())
            marks.write("".join(f"{s.id}\n" for s in chunk))
            marks.flush()
            run.completions += len(rows)
            run.seconds = time.perf_counter() - t0
            if on_progress is not None:
                on_progress(len(chunk), run)
    run.summaries = summarize(groups)
    run.seconds = time.perf_counter() - t0
    return run
