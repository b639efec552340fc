"""Off-policy correction on rlvr's engine: set-ups that must give the same gradient.

* weights of 1 are no weights, for every aggregation;
* on an on-policy float32 batch, the recomputed proximal log-probs (``off_policy.proximal:
  recompute``) train as the sampler's do (``bypass``): recomputing changes what the ratio divides by,
  not the gradient, when nothing was off-policy;
* a row the correction rejects (cause ``off_policy``) weighs as if it had never been sampled;
* the fused proximal (the training forward's own log-probs, one forward fewer) trains as the
  recomputed one on an off-policy batch, token cap and product weight included, for every
  aggregation; and it is used only where it is exact.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.invariant.test_gradients import LOSSES, _advantages, _batch, _trainer, assert_same, grads, rows_of


def _grads_with(trainer, batch, adv, admit, **kw) -> dict[str, torch.Tensor]:
    trainer.model.zero_grad(set_to_none=True)
    trainer.learner.backward(batch, adv, admit, **kw)
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
    proximal, corr = tr.learner.off_policy(b)
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


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize(
    "settings", [("off_policy.token_cap=1.05",), ("off_policy.token_cap=2.0", "off_policy.product=truncate")]
)
def test_the_fused_proximal_trains_as_the_recomputed_one(tmp_path, loss: str, settings: tuple[str, ...]) -> None:
    tr = _trainer(tmp_path, f"algo.loss={loss}", "off_policy.proximal=recompute", *settings)
    b = _batch(tr)  # behaviour log-probs 0.1 away from the model's: weights above and below the cap
    adv, admit = _advantages(len(b.texts)), torch.ones(len(b.texts), dtype=torch.bool)
    fused = tr.learner.fused_proximal()
    assert fused is not None
    proximal, corr = tr.learner.off_policy(b)
    assert corr is not None and bool((corr.weights[b.completion_mask.bool()] != 1).any())
    assert_same(
        _grads_with(tr, b, adv, admit, old=proximal, weights=corr.weights),
        _grads_with(tr, b, adv, admit, fused=fused),
    )


def test_a_fused_step_runs_no_forward_of_its_own_and_reports_the_correction(tmp_path, monkeypatch) -> None:
    tr = _trainer(tmp_path, "off_policy.proximal=recompute", "off_policy.token_cap=1.05")
    b = _batch(tr)
    monkeypatch.setattr(tr.learner, "logprobs", lambda *a, **k: pytest.fail("the fused proximal ran its own forward"))
    adv, admit = _advantages(len(b.texts)), torch.ones(len(b.texts), dtype=torch.bool)
    m = tr.learner.update(b, adv, admit, fused=tr.learner.fused_proximal())
    assert m["train/optimizer_steps"] == 1.0
    assert 0 < m["offpolicy/token_truncated"] < 1 and m["offpolicy/weight_max"] == pytest.approx(1.05)


@pytest.mark.parametrize(
    "setting",
    [
        "off_policy.proximal=bypass",
        "algo.num_iterations=2",  # the second step's proximal is the model before the first
        "off_policy.geometric_band=[0.98, 1.02]",  # rejected rows leave the group statistics first
        "off_policy.token_veto=0.1",
        "off_policy.product=mask",
        "model.lora={dropout: 0.1}",  # the training forward is noisy: not the proximal policy
    ],
)
def test_the_proximal_is_fused_only_where_it_is_exact(tmp_path, setting: str) -> None:
    cap = [] if "bypass" in setting else ["off_policy.token_cap=2.0"]
    tr = _trainer(tmp_path, "off_policy.proximal=recompute", *cap, setting)
    assert tr.learner.fused_proximal() is None
    if "lora" in setting:  # the same adapters without dropout: fused
        plain = _trainer(tmp_path / "no-dropout", "off_policy.proximal=recompute", *cap, "model.lora={}")
        assert plain.learner.fused_proximal() is not None
