"""rlvr's run folder for a TRL run: the same files rlvr's engine writes, by the main process.

``metrics.jsonl`` (one line per optimizer step: rlvr's failure metrics of the rollouts that step
trained on, merged with what TRL logged for it), ``rollouts.jsonl`` (every rollout of every
process, with the ``rank`` that produced it; resampled originals flagged ``replaced``),
``quarantine.jsonl`` (written by the failure-aware step), and held-out greedy evaluations
(``eval/accuracy``) every ``eval_every`` steps, computed on every process's share of the rows.
So ``rlvr causes``, ``rlvr report`` and ``rlvr quarantine`` never ask which engine ran.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import gather_object
from transformers import TrainerCallback

from rlvr.diagnostics.step import rollout_record
from rlvr.rewards.base import GOLD_COLUMNS
from rlvr.runs import MetricsLog, RolloutLog
from rlvr.sampling.evaluate import greedy_eval

#: TRL's log names -> the names rlvr's engine logs the same quantity under (the report reads these).
ALIASES = {
    "loss": "loss/policy",
    "clip_ratio/region_mean": "loss/clipfrac",
    "kl": "loss/kl",
    "learning_rate": "lr",
    "completions/clipped_ratio": "completions/truncated_frac",
}


def _gold(row: dict[str, Any]) -> Any:
    return next((row[c] for c in (*GOLD_COLUMNS, "tests", "constraints") if row.get(c) is not None), None)


class RunFolder(TrainerCallback):
    """The callback behind a :class:`FailureAwareGRPOTrainer`'s run folder (see the module docstring)."""

    def __init__(self, trainer: Any, eval_rows: list[Any], eval_every: int, log_rollouts: bool) -> None:
        self.trainer, self.eval_rows, self.eval_every, self.log_rollouts = trainer, eval_rows, eval_every, log_rollouts
        self.main = trainer.accelerator.is_main_process
        self.metrics: MetricsLog | None = None
        self.rollouts: RolloutLog | None = None
        self.pending: dict[int, dict[str, Any]] = {}  # step -> metrics waiting for TRL's log of it
        self.resume_step: int | None = None
        self.last_eval: tuple[int, dict[str, Any]] | None = None
        self.result: dict[str, Any] = {}

    # ------------------------------------------------------------------ what the trainer hands over
    def record_generation(self, trainer: Any, gen: Any, out: dict[str, Any]) -> None:
        """Called on every process after each generation batch (the gathers need all of them)."""

        d = gen.decision
        rank = trainer.accelerator.process_index
        replaced = gather_object([(rank, o, gen.rows[o.row]) for o in gen.replaced])
        step = trainer.state.global_step + 1
        if not self.main:
            return
        lengths = [len(v.text) for v in gen.views]
        m = dict(d.metrics)
        m["failure/resampled"] = float(len(replaced))
        m["completions/mean_chars"] = sum(lengths) / max(len(lengths), 1)
        self.pending[step] = m
        if self.rollouts is not None:
            eps = gen.episodes_all or [None] * len(gen.views)
            recs = [
                rollout_record(
                    v,
                    d.causes[i],
                    prompt=r.get("prompt"),
                    gold=_gold(r),
                    task=r.get("task"),
                    advantage=float(d.advantages[i]),
                    admitted=bool(d.admit[i]),
                    rank=gen.ranks[i],
                    episode=ep,
                )
                for i, (v, r, ep) in enumerate(zip(gen.views, gen.rows_all, eps))
            ]
            recs += [
                rollout_record(
                    o.view,
                    o.cause,
                    prompt=r.get("prompt"),
                    gold=_gold(r),
                    task=r.get("task"),
                    rank=rk,
                    replaced=True,
                    attempt=o.attempt,
                    episode=o.episode,
                )
                for rk, o, r in replaced
            ]
            self.rollouts.log(step, recs)

    # ------------------------------------------------------------------ TrainerCallback
    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        run_dir = self.trainer.run_dir
        if self.main:
            run_dir.mkdir(parents=True, exist_ok=True)
            self.metrics = MetricsLog(run_dir, self.resume_step)
            self.rollouts = RolloutLog(run_dir, self.resume_step) if self.log_rollouts else None
            if self.resume_step is None and (run_dir / "quarantine.jsonl").exists():
                (run_dir / "quarantine.jsonl").unlink()  # a fresh run starts with nobody quarantined
        if self.resume_step is None and self.eval_rows:
            self.result["before"] = self._evaluate(0)

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        step = state.global_step
        for s in [s for s in self.pending if s < step]:  # steps TRL logged nothing for
            self._flush(s)
        if self.eval_every and step % self.eval_every == 0 and self.eval_rows:
            self._evaluate(step)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        if not self.main or not logs:
            return
        step = state.global_step
        line = self.pending.setdefault(step, {})
        for k, v in logs.items():
            line.setdefault(ALIASES.get(k, k), v)
            line.setdefault(k, v)
        if "reward/total/mean" in line or "loss/policy" in line:
            self._flush(step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        for s in sorted(self.pending):
            self._flush(s)
        if self.eval_rows:
            ev = (
                self.last_eval[1]
                if self.last_eval and self.last_eval[0] == state.global_step
                else self._evaluate(state.global_step)
            )
            self.result["after"] = ev
        if self.metrics is not None:
            self.metrics.close()
        if self.rollouts is not None:
            self.rollouts.close()
        self.metrics = self.rollouts = None

    # ------------------------------------------------------------------ pieces
    def _flush(self, step: int) -> None:
        line = self.pending.pop(step, None)
        if line and self.metrics is not None:
            self.metrics.log(step, line)

    def _evaluate(self, step: int) -> dict[str, Any]:
        """Greedy held-out accuracy on every process's share of the rows, summed over processes."""

        t = self.trainer
        acc = t.accelerator
        rows = self.eval_rows[acc.process_index :: acc.num_processes]
        model = acc.unwrap_model(t.model)
        was = model.training
        # episodes: as TRL's tool loop (or the conversation's rollout) renders them, fault-free
        turns_for = t.eval_turns if t.tools or t.conversation is not None else None
        with torch.no_grad():
            ev = (
                greedy_eval(
                    model,
                    t.processing_class,
                    rows,
                    max_new_tokens=t.max_completion_length,
                    constrain=t.eval_constrainer,
                    turns_for=turns_for,
                )
                if rows
                else {"accuracy": 0.0, "truncated": 0.0, "statuses": {}}
            )
        model.train(was)
        parts = gather_object([(len(rows), ev)])
        n = sum(k for k, _ in parts) or 1
        total = {
            "accuracy": sum(k * e["accuracy"] for k, e in parts) / n,
            "truncated": sum(k * e["truncated"] for k, e in parts) / n,
            "statuses": {},
        }
        if turns_for is not None:
            for key in ("tool_rate", "tool_calls"):
                total[key] = sum(k * e.get(key, 0.0) for k, e in parts) / n
        for k, e in parts:
            for s, v in e.get("statuses", {}).items():
                total["statuses"][s] = total["statuses"].get(s, 0.0) + k * v / n
        self.last_eval = (step, total)
        if self.main and self.metrics is not None:
            self.metrics.log(
                step,
                {
                    "eval/accuracy": total["accuracy"],
                    "eval/truncated": total["truncated"],
                    **{f"eval/{s}": v for s, v in total["statuses"].items()},
                    **{f"eval/{k}": total[k] for k in ("tool_rate", "tool_calls") if k in total},
                },
            )
        return total


def checkpoint_step(path: str | Path) -> int | None:
    """The step of a TRL checkpoint folder (``checkpoint-40`` -> 40)."""
    m = re.search(r"checkpoint-(\d+)$", str(Path(path)))
    return int(m.group(1)) if m else None


#: Written last into a checkpoint folder (by rlvr's trainer, after TRL's ``trainer_state.json``):
#: a folder without it was cut off while it was being saved.
STATE_FILE = "rlvr_failure.json"


def last_complete_checkpoint(out: str | Path) -> tuple[Path | None, list[Path]]:
    """The newest ``checkpoint-N`` in ``out`` whose saving finished, and the newer ones that did not
    (a run killed while saving leaves a folder without :data:`STATE_FILE`; resuming from it fails
    in transformers, or would lose the failure step's state)."""
    folders = sorted(
        (p for p in Path(out).iterdir() if p.is_dir() and checkpoint_step(p) is not None),
        key=lambda p: checkpoint_step(p) or 0,
        reverse=True,
    )
    cut: list[Path] = []
    for p in folders:
        if (p / STATE_FILE).is_file() and (p / "trainer_state.json").is_file():
            return p, cut
        cut.append(p)
    return None, cut
