"""What reaches the gradient on rlvr's engine: set-ups that must give the same loss and gradients.

Each test builds two set-ups that the docs promise are equivalent and compares the gradients the
engine accumulates (:meth:`rlvr.engine.learner.Learner.backward`, the pass ``update`` steps on),
for every registered loss aggregation:

* rows the failure step excluded equal rows that were never in the batch (also whole groups left
  out by ``drop_flat_groups``);
* one batch equals the same batch in micro-batches, in any order of its groups;
* the same rows padded to a wider batch (Dr. GRPO's constant is the configured length, not the width);
* tokens the grammar forced carry no gradient and leave every normaliser.
"""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from rlvr.algo.loss import AGGREGATIONS
from rlvr.config import load_config
from rlvr.engine.trainer import GRPOTrainer
from rlvr.sampling import RolloutBatch

TINY = [
    "model.hidden=32",
    "model.layers=1",
    "model.heads=2",
    "rollout.prompts_per_step=3",
    "rollout.group_size=4",
    "rollout.max_new_tokens=12",
    "run.eval_every=0",
    "data.eval_size=4",
    "run.steps=1",
    "rewards.weights={cosine: 1.0}",
    "rewards.options={}",
]
LOSSES = sorted(AGGREGATIONS)


def _trainer(tmp_path, *extra: str) -> GRPOTrainer:
    cfg = load_config(None, [*TINY, f"run.out_dir={tmp_path}", *extra])
    return GRPOTrainer(cfg)


def _batch(trainer: GRPOTrainer, seed: int = 0) -> RolloutBatch:
    torch.manual_seed(seed)
    b = trainer.rollout(trainer.data.take(trainer.cfg.rollout.prompts_per_step))
    # old log-probs a little away from the current policy's, so the ratio and its clip are exercised
    noise = torch.randn(b.logprobs.shape, generator=torch.Generator().manual_seed(seed)) * 0.1
    return dataclasses.replace(b, logprobs=(b.logprobs + noise) * b.completion_mask)


def _advantages(n: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def grads(trainer: GRPOTrainer, batch: RolloutBatch, adv: torch.Tensor, admit: torch.Tensor) -> dict[str, torch.Tensor]:
    """The gradient one pass of the engine's update accumulates, per parameter."""
    trainer.model.zero_grad(set_to_none=True)
    trainer.learner.backward(batch, adv, admit)
    out = {
        n: (p.grad.clone() if p.grad is not None else torch.zeros_like(p))
        for n, p in trainer.model.named_parameters()
        if p.requires_grad
    }
    trainer.model.zero_grad(set_to_none=True)
    return out


def assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert max(float(g.abs().max()) for g in a.values()) > 1e-6  # vacuous if nothing had a gradient
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=1e-6, rtol=1e-4, msg=k)


def rows_of(b: RolloutBatch, rows: list[int]) -> RolloutBatch:
    """The batch restricted to ``rows``, each its own group (as if the others were never sampled)."""
    idx = torch.tensor(rows, dtype=torch.long)
    pick = lambda t: t[idx] if t is not None else None  # noqa: E731
    return RolloutBatch(
        b.prompt_ids[idx],
        b.prompt_mask[idx],
        b.completion_ids[idx],
        b.completion_mask[idx],
        b.logprobs[idx],
        [b.finish[i] for i in rows],
        [b.texts[i] for i in rows],
        b.policy_version,
        1,
        [b.versions[i] for i in rows],
        pick(b.bitmask),
        b.decode_stats,
        pick(b.tool_mask),
        None,
        b.stop_ids,
    )


def widen(b: RolloutBatch, extra: int) -> RolloutBatch:
    """The same rows with ``extra`` more pad columns after every completion."""
    n = b.completion_ids.shape[0]
    pad = b.completion_ids.new_full((n, extra), 0)

    def right(t: torch.Tensor | None, fill: int) -> torch.Tensor | None:
        if t is None:
            return None
        shape = (n, extra, *t.shape[2:])
        return torch.cat([t, t.new_full(shape, fill)], 1)

    return dataclasses.replace(
        b,
        completion_ids=torch.cat([b.completion_ids, pad], 1),
        completion_mask=right(b.completion_mask, 0),
        logprobs=right(b.logprobs, 0),
        bitmask=right(b.bitmask, -1),
        tool_mask=right(b.tool_mask, 0),
    )


@pytest.mark.parametrize("loss", LOSSES)
def test_excluded_rows_equal_absent_rows(tmp_path, loss: str) -> None:
    trainer = _trainer(tmp_path, f"algo.loss={loss}")
    b = _batch(trainer)
    adv = _advantages(len(b.texts))
    admit = torch.ones(len(b.texts), dtype=torch.bool)
    out = [1, 4, 5, 6, 11]  # rows inside groups and most of one group
    admit[out] = False
    kept = [i for i in range(len(b.texts)) if i not in out]
    assert_same(
        grads(trainer, b, adv, admit),
        grads(trainer, rows_of(b, kept), adv[kept], torch.ones(len(kept), dtype=torch.bool)),
    )


