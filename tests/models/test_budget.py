"""Micro-batches sized by a token budget (:mod:`rlvr.models.budget`): the row arithmetic, the
activation estimate's scale, and the config's refusals."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from transformers import Qwen2Config

from rlvr.config import load_config
from rlvr.models.budget import activation_bytes_per_token, auto_token_budget, rows_within


def test_rows_within_keeps_rows_times_width_inside_the_budget() -> None:
    assert rows_within(None, 300, 128) == 128  # no budget: the whole batch
    assert rows_within(3000, 300, 128) == 10
    assert rows_within(3000, 300, 128, group=8) == 8  # whole groups when one fits
    assert rows_within(3000, 300, 128, group=16) == 10  # a group does not fit: rows
    assert rows_within(100, 300, 128) == 1  # a row wider than the budget still runs, alone
    assert rows_within(10**9, 300, 128, group=8) == 128


def test_the_activation_estimate_scales_with_the_model() -> None:
    """Qwen2.5-0.5B's shape: ~3.2 MB a token under bf16 autocast (24 layers x (17 x 896 + 6 x 4864) x
    2 bytes x 1.5); twice the layers, about twice the bytes; float32 matmuls cost more than bf16."""
    small = Qwen2Config(hidden_size=896, intermediate_size=4864, num_hidden_layers=24)
    per = activation_bytes_per_token(small, autocast_bf16=True)
    assert 3.0e6 < per < 3.4e6
    deep = Qwen2Config(hidden_size=896, intermediate_size=4864, num_hidden_layers=48)
    assert 1.9 < activation_bytes_per_token(deep, True) / per < 2.1
    assert activation_bytes_per_token(small, autocast_bf16=False) > per
    with pytest.raises(ValueError, match="token_budget"):
        activation_bytes_per_token(object(), True)


def test_auto_sets_no_budget_on_a_cpu() -> None:
    model = torch.nn.Linear(2, 2)
    assert auto_token_budget(model, torch.device("cpu"), True, optimizer_ready=False) is None


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["algo.token_budget=0"], "at least 1 token"),
        (["engine=trl", "algo.token_budget=4096"], "set algo.micro_batch"),
    ],
)
def test_budgets_an_engine_cannot_run_are_refused(sets: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(None, sets)
