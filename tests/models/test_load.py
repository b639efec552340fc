"""Loading models: local folders round-trip exactly; dtypes, devices, gradient checkpointing, LoRA."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pathlib import Path

from rlvr.config import ModelConfig, load_config
from rlvr.models.load import load_model

ROOT = Path(__file__).resolve().parents[2]


def test_saved_tiny_folder_round_trips(tmp_path):
    model, tok = load_model(ModelConfig(hidden=32, layers=1, heads=2))
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    m2, t2 = load_model(ModelConfig(name=str(tmp_path)))
    text = "Q: 12+7="
    assert t2(text)["input_ids"] == tok(text)["input_ids"]  # the space survives the reload
    assert t2.apply_chat_template([{"role": "user", "content": "1+2"}], tokenize=False) == "<bos>Q:1+2="
    for k, v in model.state_dict().items():
        assert torch.equal(v, m2.state_dict()[k])


def test_unknown_model_name():
    from rlvr.errors import ConfigError

    with pytest.raises(ConfigError, match="neither 'tiny', a named model"):
        load_model(ModelConfig(name="no/such/folder"))


def test_lora_trains_only_adapters(tmp_path):
    pytest.importorskip("peft")
    from rlvr.config import LoraConfig

    model, _ = load_model(ModelConfig(hidden=32, layers=1, heads=2, lora=LoraConfig(r=2, alpha=4)))
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)


def test_bfloat16_weights_with_lora_keep_the_trained_adapters_in_float32():
    pytest.importorskip("peft")
    from rlvr.config import LoraConfig

    model, _ = load_model(ModelConfig(hidden=32, layers=1, heads=2, dtype="bfloat16", lora=LoraConfig(r=2, alpha=4)))
    trained = {p.dtype for p in model.parameters() if p.requires_grad}
    frozen = {p.dtype for p in model.parameters() if not p.requires_grad}
    assert trained == {torch.float32} and frozen == {torch.bfloat16}


def test_gradient_checkpointing_is_switched_on_and_still_gives_gradients():
    model, tok = load_model(ModelConfig(hidden=32, layers=2, heads=2, gradient_checkpointing=True))
    assert any(getattr(m, "gradient_checkpointing", False) for m in model.modules())
    model.train()
    ids = torch.tensor([tok("Q:1+2=")["input_ids"]])
    model(input_ids=ids, labels=ids).loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_the_warm_up_folder_the_example_config_names_says_what_to_run_first(tmp_path, monkeypatch):
    from rlvr.errors import ConfigError

    monkeypatch.chdir(tmp_path)  # a fresh clone: no runs/warm yet
    cfg = load_config(ROOT / "configs" / "addition-tiny.yaml", [])
    with pytest.raises(ConfigError, match=r"run `rlvr sft runs/warm` first"):
        load_model(cfg.model)


def test_a_model_for_sampling_is_found_however_the_user_names_it(tmp_path):
    """rlvr sample / rlvr sft --model: a run folder, its checkpoints, one checkpoint, a folder."""
    from rlvr.engine.trainer import GRPOTrainer
    from rlvr.errors import ConfigError
    from rlvr.models.load import load_for_inference, model_source

    run = tmp_path / "run"
    cfg = load_config(
        None,
        [
            f"run.out_dir={run}",
            "run.steps=2",
            "run.save_every=1",
            "run.eval_every=0",
            "rollout.prompts_per_step=2",
            "rollout.group_size=2",
            "rollout.max_new_tokens=8",
            "optim.lr=1e-2",
        ],
    )
    GRPOTrainer(cfg).train()
    final, _, what = load_for_inference(str(run))
    assert "final model" in what
    step1, _, what1 = load_for_inference(str(run / "checkpoints" / "step-1"))
    latest, _, what2 = load_for_inference(str(run / "checkpoints"))
    assert "step 1" in what1 and "step 2" in what2
    p = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(latest.state_dict()[p], final.state_dict()[p])  # the last checkpoint is the final model
    saved = torch.load(run / "checkpoints" / "step-1" / "state.pt", weights_only=False)["model"]
    assert torch.equal(step1.state_dict()[p], saved[p])  # the checkpoint's own weights
    assert model_source(str(run)) == str(run / "model")
    with pytest.raises(ConfigError, match="an rlvr training checkpoint"):
        model_source(str(run / "checkpoints" / "step-1"))  # fine-tuning starts from a whole model
    with pytest.raises(ConfigError, match=r"config\.yaml"):
        (tmp_path / "loose" / "step-3").mkdir(parents=True)
        import shutil

        shutil.copy(run / "checkpoints" / "step-1" / "state.pt", tmp_path / "loose" / "step-3" / "state.pt")
        load_for_inference(str(tmp_path / "loose" / "step-3"))
