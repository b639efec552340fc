"""verl's custom reward function form."""

import importlib.util
import math

import pytest

import rlvr.integrations.verl.score as verl_mod
from rlvr.integrations.verl import compute_score


def test_dict_form_with_components_and_status():
    out = compute_score("openai/gsm8k", "<think>6*7</think><answer>42</answer>", "42")
    assert out == {"score": pytest.approx(1.1), "accuracy": 1.0, "format": 1.0, "acc": True, "status": "correct"}
    out = compute_score("openai/gsm8k", "I think it is", "42")
    assert out["score"] == 0.0 and out["status"] == "no_answer" and out["acc"] is False


def test_weights_schedule_and_extra_columns_from_extra_info():
    info = {
        "weights": {"accuracy": 1.0, "language_consistency": [[0, 0.0], [10, 1.0]]},
        "global_step": 5,
        "language": "en",
    }
    out = compute_score("lighteval/MATH", "我们得到 \\boxed{\\frac{1}{2}}", "0.5", info)
    assert out["accuracy"] == 1.0 and out["language_consistency"] == 0.0
    assert out["score"] == pytest.approx(1.0)
    nan = compute_score("x", r"\boxed{1}", r"\frac{", {"weights": {"cosine": 1.0}})
    assert math.isnan(nan["cosine"]) and nan["status"] == "bad_gold" and nan["score"] == 0.0


def test_loadable_by_file_path_as_verl_does():
    spec = importlib.util.spec_from_file_location("custom_module", verl_mod.__file__)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.compute_score("d", r"\boxed{2}", "2")["acc"] is True


def test_conventions_from_reward_kwargs():
    """verl passes ``custom_reward_function.reward_kwargs`` as keywords: ``conventions`` chooses the
    maths verifier's reading conventions, as ``rewards.conventions`` does in rlvr's config."""
    from rlvr.verify.math.conventions import set_default

    try:
        assert compute_score("d", r"\boxed{5:3}", r"\frac{5}{3}")["acc"] is True
        off = {"ratio_as_fraction": False}
        assert compute_score("d", r"\boxed{5:3}", r"\frac{5}{3}", None, conventions=off)["acc"] is False
        assert compute_score("d", r"\boxed{5:3}", r"\frac{5}{3}")["acc"] is True  # none named: the defaults
    finally:
        set_default(None)
