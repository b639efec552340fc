"""Rows an engine's correction rejects after the decision (verl): found from the masks, relabelled."""

from __future__ import annotations

import torch

from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.late_rejection import masked_rows, reject_late


def test_a_zeroed_mask_is_a_rejected_row_and_thinned_masks_count_tokens() -> None:
    before = [torch.ones(4), torch.ones(4), torch.tensor([1, 1, 0, 0]), torch.zeros(4)]
    after = [torch.zeros(4), torch.tensor([1, 0, 1, 0]), torch.tensor([1, 1, 0, 0]), torch.zeros(4)]
    rejected, tokens = masked_rows(before, after)
    # the excluded row (no tokens before) is not the correction's; the thinned one keeps its cause
    assert rejected == [True, False, False, False] and tokens == 2


def test_only_admitted_rows_become_off_policy_and_the_shares_follow() -> None:
    causes = [Cause.CORRECT, Cause.WRONG, Cause.INVALID, Cause.CORRECT]
    admit = torch.tensor([True, True, False, True])
    new, admitted, m = reject_late(causes, admit, [False, True, False, False])
    assert new == [Cause.CORRECT, Cause.OFF_POLICY, Cause.INVALID, Cause.CORRECT]
    assert admitted.tolist() == [True, False, False, True]
    assert m["causes/wrong"] == 0.0 and m["causes/off_policy"] == 0.25 and m["causes/correct"] == 0.5
    assert m["failure/excluded_frac"] == 0.5 and m["offpolicy/rejected"] == 0.25


def test_nothing_rejected_changes_nothing() -> None:
    causes = [Cause.CORRECT, Cause.WRONG]
    new, admitted, m = reject_late(causes, torch.tensor([True, True]), [False, False])
    assert new == causes and admitted.tolist() == [True, True] and "causes/off_policy" not in m
