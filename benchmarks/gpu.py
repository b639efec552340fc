"""On a GPU: rlvr's sampler against transformers' ``generate`` (what TRL samples with, without vLLM).

Part one of the GPU benchmark (the GPU issue's most important figure first): decoding throughput and
peak memory, each arm on the same random-weight model, prompts and precision, in one process:

* ``hf-generate``: ``model.generate`` (sampling, the KV cache transformers keeps), as TRL calls it;
* ``rlvr-forward``: rlvr's sampler through the model's own forward (``fast=False``);
* ``rlvr-lean``: rlvr's lean decoder (``models/fast_decode.py``);
* ``rlvr-lean-graph``: that step recorded once per batch size as a CUDA graph and replayed
  (``cuda_graphs=True``, ``models/graphed.py``; rows that end dropped by power-of-two buckets; the
  decode loop waits on the device every 8 steps, ``sampling/plain.py``); recording is in the time;
* ``rlvr-lean-static``: the lean decoder's static one-token step uncaptured (``static_cache=True``).

Shapes: random Qwen2 models at Qwen2.5-0.5B and -1.5B dimensions with SmolLM2's 49,152-token
vocabulary (0.40B, 1.39B parameters, as in the GPU issue), 16 prompts x 8 completions of 256 new
tokens after a 64-token prompt; no row stops early (no stop token), so every arm makes the same
tokens. On CUDA the arms run in bfloat16 (the lean decoder's bfloat16 weight copy; ``generate`` and
the model's forward under autocast); on a CPU in float32 (``--quick``: a tiny model, 2 x 8 rows of
32 tokens: it checks the script, not a figure). Each arm is warmed up once, then timed; an arm that
runs out of memory is recorded as such; arms past ``--budget-s`` are skipped and say so.

Part two, a training step (``--part train``; ``all`` runs both): seconds per step (the median of
steps 2 on) and peak memory of rlvr's engine (its defaults, ``model.autocast: bf16`` on CUDA), TRL's
``GRPOTrainer`` (``bf16=True``) and rlvr's ``FailureAwareGRPOTrainer`` on TRL, the same model, prompts,
batch and reward (rlvr's ``repetition`` reward, which differs between completions so every group
learns), full fine-tuning; each arm in a process of its own under ``--arm-timeout-s`` (an arm out of
memory, or one that stalls, is recorded as such and the others go on).

Part three, learning (``--part learn``): the shared tiny warmed-up model (``../shared/bench/trainer``,
carried as ``.gpu/shared`` by the kit) trained ``--learn-steps`` steps by rlvr's engine on the
device, with its default step and with ``rollout.cuda_graphs`` (``benchmarks/adapters/rlvr_grpo.py``,
the shared judge before and after): the tiny model learns on CUDA as on CPU.

Bars (a GPU run decides them): rlvr's sampler (its faster lean arm) makes >= 5x ``generate``'s
tokens per second at each shape; rlvr's engine peaks at <= 0.6x TRL's memory; the TRL adapter takes
<= 1.1x TRL's seconds per step. Results ``benchmarks/results/gpu.json`` with the device's name.

    python benchmarks/gpu.py [--part sampling|train|learn|all] [--shapes 0.5b 1.5b] [--tokens 256]
                             [--budget-s 420] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from results import Bar, report, src_path

sys.path.insert(0, src_path())

#: Qwen2 dimensions (hidden, layers, heads, kv heads, intermediate) of the issue's two shapes, and a
#: tiny one for a CPU check of the script.
SHAPES = {
    "0.5b": (896, 24, 14, 2, 4864),
    "1.5b": (1536, 28, 12, 2, 8960),
    "tiny": (64, 2, 4, 2, 128),
}
ARMS = ("hf-generate", "rlvr-lean-graph", "rlvr-lean", "rlvr-lean-static", "rlvr-forward")
KIT_TOKENIZER = ROOT / ".gpu" / "smollm2-tokenizer"


def device_name(torch: Any) -> str:
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    from rlvr.runtime import cpu_report

    return cpu_report()


def tokenizer(path: str | None) -> Any:
    """SmolLM2's tokenizer (carried to the GPU machine by ``../shared/gpu/kit.sh``), else rlvr's tiny one."""
    from transformers import AutoTokenizer

    from rlvr.models.tiny import build_tokenizer

    where = Path(path) if path else KIT_TOKENIZER
    tok = AutoTokenizer.from_pretrained(str(where)) if where.exists() else build_tokenizer()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def model_of(torch: Any, shape: str, tok: Any, device: Any) -> Any:
    """A random-weight Qwen2 of ``shape`` over ``tok``'s vocabulary (rlvr's model builder)."""
    from rlvr.models.tiny import build_model

    hidden, layers, heads, kv, ffn = SHAPES[shape]
    model = build_model(tok, arch="qwen2", hidden=hidden, layers=layers, heads=heads, kv_heads=kv, ffn=ffn, seed=0)
    return model.to(device).eval()


def arm(torch: Any, name: str, model: Any, tok: Any, prompts: list[list[int]], group: int, tokens: int, bf16: bool):
    """Seconds to sample ``group`` completions of ``tokens`` tokens for every prompt with arm ``name``."""
    from rlvr.sampling import generate

    device = next(model.parameters()).device
    dtype = torch.bfloat16 if bf16 else None
    if name == "hf-generate":
        ids = torch.tensor([p for p in prompts for _ in range(group)], device=device)
        autocast = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        with torch.no_grad(), autocast:
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                do_sample=True,
                max_new_tokens=tokens,
                min_new_tokens=tokens,
                pad_token_id=tok.pad_token_id,
                eos_token_id=None,
            )
        return int(out.shape[1] - ids.shape[1]) * len(ids)
    b = generate(
        model,
        tok,
        prompts,
        group_size=group,
        max_new_tokens=tokens,
        generator=torch.Generator(device=device).manual_seed(0),
        fast=name != "rlvr-forward",
        static_cache=name == "rlvr-lean-static",
        cuda_graphs=name == "rlvr-lean-graph",
        dtype=dtype,
        stop_ids=[],
    )
    return int(b.completion_mask.sum())


def measure(torch: Any, shape: str, args: argparse.Namespace, tok: Any, deadline: float) -> dict[str, Any]:
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    model = model_of(torch, shape, tok, device)
    params = sum(p.numel() for p in model.parameters())
    g = torch.Generator().manual_seed(1)
    low = min(100, len(tok) // 2)  # past the special tokens
    prompts = torch.randint(low, len(tok), (args.prompts, args.prompt_len), generator=g).tolist()
    out: dict[str, Any] = {"parameters": params, "rows": args.prompts * args.group, "new_tokens": args.tokens}
    for name in ARMS:
        if time.monotonic() > deadline:
            out[name] = {"skipped": "past --budget-s"}
            continue
        try:
            arm(torch, name, model, tok, prompts[:1], 2, 4, cuda)  # warm-up: kernels, allocator, autotune
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            made = arm(torch, name, model, tok, prompts, args.group, args.tokens, cuda)
            if cuda:
                torch.cuda.synchronize()
            s = time.perf_counter() - t0
            peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
            out[name] = {
                "seconds": s,
                "tokens": made,
                "tokens_per_s": made / s,
                "ms_per_decode_step": 1000 * s / args.tokens,
                "peak_gib": peak,
            }
        except torch.cuda.OutOfMemoryError as e:
            out[name] = {"oom": str(e)[:200]}
        finally:
            if cuda:
                torch.cuda.empty_cache()
        r = out[name]
        if "tokens_per_s" in r:
            mem = f", peak {r['peak_gib']:.1f} GiB" if r["peak_gib"] is not None else ""
            print(
                f"{shape} {name}: {r['tokens_per_s']:.0f} tokens/s, "
                f"{r['ms_per_decode_step']:.1f} ms a decode step{mem}",
                flush=True,
            )
        else:
            print(f"{shape} {name}: {r}", flush=True)
    del model
    return out


TRAINERS = ("rlvr", "trl", "rlvr-on-trl")


def train_child(arm: str, shape: str, args: argparse.Namespace, out: Path) -> None:
    """One training arm, in this (child) process: ``args.steps`` steps, their times and peak memory to ``out``."""
    import json
    import tempfile

    import torch

    from rlvr.rewards import build_reward

    cuda = torch.cuda.is_available()
    if not cuda:
        torch.set_num_threads(1)
    device = torch.device("cuda" if cuda else "cpu")
    tok = tokenizer(args.tokenizer)
    model = model_of(torch, shape, tok, device).train()
    g = torch.Generator().manual_seed(1)
    low = min(100, len(tok) // 2)
    ids = torch.randint(low, len(tok), (args.prompts * args.steps, args.prompt_len), generator=g).tolist()
    texts = tok.batch_decode(ids, skip_special_tokens=True)
    marks: list[float] = []
    work = Path(tempfile.mkdtemp(prefix="rlvr-gpu-"))
    from rlvr.config import load_config

    # one config for every arm: TRL's GRPOConfig is derived from it (rlvr.integrations.trl.grpo_args)
    cfg = load_config(
        None,
        [
            f"run.steps={args.steps}",
            f"run.out_dir={work / 'run'}",
            "run.eval_every=0",
            f"run.save_every={args.steps * 10}",
            f"run.device={device.type}",
            f"model.autocast={'bf16' if cuda else 'none'}",
            f"rollout.prompts_per_step={args.prompts}",
            f"rollout.group_size={args.group}",
            f"rollout.max_new_tokens={args.tokens}",
            "rewards.weights={repetition: 1.0}",
            "optim.lr=1e-6",
        ],
    )
    if arm == "rlvr":
        from rlvr.data import Sample
        from rlvr.engine.async_engine import train_engine

        rows = [Sample(t, "0", "math", f"p{i}") for i, t in enumerate(texts)]
        trainer = train_engine(cfg, model=model, tokenizer=tok, train_rows=rows, eval_rows=[])
        marks.append(time.perf_counter())
        trainer.train(on_step=lambda s, m: marks.append(time.perf_counter()))
    else:
        from datasets import Dataset
        from transformers import TrainerCallback
        from trl import GRPOTrainer

        from rlvr.integrations.trl import FailureAwareGRPOTrainer, grpo_args

        class Marks(TrainerCallback):
            def on_step_begin(self, *a: Any, **k: Any) -> None:
                if not marks:
                    marks.append(time.perf_counter())

            def on_step_end(self, *a: Any, **k: Any) -> None:
                marks.append(time.perf_counter())

        cls = GRPOTrainer if arm == "trl" else FailureAwareGRPOTrainer
        trainer = cls(
            model=model,
            reward_funcs=[build_reward("repetition")],
            args=grpo_args(cfg, use_cpu=not cuda),
            train_dataset=Dataset.from_dict({"prompt": texts}),
            processing_class=tok,
            callbacks=[Marks()],
        )
        trainer.train()
    steps = [b - a for a, b in itertools.pairwise(marks)]
    later = sorted(steps[1:] or steps)
    out.write_text(
        json.dumps(
            {
                "step_s": steps,
                "s_per_step": later[len(later) // 2] if later else None,
                "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
            }
        )
    )


def train_arms(shape: str, args: argparse.Namespace, deadline: float) -> dict[str, Any]:
    """Every training arm at ``shape``, each a child process under ``--arm-timeout-s``."""
    import json
    import subprocess
    import tempfile

    out: dict[str, Any] = {}
    for arm in TRAINERS:
        left = deadline - time.monotonic()
        if left <= 30:
            out[arm] = {"skipped": "past --budget-s"}
            print(f"{shape} {arm}: skipped (past --budget-s)", flush=True)
            continue
        res = Path(tempfile.mkdtemp(prefix="rlvr-gpu-arm-")) / "out.json"
        cmd = [sys.executable, __file__, "--child", arm, "--shapes", shape, "--child-out", str(res)]
        cmd += ["--prompts", str(args.prompts), "--group", str(args.group), "--tokens", str(args.tokens)]
        cmd += ["--prompt-len", str(args.prompt_len), "--steps", str(args.steps)]
        cmd += ["--tokenizer", args.tokenizer] if args.tokenizer else []
        limit = min(args.arm_timeout_s, left)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            out[arm] = {"stalled": f"not done after {limit:.0f} s"}
        else:
            if done.returncode == 0 and res.exists():
                out[arm] = json.loads(res.read_text())
            else:
                tail = (done.stderr or done.stdout)[-600:]
                out[arm] = {"oom" if "OutOfMemoryError" in tail else "failed": tail}
        r = out[arm]
        if r.get("s_per_step") is not None:
            mem = f", peak {r['peak_gib']:.1f} GiB" if r.get("peak_gib") is not None else ""
            print(f"{shape} {arm}: {r['s_per_step']:.2f} s a step{mem}", flush=True)
        else:
            print(f"{shape} {arm}: {next(iter(r))}: {str(next(iter(r.values())))[-200:]}", flush=True)
    return out


LEARNERS = {"rlvr": [], "rlvr-graphs": ["--cuda-graphs"]}


def learn(args: argparse.Namespace, deadline: float) -> dict[str, Any]:
    """The shared tiny model trained by rlvr's engine on this device (each arm a child process of
    ``benchmarks/adapters/rlvr_grpo.py``): held-out accuracy before and after, seconds a step."""
    import json
    import subprocess
    import tempfile

    bench = ROOT.parent / "shared" / "bench" / "trainer" / "models" / "tiny-warm"
    if not bench.is_dir():
        print(f"learn: skipped (no shared tiny model at {bench})", flush=True)
        return {"skipped": f"no shared tiny model at {bench}"}
    out: dict[str, Any] = {"steps": args.learn_steps}
    for name, extra in LEARNERS.items():
        left = deadline - time.monotonic()
        if left <= 10:
            out[name] = {"skipped": "past --budget-s"}
            continue
        log = Path(tempfile.mkdtemp(prefix="rlvr-gpu-learn-"))
        cmd = [sys.executable, str(ROOT / "benchmarks" / "adapters" / "rlvr_grpo.py"), "--log-dir", str(log)]
        cmd += ["--steps", str(args.learn_steps), *extra]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=min(args.arm_timeout_s * 2, left))
        except subprocess.TimeoutExpired:
            out[name] = {"stalled": "past its time"}
            continue
        summary = log / "summary.json"
        if done.returncode != 0 or not summary.exists():
            out[name] = {"failed": done.stderr[-400:]}
        else:
            s = json.loads(summary.read_text())
            out[name] = {
                "acc_before": s["heldout_before"]["acc"],
                "acc_after": s["heldout_after"]["acc"],
                "median_step_s": s["median_step_s"],
            }
        r = out[name]
        print(f"learn {name}: {r}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", nargs="+", default=["0.5b", "1.5b"], choices=sorted(SHAPES))
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--budget-s", type=float, default=420.0, help="arms past this many seconds are skipped")
    ap.add_argument("--tokenizer", help="a tokenizer folder (default: .gpu/smollm2-tokenizer, else rlvr's tiny one)")
    ap.add_argument("--part", choices=["sampling", "train", "learn", "all"], default="all")
    ap.add_argument("--learn-steps", type=int, default=40, help="steps of the tiny model's learning arms")
    ap.add_argument("--steps", type=int, default=4, help="training steps per arm (the first is not timed)")
    ap.add_argument("--arm-timeout-s", type=float, default=150.0, help="a training arm past this has stalled")
    ap.add_argument("--child", choices=TRAINERS, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="a tiny model, 2 x 8 rows of 32 tokens (checks the script)")
    args = ap.parse_args()
    if args.child:
        train_child(args.child, args.shapes[0], args, args.child_out)
        return
    import torch

    if args.quick:
        args.shapes, args.prompts, args.tokens, args.prompt_len, args.steps = ["tiny"], 2, 32, 16, 2
        args.learn_steps = 2
    if not torch.cuda.is_available():
        from rlvr.runtime import setup_torch

        setup_torch(1, 0)
        torch.set_flush_denormal(True)
    deadline = time.monotonic() + args.budget_s
    tok = tokenizer(args.tokenizer)
    figures: dict[str, Any] = {"device": device_name(torch), "torch": torch.__version__, "vocab": len(tok)}
    bars: list[Bar] = []
    for shape in args.shapes:
        if args.part in ("sampling", "all"):
            r = figures[shape] = measure(torch, shape, args, tok, deadline)
            lean = max((r.get(a, {}).get("tokens_per_s", 0.0) for a in ("rlvr-lean", "rlvr-lean-graph")), default=0.0)
            hf = r.get("hf-generate", {})
            if lean and "tokens_per_s" in hf:
                ratio = lean / hf["tokens_per_s"]
                r["lean_over_generate"] = ratio
                bars.append(
                    Bar(f"{shape}: rlvr lean / generate tokens per s", ratio, ">=", 5.0, "x", quick_decides=False)
                )
    for shape in args.shapes:  # the training arms after every sampling figure: the most important first
        if args.part in ("train", "all"):
            t = figures.setdefault(f"{shape} train", train_arms(shape, args, deadline))
            rl, trl, on = t.get("rlvr", {}), t.get("trl", {}), t.get("rlvr-on-trl", {})
            if rl.get("peak_gib") and trl.get("peak_gib"):
                mem = rl["peak_gib"] / trl["peak_gib"]
                bars.append(Bar(f"{shape}: rlvr / TRL peak memory", mem, "<=", 0.6, "x", quick_decides=False))
            if on.get("s_per_step") and trl.get("s_per_step"):
                ratio = on["s_per_step"] / trl["s_per_step"]
                bars.append(Bar(f"{shape}: rlvr-on-TRL / TRL s per step", ratio, "<=", 1.1, "x", quick_decides=False))
    if args.part in ("learn", "all"):
        figures["learn"] = learn(args, deadline)
    print(f"device: {figures['device']}")
    report("gpu", figures, bars, args, quick=args.quick)


if __name__ == "__main__":
    main()
