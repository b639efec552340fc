"""``rlvr sft OUT --model M --data FILE``: completion-only SFT of any model on traces, held-out
accuracy, LoRA merged into a from_pretrained folder, checkpoints and resume, clear refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlvr.cli.app import app

runner = CliRunner()


def _traces(tmp_path: Path, n: int = 60) -> Path:
    """What ``rlvr sample --keep all`` writes, for 1-digit sums: a kept right answer, a dropped wrong one."""
    rows = []
    for i in range(n):
        a, b = i % 10, (i * 7) % 10
        prompt = [{"role": "user", "content": f"{a}+{b}"}]
        rows.append(
            {
                "prompt_id": f"p{i}",
                "prompt": prompt,
                "gold": str(a + b),
                "task": "math",
                "completion": f"<answer>{a + b}</answer>",
                "kept": True,
            }
        )
        rows.append(
            {
                "prompt_id": f"p{i}",
                "prompt": prompt,
                "gold": str(a + b),
                "task": "math",
                "completion": f"<answer>{a + b + 1}</answer>",
                "kept": False,
            }
        )
    p = tmp_path / "traces.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_sft_on_traces_learns_the_kept_completions_and_reports_held_out_accuracy(tmp_path: Path) -> None:
    out = tmp_path / "sft"
    r = runner.invoke(
        app,
        [
            "sft",
            str(out),
            "--model",
            "tiny",
            "--data",
            str(_traces(tmp_path)),
            "--steps",
            "120",
            "--batch-size",
            "16",
            "--eval-share",
            "0.2",
            "--eval-tokens",
            "20",
        ],
    )
    assert r.exit_code == 0, r.output
    record = json.loads((out / "sft.json").read_text())
    assert record["finished"] and record["train_rows"] == 48 and record["held_out"] == 12  # whole prompts held out
    assert record["before"]["accuracy"] == 0.0 and record["before"]["statuses"].get("no_answer", 0) > 0.9
    assert record["loss"] < 0.5  # it learnt the kept answers (an untrained model starts near ln(vocab))
    assert record["after"]["statuses"].get("no_answer", 0) < 0.5  # and their format, on held-out prompts
    from transformers import AutoModelForCausalLM

    assert AutoModelForCausalLM.from_pretrained(out) is not None  # OUT is a from_pretrained folder
    assert not (out / "checkpoints").exists()
    r = runner.invoke(app, ["sft", str(out), "--model", "tiny", "--data", str(_traces(tmp_path))])
    assert r.exit_code == 2 and "--resume" in r.output  # never overwrites a finished model


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_lora_checkpoints_and_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    data = _traces(tmp_path, 20)
    out = tmp_path / "lora"
    args = [
        "sft",
        str(out),
        "--model",
        "tiny",
        "--data",
        str(data),
        "--steps",
        "6",
        "--batch-size",
        "4",
        "--lora-r",
        "4",
        "--save-every",
        "3",
        "--eval-share",
        "0",
    ]
    saves: list[dict] = []
    real_save = torch.save

    def killed_at_the_second_save(obj, path, *a, **kw):  # the run dies after its step-3 checkpoint
        saves.append(obj)
        if len(saves) == 2:
            raise KeyboardInterrupt
        return real_save(obj, path, *a, **kw)

    monkeypatch.setattr(torch, "save", killed_at_the_second_save)
    r = runner.invoke(app, args)
    monkeypatch.setattr(torch, "save", real_save)
    assert r.exit_code != 0 and (out / "checkpoints" / "latest").read_text() == "step-3"
    assert saves[0]["step"] == 3 and all("lora_" in k for k in saves[0]["model"])  # only the adapters
    assert not json.loads((out / "sft.json").read_text())["finished"]
    r = runner.invoke(app, [*args[:-2], "--eval-share", "0.1", "--resume"])
    assert r.exit_code == 2 and "eval_share" in _flat(r.output)  # resume only with the same settings
    r = runner.invoke(app, [*args, "--resume"])
    assert r.exit_code == 0, r.output
    assert "resuming from step 3" in _flat(r.output)
    record = json.loads((out / "sft.json").read_text())
    assert record["finished"] and record["trained_steps"] == 6
    assert "base_model_name_or_path" not in json.loads((out / "config.json").read_text())  # LoRA merged
    assert not (out / "checkpoints").exists()
    r = runner.invoke(app, [*args, "--resume"])
    assert r.exit_code == 0 and "finished already" in _flat(r.output)


@pytest.mark.parametrize(
    "extra,why",
    [
        (["--model", "tiny"], "--model and --data go together"),
        (["--model", "tiny", "--data", "missing.jsonl"], "missing.jsonl"),
        (["--model", "no/such-model", "--data", "TRACES"], "no/such-model"),
        (["--model", "tiny", "--data", "TRACES", "--dtype", "bfloat16"], "model settings"),
    ],
)
def test_refusals_before_any_training(tmp_path: Path, extra: list[str], why: str) -> None:
    data = str(_traces(tmp_path, 4))
    r = runner.invoke(app, ["sft", str(tmp_path / "o"), *[data if x == "TRACES" else x for x in extra]])
    assert r.exit_code == 2 and why in _flat(r.output), r.output


def test_the_tiny_warm_up_still_works_without_model_or_data(tmp_path: Path) -> None:
    out = tmp_path / "warm"
    r = runner.invoke(app, ["sft", str(out), "--steps", "20", "--target", "0.99"])
    assert r.exit_code == 0, r.output
    assert "sft: 20 steps" in _flat(r.output) and "held-out greedy accuracy" in _flat(r.output)
    from rlvr.models.load import load_model

    model, tok = load_model(str(out))  # a from_pretrained folder the training configs can name
    assert model.config.model_type == "qwen2" and tok.eos_token_id is not None