@pytest.mark.parametrize("loss", LOSSES)
def test_groups_left_out_by_drop_flat_groups_equal_absent_groups(tmp_path, loss: str) -> None:
    from rlvr.diagnostics.step import FailureAware, RolloutView
    from rlvr.types import Status, Verdict

    trainer = _trainer(tmp_path, f"algo.loss={loss}", "failure.drop_flat_groups=true")
    b = _batch(trainer)
    g = b.group_size
    rewards = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]  # the middle group is flat
    views = [
        RolloutView(f"p{i // g}", Verdict(Status.CORRECT if r else Status.WRONG), r, text="an answer")
        for i, r in enumerate(rewards)
    ]
    fa = FailureAware(trainer.cfg.failure, group_size=g)
    d = fa.decide(views, step=1)
    assert d.admit.tolist() == [True] * 4 + [False] * 4 + [True] * 4
    kept = [0, 1, 2, 3, 8, 9, 10, 11]
    assert_same(
        grads(trainer, b, d.advantages, d.admit),
        grads(trainer, b.select_groups([0, 2]), d.advantages[kept], torch.ones(8, dtype=torch.bool)),
    )


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("micro_batch", [4, 3, 1])
def test_micro_batch_split_does_not_change_gradients(tmp_path, loss: str, micro_batch: int) -> None:
    """4: one group per pass (the shared-prompt forward); 3 and 1: rows across groups (the plain forward)."""
    whole = _trainer(tmp_path / "whole", f"algo.loss={loss}")
    split = _trainer(tmp_path / "split", f"algo.loss={loss}", f"algo.micro_batch={micro_batch}")
    split.model.load_state_dict(whole.model.state_dict())
    b = _batch(whole)
    adv = _advantages(len(b.texts))
    admit = torch.ones(len(b.texts), dtype=torch.bool)
    admit[[2, 7]] = False
    reference = grads(whole, b, adv, admit)
    assert_same(reference, grads(split, b, adv, admit))
    order = [2, 0, 1]  # the same groups in another order
    rows = [k * 4 + j for k in order for j in range(4)]
    assert_same(reference, grads(split, b.select_groups(order), adv[rows], admit[rows]))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("groups", [1, 0], ids=["whole groups", "rows"])
def test_token_budget_split_does_not_change_gradients(tmp_path, loss: str, groups: int) -> None:
    """``algo.token_budget``: micro-batches sized by tokens (one group's worth, or less than a group
    so rows go one or two at a time) give the whole batch's gradient."""
    whole = _trainer(tmp_path / "whole", f"algo.loss={loss}", "algo.token_budget=null")
    b = _batch(whole)
    width = b.prompt_ids.shape[1] + b.completion_ids.shape[1]
    budget = 4 * width if groups else 2 * width + 1
    split = _trainer(tmp_path / "split", f"algo.loss={loss}", f"algo.token_budget={budget}")
    split.model.load_state_dict(whole.model.state_dict())
    admit = torch.ones(len(b.texts), dtype=torch.bool)
    admit[[2, 7]] = False
    parts = split.learner.fwd.parts(b, admit)
    assert len(parts) == (3 if groups else 5) and all(len(rows) * width <= budget for rows, _ in parts)
    assert all((first is not None) == bool(groups) for _, first in parts)
    adv = _advantages(len(b.texts))
    assert_same(grads(whole, b, adv, admit), grads(split, b, adv, admit))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("tools", [False, True], ids=["plain", "with tool tokens"])
def test_padding_width_does_not_change_gradients(tmp_path, loss: str, tools: bool) -> None:
    trainer = _trainer(tmp_path, f"algo.loss={loss}")
    b = _batch(trainer)
    if tools:  # some tokens are a tool's result: attended to, never in the loss or its normalisers
        tm = torch.zeros_like(b.completion_mask)
        tm[:, 2:4] = 1
        b = dataclasses.replace(b, tool_mask=tm * b.completion_mask)
    adv = _advantages(len(b.texts))
    admit = torch.ones(len(b.texts), dtype=torch.bool)
    assert_same(grads(trainer, b, adv, admit), grads(trainer, widen(b, 7), adv, admit))


def test_dr_grpo_divides_by_the_configured_length_not_the_batch_width(tmp_path) -> None:
    """The same batch under two configured lengths: the gradient scales by their ratio exactly."""
    short = _trainer(tmp_path / "a", "algo.loss=dr_grpo", "rollout.max_new_tokens=12")
    long = _trainer(tmp_path / "b", "algo.loss=dr_grpo", "rollout.max_new_tokens=24")
    long.model.load_state_dict(short.model.state_dict())
    b = _batch(short)
    adv = _advantages(len(b.texts))
    admit = torch.ones(len(b.texts), dtype=torch.bool)
    a, c = grads(short, b, adv, admit), grads(long, b, adv, admit)
    assert_same(a, {k: 2 * v for k, v in c.items()})


@pytest.mark.parametrize("loss", LOSSES)
def test_forced_tokens_leave_the_loss_and_its_normalisers(tmp_path, loss: str) -> None:
    """A token the grammar forced (one allowed token) has log-prob 0 and no gradient; it must not
    count in any normaliser either: marking tokens forced equals cutting them out of the mask."""
    from rlvr.decoding.constrain import forced_tokens

    trainer = _trainer(tmp_path, f"algo.loss={loss}")
    b = _batch(trainer)
    n, t = b.completion_ids.shape
    words = (trainer.model.config.vocab_size + 31) // 32
    bits = torch.full((n, t, words), -1, dtype=torch.int32)
    for i in range(n):  # the first two sampled tokens of every row: the only token allowed
        for j in range(min(2, int(b.completion_mask[i].sum()))):
            tok = int(b.completion_ids[i, j])
            bits[i, j] = 0
            bits[i, j, tok // 32] = torch.tensor(1 << (tok % 32), dtype=torch.int64).to(torch.int32)
    constrained = dataclasses.replace(b, bitmask=bits, logprobs=b.logprobs.masked_fill(forced_tokens(bits), 0.0))
    assert bool(forced_tokens(bits).any())
    adv = _advantages(n)
    admit = torch.ones(n, dtype=torch.bool)
    # the same tokens cut out of the loss (as tool tokens are: attended, never trained)
    cut = dataclasses.replace(constrained, tool_mask=forced_tokens(bits).long() * b.completion_mask)
    assert_same(grads(trainer, constrained, adv, admit), grads(trainer, cut, adv, admit))
