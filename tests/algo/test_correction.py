"""The off-policy correction (rlvr.algo.correction): weights, masks and the mismatch it reports."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from rlvr.algo.correction import CorrectionSettings, correction, mismatch


def _pair(n: int = 4, t: int = 6, gap: float = 0.05, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    behaviour = -torch.rand(n, t, generator=g) * 3
    return behaviour, behaviour + torch.randn(n, t, generator=g) * gap


def test_no_gap_no_correction() -> None:
    b, _ = _pair()
    c = correction(b, b.clone(), torch.ones_like(b), CorrectionSettings(token_cap=2.0, geometric_band=(0.9, 1.1)))
    assert torch.equal(c.weights, torch.ones_like(b)) and not c.rejected.any()
    assert c.metrics["offpolicy/k1"] == 0.0 and c.metrics["offpolicy/k3"] == 0.0


def test_token_cap_truncates_each_ratio_and_counts_the_share() -> None:
    b, p = _pair(gap=0.5)
    mask = torch.ones_like(b)
    c = correction(b, p, mask, CorrectionSettings(token_cap=1.2))
    ratio = torch.exp(p - b)
    torch.testing.assert_close(c.weights, ratio.clamp(max=1.2))
    assert c.metrics["offpolicy/token_truncated"] == pytest.approx(float((ratio > 1.2).float().mean()))
    assert c.metrics["offpolicy/weight_max"] <= 1.2 + 1e-6
    assert not c.rejected.any()  # a token weight rejects no row


def test_geometric_band_is_length_normalised_and_the_product_mask_is_not() -> None:
    """The product-form trap (NeMo-RL #2269): on a long completion a small gap per token compounds.
    A 2,000-token row with log-ratio 0.002 per token: geometric mean e^0.002 (inside a 1% band),
    product e^4 ~ 55 (far above TRL's cap of 3)."""
    b = torch.full((2, 2000), -1.0)
    p = b + 0.002
    mask = torch.ones_like(b)
    mask[1, 10:] = 0  # a 10-token row: the same per-token gap, product e^0.02
    geo = correction(b, p, mask, CorrectionSettings(geometric_band=(0.99, 1.01)))
    prod = correction(b, p, mask, CorrectionSettings(product="mask", product_cap=3.0))
    assert geo.rejected.tolist() == [False, False]
    assert prod.rejected.tolist() == [True, False]
    assert geo.metrics["offpolicy/geometric_mean_ratio"] == pytest.approx(math.exp(0.002), rel=1e-5)


def test_geometric_band_rejects_rows_outside_either_side() -> None:
    b = torch.full((3, 5), -1.0)
    p = torch.stack([b[0] + 0.1, b[1] - 0.1, b[2] + 0.001])
    c = correction(b, p, torch.ones_like(b), CorrectionSettings(geometric_band=(0.95, 1.05)))
    assert c.rejected.tolist() == [True, True, False]
    assert c.metrics["offpolicy/rejected"] == pytest.approx(2 / 3)


def test_token_veto_rejects_a_row_with_one_outlier() -> None:
    b = torch.full((2, 50), -1.0)
    p = b.clone()
    p[0, 17] = -6.0  # one token the trainer finds e^-5 times as likely as the sampler did
    c = correction(b, p, torch.ones_like(b), CorrectionSettings(token_veto=0.1, geometric_band=(0.5, 2.0)))
    assert c.rejected.tolist() == [True, False]
    assert c.metrics["offpolicy/veto_rejected"] == 0.5 and c.metrics["offpolicy/geometric_rejected"] == 0.0


def test_product_truncate_weights_every_token_of_its_row() -> None:
    b = torch.full((2, 3), -1.0)
    p = torch.stack([b[0] + 1.0, b[1] - 0.1])  # products e^3 (capped at 3) and e^-0.3
    c = correction(b, p, torch.ones_like(b), CorrectionSettings(product="truncate", product_cap=3.0))
    torch.testing.assert_close(c.weights[0], torch.full((3,), 3.0))
    torch.testing.assert_close(c.weights[1], torch.full((3,), math.exp(-0.3)))


def test_masked_tokens_and_empty_rows_count_nowhere() -> None:
    b, p = _pair(gap=0.3)
    mask = torch.ones_like(b)
    mask[0] = 0  # a row with no trained token
    mask[1, 3:] = 0
    p2 = p.clone()
    p2[0] += 5.0  # whatever sits outside the mask
    p2[1, 3:] -= 5.0
    s = CorrectionSettings(token_cap=2.0, geometric_band=(0.9, 1.1), token_veto=0.5)
    a, c = correction(b, p, mask, s), correction(b, p2, mask, s)
    assert a.rejected.tolist() == c.rejected.tolist() and not a.rejected[0]
    assert a.metrics == c.metrics
    assert float(c.weights[0].abs().sum()) == 0.0


def test_mismatch_estimators() -> None:
    b, p = _pair(gap=0.2)
    mask = torch.ones_like(b)
    m = mismatch(b, p, mask)
    log_r = p - b
    assert m["offpolicy/k1"] == pytest.approx(float((-log_r).mean()), abs=1e-6)
    assert m["offpolicy/k3"] == pytest.approx(float((log_r.exp() - 1 - log_r).mean()), abs=1e-6)
    assert m["offpolicy/k3"] > 0  # k3 is never negative, k1 may be
    assert m["offpolicy/k3_seq"] == pytest.approx(m["offpolicy/k3"] * b.shape[1], rel=1e-5)


def test_weights_reach_the_loss_as_token_factors() -> None:
    """The loss's policy term is multiplied token by token; weights of 1 change nothing."""
    from rlvr.algo.loss import Normalizer, policy_loss

    b, p = _pair(gap=0.1)
    logp = p.clone().requires_grad_(True)
    mask = torch.ones_like(b)
    norm = Normalizer.of(mask, max_len=b.shape[1])
    adv = torch.tensor([1.0, -1.0, 0.5, 2.0])
    plain, _ = policy_loss(logp, p, adv, mask, norm)
    ones, _ = policy_loss(logp, p, adv, mask, norm, is_weights=torch.ones_like(b))
    assert float(plain.detach()) == float(ones.detach())
    w = torch.rand(b.shape, generator=torch.Generator().manual_seed(3))
    weighted, _ = policy_loss(logp, p, adv, mask, norm, is_weights=w)
    # at ratio 1 each token's term is -A: the weighted mean is -sum(w * A) / tokens
    assert float(weighted.detach()) == pytest.approx(float(-(w * adv[:, None]).sum() / mask.sum()), rel=1e-5)
