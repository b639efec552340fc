"""The ``rlvr`` reward manager, built by verl's ``load_reward_manager`` and called per trajectory on a
hand-built ``DataProto`` as verl's reward loop calls it."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo.reward import load_reward_manager

from rlvr.errors import ConfigError
from rlvr.integrations.verl.score import compute_score
from rlvr.models.tiny import build_tokenizer

TOK = build_tokenizer()
GOLD = "42"


def config(manager: str = "rlvr", **extra) -> object:
    return OmegaConf.create(
        {
            "reward": {
                "reward_manager": {"source": "register", "name": manager, "module": {"path": None}},
                "custom_reward_function": extra.pop("custom", {}),
                "sandbox_fusion": None,
                "reward_model": {"enable": False},
            },
            "rlvr": extra.pop("rlvr", {"rewards": {"weights": {"accuracy": 1.0, "format": 0.2}}}),
            **extra,
        }
    )


def trajectory(text: str, *, width: int = 24, gold: str = GOLD, ended: bool = True) -> DataProto:
    prompt = TOK("Q:40+2=")["input_ids"]
    resp = TOK(text, add_special_tokens=False)["input_ids"] + ([TOK.eos_token_id] if ended else [])
    resp = resp[:width]
    responses = torch.full((1, width), TOK.pad_token_id)
    responses[0, : len(resp)] = torch.tensor(resp)
    attention = torch.cat([torch.ones(1, len(prompt)), (torch.arange(width) < len(resp)).float()[None]], 1).long()
    return DataProto.from_dict(
        tensors={"prompts": torch.tensor([prompt]), "responses": responses, "attention_mask": attention},
        non_tensors={
            "data_source": np.array(["openai/gsm8k"], dtype=object),
            "reward_model": np.array([{"ground_truth": gold}], dtype=object),
            "extra_info": np.array([{"index": 7}], dtype=object),
        },
    )


def run(manager, data: DataProto) -> dict:
    return asyncio.get_event_loop().run_until_complete(manager.run_single(data))


def test_verl_builds_it_by_name_and_it_returns_causes_with_the_same_keys_on_every_row():
    manager = load_reward_manager(config(), TOK)
    assert type(manager).__name__ == "RlvrRewardManager"
    outs = [run(manager, trajectory(t)) for t in ("<answer>42</answer>", "<answer>41</answer>", "no idea")]
    cut = run(manager, trajectory("<answer>42</answer> and then some more", width=12, ended=False))
    infos = [o["reward_extra_info"] for o in [*outs, cut]]
    assert len({tuple(sorted(i)) for i in infos}) == 1
    assert [i["cause"] for i in infos] == ["correct", "wrong", "no_answer", "truncated"]
    assert [i["acc"] for i in infos] == [1.0, 0.0, 0.0, 1.0]  # the cut one had written its answer: a truncated right
    assert outs[0]["reward_score"] == pytest.approx(1.2)
    # the same total as rlvr's compute_score under verl's naive manager (whose format reward asks for
    # a think block by default), which says nothing of causes
    weights = {"accuracy": 1.0, "format": 0.2}
    think = load_reward_manager(
        config(rlvr={"rewards": {"weights": weights, "options": {"format": {"think_tag": "think"}}}}), TOK
    )
    custom = {
        "path": "pkg://rlvr.integrations.verl.score",
        "name": "compute_score",
        "reward_kwargs": {"weights": weights},
    }
    naive = load_reward_manager(config("naive", custom=custom), TOK)
    for text in ("<think>40+2</think><answer>42</answer>", "<answer>42</answer>", "<answer>7</answer>"):
        want = run(think, trajectory(text))["reward_score"]
        assert run(naive, trajectory(text))["reward_score"] == pytest.approx(want)
    assert compute_score("openai/gsm8k", "<think>4</think><answer>42</answer>", GOLD, {"weights": weights})[
        "score"
    ] == pytest.approx(1.2)


def test_bad_input_is_named():
    with pytest.raises(ConfigError, match=r"custom_reward_function\.path"):
        load_reward_manager(config(custom={"path": "pkg://rlvr.integrations.verl.score", "name": "compute_score"}), TOK)
    with pytest.raises(ConfigError, match=r"rlvr\.rewards\.weights"):
        load_reward_manager(config(rlvr={"rewards": {"weights": "accuracy"}}), TOK)
    manager = load_reward_manager(config(), TOK)
    data = trajectory("<answer>42</answer>")
    data.non_tensor_batch["reward_model"] = np.array([{"style": "rule"}], dtype=object)
    with pytest.raises(ConfigError, match=r"no reward_model\.ground_truth"):
        run(manager, data)
