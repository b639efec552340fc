"""The run config: YAML plus --set overrides; errors name the field and the fix."""

import pytest

from rlvr.config import dump_config, load_config
from rlvr.errors import ConfigError


def test_yaml_and_overrides(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("optim:\n  lr: 3.0e-4\nrollout:\n  group_size: 4\nrewards:\n  weights: {accuracy: 1.0}\n")
    cfg = load_config(p, ["rollout.group_size=16", "algo.loss=grpo", "rewards.weights.format=[[0, 0.0], [10, 1.0]]"])
    assert cfg.optim.lr == 3e-4 and cfg.rollout.group_size == 16 and cfg.algo.loss == "grpo"
    assert cfg.rewards.weights == {"accuracy": 1.0, "format": [[0, 0.0], [10, 1.0]]}
    assert load_config(None, []).model_dump() == load_config(None, None).model_dump()
    again = tmp_path / "again.yaml"
    again.write_text(dump_config(cfg))
    assert load_config(again) == cfg


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["optim.lr=-1"], "optim.lr: Input should be greater than 0 (got -1)"),
        (["algo.loss=ppo"], "algo.loss: unknown loss aggregation 'ppo'; registered: dapo, dr_grpo, grpo"),
        (["data.task=sums"], "data.task: unknown synthetic task 'sums'; registered: addition, arithmetic, countdown"),
        (["rewards.weights={acuracy: 1}"], "rewards.weights: unknown reward 'acuracy'; registered: accuracy"),
        (["env.tools=[abacus]"], "env.tools: unknown tool 'abacus'; registered: calculator, python"),
        (["decoding.engine=xgrammar"], "decoding.engine is now decoding.backend"),
        (["algo.scale_rewards=sometimes"], "algo.scale_rewards: Input should be 'group', 'batch' or 'none'"),
        (["model.nme=x"], "model.nme: unknown field"),
        (["algo.micro_batch=7"], "algo.micro_batch 7 must divide the 64 rollouts"),
        (["algo.epsilon=0.3", "algo.epsilon_high=0.2"], "epsilon_high must be >= algo.epsilon"),
        (["data.task=null"], "set data.task"),
        (["lr"], "expected key.sub=value"),
        (["optim.lr.x=1"], "optim.lr: Input should be a valid number"),
        (["engine=trl", "rollout.cuda_graphs=true"], "rollout.cuda_graphs (the decoder) is rlvr's own engine"),
    ],
)
def test_errors_name_the_field(overrides, message):
    with pytest.raises(ConfigError) as e:
        load_config(None, overrides)
    assert message in str(e.value)


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("optim: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(bad)


def test_every_config_key_is_documented() -> None:
    """The config reference (docs/reference/config.md) is generated from the field docstrings: a key
    without one would be a row with no description."""
    from pydantic import BaseModel

    from rlvr.config import TrainConfig

    missing = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            nested = [
                a
                for a in (field.annotation, *getattr(field.annotation, "__args__", ()))
                if isinstance(a, type) and issubclass(a, BaseModel)
            ]
            if nested and name != "lora":
                walk(nested[0], f"{prefix}{name}.")
            elif not field.description:
                missing.append(prefix + name)

    walk(TrainConfig, "")
    assert missing == []


def test_an_async_run_is_corrected_unless_it_says_how() -> None:
    """Within the lag, the off-policy correction applies: an asynchronous run with no ``off_policy``
    section gets the decoupled objective; one that has a section keeps it; a synchronous run keeps
    ``bypass``."""
    from rlvr.config import ASYNC_OFF_POLICY

    corrected = load_config(None, ["rollout.mode=async"]).off_policy
    assert (corrected.proximal, corrected.token_cap) == (ASYNC_OFF_POLICY["proximal"], ASYNC_OFF_POLICY["token_cap"])
    assert corrected.geometric_band is None  # nothing rejected: the asynchronous learner does not redraw
    assert load_config(None, ["rollout.mode=async", "off_policy.proximal=bypass"]).off_policy.token_cap is None
    assert load_config(None, []).off_policy.proximal == "bypass"
