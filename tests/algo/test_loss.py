"""The clipped loss against hand-computed values; variants; KL; accumulation invariance."""

import math

import pytest

torch = pytest.importorskip("torch")

from rlvr.algo.loss import Normalizer, k3_kl, policy_loss, token_logprobs
from rlvr.errors import ConfigError


def _loss(logp, old, adv, mask, **kw):
    mask = torch.tensor(mask, dtype=torch.float32)
    norm = Normalizer.of(mask, max_len=mask.shape[1])
    return policy_loss(torch.tensor(logp), torch.tensor(old), torch.tensor(adv), mask, norm, **kw)


def test_two_token_example_by_hand():
    # one sequence, 2 tokens: ratios e^0.1 = 1.105 (inside the clip range), e^-0.5 = 0.607 (below 0.8)
    logp, old = [[-1.0, -2.0]], [[-1.1, -1.5]]
    r1, r2 = math.exp(0.1), math.exp(-0.5)
    # A = +1: token 1 -> -1.105; token 2 -> -min(0.607, 0.8) = -0.607 (the clip does not bind for A > 0)
    loss, stats = _loss(logp, old, [1.0], [[1, 1]], aggregation="dapo")
    assert loss.item() == pytest.approx(-(r1 + r2) / 2)
    assert stats.clipfrac == 0.0
    # A = -1: token 2 -> -min(-0.607, -0.8) = 0.8 (clipped); token 1 -> 1.105
    loss, stats = _loss(logp, old, [-1.0], [[1, 1]], aggregation="dapo")
    assert loss.item() == pytest.approx((r1 + 0.8) / 2)
    assert stats.clipfrac == 0.5


def test_clip_higher_upper_side():
    logp, old = [[0.0]], [[-0.5]]  # ratio e^0.5 = 1.65
    sym, s1 = _loss(logp, old, [1.0], [[1]])
    hi, _s2 = _loss(logp, old, [1.0], [[1]], epsilon_high=0.28)
    assert sym.item() == pytest.approx(-1.2) and s1.clipfrac == 1.0
    assert hi.item() == pytest.approx(-1.28)


def test_aggregations_normalise_differently():
    logp = [[-1.0, -1.0, -1.0], [-1.0, 0.0, 0.0]]
    mask = [[1, 1, 1], [1, 0, 0]]
    adv = [1.0, 1.0]
    # ratio 1 everywhere, A = 1: every token loss is -1
    assert _loss(logp, logp, adv, mask, aggregation="grpo")[0].item() == pytest.approx(-1.0)  # mean of means
    assert _loss(logp, logp, adv, mask, aggregation="dapo")[0].item() == pytest.approx(-1.0)  # 4 tokens / 4
    assert _loss(logp, logp, adv, mask, aggregation="dr_grpo")[0].item() == pytest.approx(-4 / 6)  # / (2 x 3)
    with pytest.raises(ConfigError, match="unknown loss aggregation 'ppo'; registered: dapo, dr_grpo, grpo"):
        _loss(logp, logp, adv, mask, aggregation="ppo")


def test_k3_values():
    assert k3_kl(torch.tensor(0.0), torch.tensor(0.0)).item() == 0.0
    d = 0.3  # ref - logp
    assert k3_kl(torch.tensor(-1.0), torch.tensor(-0.7)).item() == pytest.approx(math.exp(d) - d - 1)
    assert (k3_kl(torch.randn(100), torch.randn(100)) >= 0).all()
    # clamped as verl's low_var_kl: a reference that finds a token near-impossible adds at most 10
    assert k3_kl(torch.tensor(0.0), torch.tensor(-50.0)).item() == pytest.approx(10.0)
    assert k3_kl(torch.tensor(-50.0), torch.tensor(0.0)).item() == pytest.approx(10.0)
    loss, stats = _loss([[-1.0]], [[-1.0]], [0.0], [[1]], beta=0.5, ref_logp=torch.tensor([[-0.7]]))
    assert loss.item() == pytest.approx(0.5 * (math.exp(d) - d - 1)) and stats.kl > 0
    with pytest.raises(ValueError, match="ref_logp"):
        _loss([[-1.0]], [[-1.0]], [0.0], [[1]], beta=0.5)


def test_token_logprobs_matches_log_softmax():
    logits = torch.randn(2, 3, 7)
    tokens = torch.randint(0, 7, (2, 3))
    want = torch.log_softmax(logits / 0.7, -1).gather(-1, tokens[..., None]).squeeze(-1)
    torch.testing.assert_close(token_logprobs(logits, tokens, 0.7), want)


def test_the_normaliser_counts_trained_rows_and_tokens_and_takes_the_configured_length():
    mask = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]])  # the middle row: excluded
    assert Normalizer.of(mask, max_len=16) == Normalizer(sequences=2, tokens=3, max_len=16)
    wider = torch.cat([mask, torch.zeros(3, 5, dtype=mask.dtype)], 1)  # padding changes nothing
    assert Normalizer.of(wider, max_len=16) == Normalizer.of(mask, max_len=16)


def test_a_registered_aggregation_is_selectable_in_the_config():
    from rlvr.algo.loss import AGGREGATIONS, register_aggregation
    from rlvr.config import load_config

    def token_sum(per_token, mask, norm):
        return (per_token * mask).sum() / norm.max_len

    with pytest.raises(ConfigError, match=r"algo\.loss: unknown loss aggregation 'token_sum'"):
        load_config(None, ["algo.loss=token_sum"])
    register_aggregation("token_sum", token_sum)
    try:
        assert load_config(None, ["algo.loss=token_sum"]).algo.loss == "token_sum"
        loss, _ = _loss([[-1.0, -1.0]], [[-1.0, -1.0]], [1.0], [[1, 1]], aggregation="token_sum")
        assert loss.item() == pytest.approx(-1.0)
    finally:
        AGGREGATIONS.remove("token_sum")


@pytest.mark.parametrize("aggregation", ["grpo", "dr_grpo", "dapo"])
def test_gradient_accumulation_equals_full_batch(aggregation):
    torch.manual_seed(0)
    w = torch.randn(5, requires_grad=True)
    feats = torch.randn(8, 6, 5)
    old = torch.randn(8, 6) * 0.1 - 1
    adv = torch.randn(8)
    mask = (torch.rand(8, 6) > 0.3).float()
    norm = Normalizer.of(mask, max_len=6)

    def logp(idx):
        return torch.log_softmax(feats[idx] @ w, -1) - 1  # any differentiable function of w

    full, _ = policy_loss(logp(slice(None)), old, adv, mask, norm, aggregation=aggregation)
    (g_full,) = torch.autograd.grad(full, w)
    g_acc = torch.zeros_like(w)
    for idx in (slice(0, 3), slice(3, 5), slice(5, 8)):
        part, _ = policy_loss(logp(idx), old[idx], adv[idx], mask[idx], norm, aggregation=aggregation)
        g_acc += torch.autograd.grad(part, w)[0]
    torch.testing.assert_close(g_acc, g_full)
