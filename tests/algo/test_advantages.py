"""Group advantages on hand-made groups."""

import math

import pytest

torch = pytest.importorskip("torch")

from rlvr.algo.advantages import group_advantages, zero_std_fraction


def test_all_equal_group_is_zero_and_not_nan():
    adv = group_advantages(torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]), 4)
    assert adv.tolist() == [0.0] * 8


def test_hand_computed_group():
    # rewards 1, 0, 0, 0: mean 0.25, unbiased std sqrt(0.25) = 0.5
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), 4, eps=0.0)
    assert adv.tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5])
    dr = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), 4, scale=False)
    assert dr.tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25])


def test_mask_excludes_from_statistics_and_zeroes_excluded():
    r = torch.tensor([1.0, 0.0, 0.0, 100.0])  # the 100 is a broken rollout that must not count
    m = torch.tensor([True, True, True, False])
    adv = group_advantages(r, 4, m, eps=0.0)
    # admitted 1, 0, 0: mean 1/3, unbiased std sqrt(1/3)
    s = math.sqrt(1 / 3)
    assert adv.tolist() == pytest.approx([(2 / 3) / s, (-1 / 3) / s, (-1 / 3) / s, 0.0])


def test_one_admitted_rollout_has_no_baseline():
    adv = group_advantages(torch.tensor([1.0, 5.0]), 2, torch.tensor([True, False]))
    assert adv.tolist() == [0.0, 0.0]


def test_clip_and_shape_errors():
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]), 8, clip=1.0)
    assert adv.max().item() == 1.0
    with pytest.raises(ValueError, match="groups of 3"):
        group_advantages(torch.zeros(4), 3)


def test_zero_std_fraction():
    r = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    assert zero_std_fraction(r, 2) == pytest.approx(2 / 3)


def test_indexed_groups_in_any_order_equal_the_contiguous_layout():
    from rlvr.algo.advantages import indexed_group_advantages

    torch.manual_seed(0)
    rewards = torch.rand(12)
    mask = torch.rand(12) > 0.25
    want = group_advantages(rewards, 4, mask, eps=1e-6, clip=1.5)
    perm = torch.randperm(12)  # the groups split and interleaved across the batch
    index = [f"uid{int(i) // 4}" for i in perm]
    got = indexed_group_advantages(rewards[perm], index, mask[perm], eps=1e-6, clip=1.5)
    torch.testing.assert_close(got, want[perm])
    assert float(got[~mask[perm]].abs().sum()) == 0.0  # excluded rows: no advantage


def test_indexed_groups_dr_grpo_and_bad_lengths():
    from rlvr.algo.advantages import indexed_group_advantages

    got = indexed_group_advantages(torch.tensor([1.0, 0.0, 3.0]), ["a", "a", "b"], scale=False)
    assert got.tolist() == [0.5, -0.5, 0.0]  # "b" alone: no baseline
    with pytest.raises(ValueError, match="3 rewards but 2 group ids"):
        indexed_group_advantages(torch.tensor([1.0, 0.0, 3.0]), ["a", "b"])


@pytest.mark.parametrize("scale", ["group", "batch"])
def test_every_row_admitted_gives_trls_advantages_to_the_last_bit(scale):
    """TRL's own statistics (nanmean, nanstd, ``+ 1e-4``) on batches whose float32 results depend on
    the order of operations (correctness + 0.2 x format): equal bit for bit, not merely close."""
    nanstd = pytest.importorskip("trl.trainer.utils").nanstd
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        r = torch.randint(0, 2, (64,), generator=g).float() + 0.2 * torch.randint(0, 2, (64,), generator=g).float()
        mean = torch.nanmean(r.view(-1, 8), dim=1).repeat_interleave(8)
        std = nanstd(r.view(-1, 8), dim=1).repeat_interleave(8) if scale == "group" else nanstd(r).expand_as(r)
        assert torch.equal(group_advantages(r, 8, scale=scale), (r - mean) / (std + 1e-4))
