"""Off-policy correction on rlvr's engine: set-ups that must give the same gradient.

* weights of 1 are no weights, for every aggregation;
* on an on-policy float32 batch, the recomputed proximal log-probs (``off_policy.proximal:
  recompute``) train as the sampler's do (``bypass``): recomputing changes what the ratio divides by,
  not the gradient, when nothing was off-policy;
* a row the correction rejects (cause ``off_policy``) weighs as if it had never been sampled.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.invariant.test_gradients import LOSSES, _advantages, _batch, _trainer, assert_same, grads, rows_of


def _grads_with(trainer, batch, adv, admit, **kw) -> dict[str, torch.Tensor]:
    trainer.model.zero_grad(set_to_none=True)
    trainer.backward(batch, adv, admit, **kw)
    out = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    trainer.model.zero_grad(set_to_none=True)
    return out


@pytest.mark.parametrize("loss", LOSSES)
def test_unit_weights_are_no_weights(tmp_path, loss: str) -> None:
    tr = _trainer(tmp_path, f"algo.loss={loss}")
    b = _batch(tr)
    adv, admit = _advantages(len(b.texts)), torch.ones(len(b.texts), dtype=torch.bool)
    assert_same(grads(tr, b, adv, admit), _grads_with(tr, b, adv, admit, weights=torch.ones_like(b.logprobs)))


@pytest.mark.parametrize("loss", LOSSES)
def test_recomputed_proximal_of_an_on_policy_batch_trains_as_bypass(tmp_path, loss: str) -> None:
    tr = _trainer(tmp_path, f"algo.loss={loss}", "off_policy.proximal=recompute")
    torch.manual_seed(0)
    b = tr.rollout(tr.data.take(tr.cfg.rollout.prompts_per_step))  # sampled by this very policy, float32
    proximal, corr = tr.off_policy(b)
    assert proximal is not None and corr is not None
    adv, admit = _advantages(len(b.texts)), torch.ones(len(b.texts), dtype=torch.bool)
    assert_same(grads(tr, b, adv, admit), _grads_with(tr, b, adv, admit, old=proximal, weights=corr.weights))


def test_a_rejected_row_weighs_as_a_row_never_sampled(tmp_path) -> None:
    from rlvr.diagnostics.step import FailureAware, RolloutView
    from rlvr.types import Status, Verdict

    tr = _trainer(tmp_path)
    b = _batch(tr)
    g = b.group_size
    rewards = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    rejected = {2, 9}
    views = [
        RolloutView(f"p{i // g}", Verdict(Status.CORRECT if r else Status.WRONG), r, text="x", off_policy=i in rejected)
        for i, r in enumerate(rewards)
    ]
    d = FailureAware(tr.cfg.failure, group_size=g).decide(views, step=1)
    assert [c.value for c in d.causes if c.value == "off_policy"] == ["off_policy"] * 2
    assert not d.admit[list(rejected)].any()
    # the siblings' baseline is computed without the rejected rows: as in a batch that never had them
    kept = [i for i in range(len(rewards)) if i not in rejected]
    for k in range(3):
        rows = [i for i in range(k * g, (k + 1) * g) if i not in rejected]
        r = torch.tensor([rewards[i] for i in rows])
        expect = (r - r.mean()) / (r.std() + 1e-4) if len(rows) > 1 and r.std() > 0 else torch.zeros(len(rows))
        torch.testing.assert_close(d.advantages[rows], expect, atol=1e-3, rtol=1e-3)
    assert_same(
        grads(tr, b, d.advantages, d.admit),
        grads(tr, rows_of(b, kept), d.advantages[kept], torch.ones(len(kept), dtype=torch.bool)),
    )
