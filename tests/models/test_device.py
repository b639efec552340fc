"""run.device and model.dtype: resolved before any model loads; a GRPO step on each device there is."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import load_config
from rlvr.errors import ConfigError
from rlvr.models.device import lean_paths, resolve_device

TINY = [
    "model.hidden=32",
    "model.layers=1",
    "model.heads=2",
    "rollout.prompts_per_step=2",
    "rollout.group_size=4",
    "rollout.max_new_tokens=8",
    "run.steps=1",
    "run.eval_every=0",
    "data.eval_size=4",
]


def test_auto_is_cuda_when_torch_sees_one_else_cpu():
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal cannot be seen")
def test_a_device_the_machine_lacks_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match=r"run.device 'cuda:1': torch .* sees no CUDA device"):
        resolve_device("cuda:1")


def test_a_malformed_device_is_refused_by_the_config():
    with pytest.raises(ConfigError, match=r"run\.device"):
        load_config(None, ["run.device=gpu"])


def test_lean_cpu_paths_are_the_default_on_cpu_only():
    assert lean_paths(None, torch.device("cpu")) and not lean_paths(None, torch.device("cuda"))
    assert lean_paths(True, torch.device("cuda")) and not lean_paths(False, torch.device("cpu"))


def _step(tmp_path, device: str, extra: list[str] = ()) -> tuple:
    from rlvr.engine.trainer import GRPOTrainer

    cfg = load_config(None, [*TINY, f"run.device={device}", f"run.out_dir={tmp_path}", *extra])
    trainer = GRPOTrainer(cfg)
    before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    m = trainer.train_step()
    return trainer, before, m


def test_a_bfloat16_lora_step_on_cpu_trains_the_float32_adapters(tmp_path, bf16_numerics):
    pytest.importorskip("peft")
    trainer, before, m = _step(
        tmp_path,
        "cpu",
        [
            "model.dtype=bfloat16",
            "model.lora={r: 4, alpha: 8}",
            "algo.beta=0.04",
            "optim.lr=1e-2",
            "rewards.weights={cosine: 1.0}",
        ],
    )
    frozen = {p.dtype for p in trainer.model.parameters() if not p.requires_grad}
    assert frozen == {torch.bfloat16} and trainer.learner.ref is not None
    assert m["completions/mean_length"] > 0 and torch.isfinite(torch.tensor(m["loss/policy"]))
    moved = [n for n, p in trainer.model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert moved and all("lora_" in n for n in moved)


def test_full_fine_tuning_in_bfloat16_is_refused_with_the_alternatives():
    with pytest.raises(ConfigError, match=r"model\.lora.*model\.autocast=bf16"):
        load_config(None, ["model.dtype=bfloat16"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here (the CPU tests cover the logic)")
def test_a_grpo_step_on_cuda_keeps_everything_there(tmp_path):
    trainer, _, m = _step(tmp_path, "cuda", ["algo.beta=0.04"])
    assert all(p.device.type == "cuda" for p in trainer.model.parameters())
    assert not trainer.fast  # the model's own forward (SDPA) on a GPU by default
    assert m["completions/mean_length"] > 0
    ev = trainer.evaluate()
    assert 0.0 <= ev["accuracy"] <= 1.0
