"""The demo: warm up a tiny model on addition, then watch GRPO improve it (CPU, minutes).

1. build the tiny Qwen2 model and its character tokenizer locally;
2. ``sft`` it on synthetic addition until its held-out greedy accuracy reaches a
   partial level (the R1 pipeline's cold start);
3. GRPO with the accuracy and format rewards, the output decoded under the answer grammar
   (``decoding.constrain: full``: no format deaths), evaluating on the held-out set;
4. report accuracy before/after and the format/verification death rates, and plot them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlvr.config import load_config
from rlvr.data.tasks import addition_eval, addition_train
from rlvr.engine.trainer import GRPOTrainer
from rlvr.models.tiny import build_model, build_tokenizer
from rlvr.plots import plot_run
from rlvr.report import build_report
from rlvr.runs import read_metrics
from rlvr.runtime import setup_torch
from rlvr.sft import sft


def run_demo(
    out: Path,
    *,
    warm_target: float = 0.3,
    grpo_steps: int = 1500,
    grpo_minutes: float = 3.0,
    seed: int = 0,
    lr: float = 1e-4,
    temperature: float = 1.0,
    on_sft: Callable[[int, float, float], None] | None = None,
    on_step: Callable[[int, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the whole demo into ``out``; returns the accuracies, timings and file paths."""

    setup_torch(1, seed)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer()
    model = build_model(tok, seed=seed)
    held = addition_eval(200)
    warm = sft(
        model,
        tok,
        addition_train(seed + 10_000),
        steps=1000,
        eval_rows=held,
        target_accuracy=warm_target,
        on_eval=on_sft,
    )
    warm_dir = out / "warm"
    model.save_pretrained(warm_dir)
    tok.save_pretrained(warm_dir)
    cfg = load_config(
        None,
        [
            f"model.name={warm_dir}",
            f"run.out_dir={out / 'grpo'}",
            f"run.steps={grpo_steps}",
            f"run.max_minutes={grpo_minutes}",
            "run.eval_every=100",
            "run.save_every=100",
            f"run.seed={seed}",
            f"optim.lr={lr}",
            f"rollout.temperature={temperature}",
            # the output is the answer segment: constrain it whole (format deaths vanish)
            "decoding.constrain=full",
        ],
    )
    trainer = GRPOTrainer(cfg)
    result = trainer.train(on_step=on_step)
    metrics = read_metrics(out / "grpo")
    png = plot_run(metrics, out / "demo.png", "rlvr demo: GRPO on 2-digit addition (tiny Qwen2, CPU)")

    report = build_report([out / "grpo"], out / "report.html")
    grpo_s = sum(m.get("time/step_s", 0.0) for m in metrics)
    return {
        "sft": warm,
        "before": result["before"]["accuracy"],
        "after": result["after"]["accuracy"],
        "steps": result["steps"],
        "grpo_seconds": grpo_s,
        "metrics": metrics,
        "plot": png,
        "report": report,
    }
