"""Run a pipeline: each unfinished stage's command in order, its model measured, the report at the end."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlvr.config import DecodingConfig, load_config
from rlvr.data.datasets import load_samples
from rlvr.data.jsonl import complete_rows
from rlvr.decoding.constrain import from_config
from rlvr.errors import RlvrError
from rlvr.models.load import load_for_inference
from rlvr.pipeline.config import PipelineConfig
from rlvr.pipeline.measure import measure
from rlvr.pipeline.report import plot, rows
from rlvr.pipeline.stages import TRACES, command, finished, mark_finished, produced_model, stage_dir
from rlvr.traces import summarize


class StageFailed(RlvrError):
    """A stage's command exited with an error (what it printed says why; the stages before it are kept)."""


def start_model(cfg: PipelineConfig) -> str:
    """The model the first stage starts from."""
    first = cfg.stages[0]
    if first.model is not None:
        return first.model

    return load_config(first.config, list(first.set)).model.name


def held_out(cfg: PipelineConfig) -> list[Any]:
    """The pipeline's held-out set (``eval.data``, its first ``eval.size`` rows)."""

    held = load_samples(cfg.eval.data)
    return held[: cfg.eval.size] if cfg.eval.size else held


def measure_model(spec: str, cfg: PipelineConfig, held: list[Any]) -> dict[str, Any]:
    """``spec`` on the held-out set ``held`` (:mod:`rlvr.pipeline.measure`)."""

    model, tok, _ = load_for_inference(spec)
    out = measure(model, tok, held, max_new_tokens=cfg.eval.max_new_tokens)
    if cfg.eval.constrain != "none":
        cons = from_config(
            DecodingConfig(constrain=cfg.eval.constrain, answer=cfg.eval.answer),
            tok,
            model.get_output_embeddings().weight.shape[0],
        )
        out["constrained"] = measure(model, tok, held, max_new_tokens=cfg.eval.max_new_tokens, constrain=cons)
    return out


def sampled(traces: Path, k: int | None) -> dict[str, Any]:
    """pass@1, pass@K and kept rows of a sample stage's traces (all tasks together)."""

    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in complete_rows(traces):
        groups[r.get("prompt_id", "")].append(r)
    per_task = summarize(groups.values()).values()
    prompts, n = sum(t.prompts for t in per_task), sum(t.completions for t in per_task)
    return {
        "prompts": prompts,
        "completions": n,
        "k": k or (n // max(prompts, 1)),
        "pass_at_1": sum(t.correct for t in per_task) / max(n, 1),
        "pass_at_k": sum(t.solved_prompts for t in per_task) / max(prompts, 1),
        "kept": sum(t.kept for t in per_task),
    }


def run_pipeline(
    cfg: PipelineConfig, *, echo: Callable[[str], None] = print, python: str = sys.executable
) -> list[dict[str, Any]]:
    """Run every stage not finished yet (in order), then write ``report.json`` and ``pipeline.png``.

    Returns one record per stage (and one for the starting model): what ran, its wall time, its
    model's held-out figures, a sample stage's pass@K and kept rows.

    Raises:
        StageFailed: a stage's command failed; the finished stages stay finished, a re-run goes on
            from the failed one (its command resumes what it had written).
    """
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = out / "start.json"
    held = held_out(cfg)  # loaded once: every model is measured on these rows
    if not start.exists():
        spec = start_model(cfg)
        echo(f"measuring the starting model ({spec}) on {cfg.eval.data}")
        begin = {"stage": f"start ({spec})", "kind": "model", "measured": measure_model(spec, cfg, held)}
        start.write_text(json.dumps(begin, indent=1))
    records = [json.loads(start.read_text())]
    for i, stage in enumerate(cfg.stages, 1):
        done = finished(cfg, stage)
        if done is not None:
            echo(f"[{i}/{len(cfg.stages)}] {stage.name}: finished already ({stage_dir(cfg, stage)})")
            records.append(done)
            continue
        argv = command(cfg, stage)
        echo(f"[{i}/{len(cfg.stages)}] {stage.name} ({stage.kind}): rlvr {shlex.join(argv)}")
        t0 = time.perf_counter()
        rc = subprocess.call([python, "-m", "rlvr", *argv])
        if rc != 0:
            raise StageFailed(
                f"stage {stage.name!r} failed (exit {rc}); run `rlvr pipeline` again to continue "
                f"from it, the stages before it are kept"
            )
        record: dict[str, Any] = {
            "stage": stage.name,
            "kind": stage.kind,
            "command": ["rlvr", *argv],
            "seconds": time.perf_counter() - t0,
        }
        model = produced_model(cfg, stage)
        if model is not None:
            record["measured"] = measure_model(model, cfg, held)
        else:
            record["sampled"] = sampled(stage_dir(cfg, stage) / TRACES, stage.args.get("per_prompt"))
        mark_finished(cfg, stage, record)
        records.append(record)

    (out / "report.json").write_text(json.dumps({"stages": rows(records), "eval": cfg.eval.model_dump()}, indent=1))
    plot(records, out / "pipeline.png")
    return records
