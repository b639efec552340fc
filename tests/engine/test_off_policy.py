"""Rollouts the trainer did not sample, on rlvr's engine: proximal log-probs recomputed, the gap
corrected, a row the sequence mask rejects is cause ``off_policy`` (out of its group, resampled,
logged), and a lagged sampler (``off_policy.lag``) as a stale buffer would hand rollouts over."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import load_config
from rlvr.engine.trainer import GRPOTrainer
from rlvr.errors import ConfigError

TINY = [
    "model.hidden=32",
    "model.layers=1",
    "model.heads=2",
    "rollout.prompts_per_step=3",
    "rollout.group_size=4",
    "rollout.max_new_tokens=16",
    "run.eval_every=0",
    "data.eval_size=4",
    "optim.lr=1e-2",
    "rewards.weights={cosine: 1.0}",
    "rewards.options={}",
]


def _trainer(tmp_path, *extra: str) -> GRPOTrainer:
    return GRPOTrainer(load_config(None, [*TINY, f"run.out_dir={tmp_path}", *extra]))


def test_recomputed_proximal_of_an_on_policy_batch_is_the_samplers(tmp_path) -> None:
    """float32 sampling, no lag: the trainer's recomputed log-probs are the sampler's (to float
    noise), so recompute and bypass train the same and nothing is rejected at a tight band."""
    tr = _trainer(tmp_path, "off_policy.proximal=recompute", "off_policy.geometric_band=[0.999, 1.001]")
    b = tr.rollout(tr.data.take(3))
    proximal, corr = tr.learner.off_policy(b)
    assert proximal is not None and corr is not None
    mask = b.completion_mask.bool()
    assert float((proximal - b.logprobs).abs()[mask].max()) < 1e-4
    assert not corr.rejected.any() and corr.metrics["offpolicy/k3"] < 1e-8


def test_bf16_sampling_a_tight_band_makes_off_policy_rows_resampled_and_logged(tmp_path, bf16_numerics) -> None:
    tr = _trainer(
        tmp_path,
        "rollout.dtype=bfloat16",
        "off_policy.proximal=recompute",
        "off_policy.geometric_band=[0.9999, 1.0001]",
        "run.steps=2",
    )
    tr.train()
    rows = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    replaced = [r for r in rows if r.get("replaced")]
    final = [r for r in rows if not r.get("replaced")]
    assert any(r["cause"] == "off_policy" for r in replaced), "bfloat16 sampling at a 1e-4 band must reject rows"
    assert all(not r["admitted"] for r in replaced)
    assert all(not r["admitted"] for r in final if r["cause"] == "off_policy")
    logged = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    train = [m for m in logged if "offpolicy/geometric_rejected" in m]
    assert len(train) == 2 and any(m["offpolicy/geometric_rejected"] > 0 for m in train)
    assert all(m["offpolicy/k3"] > 0 for m in train)  # bfloat16 vs float32: a gap, measured
    for m in train:  # the cause is counted: its share is the rows still rejected after the redraw
        step = [r for r in final if r["step"] == m["step"]]
        assert m["causes/off_policy"] == pytest.approx(sum(r["cause"] == "off_policy" for r in step) / len(step))


def test_after_a_redraw_only_the_redrawn_rows_are_run_again_to_the_same_log_probs(tmp_path) -> None:
    tr = _trainer(tmp_path, "off_policy.proximal=recompute", "off_policy.geometric_band=[0.9, 1.1]")
    samples = tr.data.take(3)
    b = tr.rollout(samples)
    before, _ = tr.learner.off_policy(b)
    rows = [1, 6, 7]
    redrawn = b.replace_rows(rows, tr.draws.rollout([samples[i // 4] for i in rows], 1, (31, 1)), tr.tok.pad_token_id)
    runs: list[int] = []
    real = tr.learner.logprobs
    tr.learner.logprobs = lambda batch: runs.append(batch.completion_ids.shape[0]) or real(batch)  # type: ignore[method-assign]
    assert before is not None
    spliced, corr = tr.learner.off_policy(redrawn, known=(before, rows))
    full, corr_full = tr.learner.off_policy(redrawn)
    assert runs == [3, 12]  # the redrawn rows, then (for the comparison) the whole batch
    assert spliced is not None and full is not None and corr is not None and corr_full is not None
    mask = redrawn.completion_mask.bool()
    assert float((spliced - full).abs()[mask].max()) < 1e-5
    assert torch.equal(corr.rejected, corr_full.rejected)


def test_a_lagged_sampler_hands_over_rollouts_of_older_versions(tmp_path) -> None:
    tr = _trainer(tmp_path, "off_policy.lag=2", "failure.max_staleness=2", "off_policy.proximal=recompute")
    seen: list[list[int]] = []
    real_update = tr.learner.update
    tr.learner.update = lambda batch, adv, admit, **kw: (
        seen.append(sorted(set(batch.versions)))
        or real_update(  # type: ignore[method-assign]
            batch, adv, admit, **kw
        )
    )
    ms = [tr.train_step() for _ in range(4)]
    assert seen == [[0], [0], [0], [1]]  # the step after s updates samples with version max(0, s - lag)
    assert ms[0]["offpolicy/k3"] < 1e-8 and ms[3]["offpolicy/k3"] > 1e-5  # a gap once the sampler lags
    assert all(m["causes/stale"] == 0.0 for m in ms)  # within failure.max_staleness


def test_bypass_reports_the_gap_without_correcting(tmp_path) -> None:
    tr = _trainer(tmp_path, "off_policy.lag=1")
    ms = [tr.train_step() for _ in range(3)]
    assert "offpolicy/rejected" not in ms[-1] and ms[-1]["offpolicy/k3"] > 0


@pytest.mark.parametrize(
    ("sets", "says"),
    [
        (["off_policy.token_cap=2"], "off_policy.proximal: recompute"),
        (["off_policy.lag=3"], "failure.max_staleness"),
        (["off_policy.geometric_band=[1.01, 1.1]"], "0 < low < 1 < high"),
        (["engine=trl", "off_policy.proximal=recompute", "off_policy.token_cap=2"], "nothing is off-policy"),
        (
            ["engine=trl", "trl.use_vllm=true", "off_policy.proximal=recompute", "off_policy.geometric_band=[0.9,1.1]"],
            "geometric mask runs on engine rlvr",
        ),
        (["engine=trl", "off_policy.lag=1", "failure.max_staleness=1"], "rlvr's own engine"),
    ],
)
def test_settings_an_engine_cannot_honour_are_refused(sets: list[str], says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(")):
        load_config(None, sets)
