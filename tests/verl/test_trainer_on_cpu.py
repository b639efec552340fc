"""rlvr's verl trainer passes quarantined prompts over at the dataloader, before they are generated:
its ``_fetch_one_gen_batch`` on verl's own RLHFDataset and StatefulDataLoader."""

from __future__ import annotations

import pandas as pd
import pytest
from omegaconf import OmegaConf
from torchdata.stateful_dataloader import StatefulDataLoader
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

from rlvr.config import FailureConfig
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.step import FailureAware
from rlvr.errors import DataError
from rlvr.integrations.verl.replay import RlvrReplayBuffer
from rlvr.integrations.verl.trainer import RlvrTrainer
from rlvr.models.tiny import build_tokenizer


def _trainer(tmp_path, rows: list[dict]) -> tuple[RlvrTrainer, FailureAware]:
    path = tmp_path / "train.parquet"
    pd.DataFrame(rows).to_parquet(path)
    ds = RLHFDataset(
        data_files=[str(path)],
        tokenizer=build_tokenizer(),
        config=OmegaConf.create(
            {"max_prompt_length": 256, "filter_overlong_prompts": False, "cache_dir": str(tmp_path / "cache")}
        ),
    )
    t = RlvrTrainer.__new__(RlvrTrainer)  # only what _fetch_one_gen_batch uses: no workers, no Ray
    t.train_dataset = ds
    t.train_dataloader = StatefulDataLoader(ds, batch_size=1, shuffle=False, collate_fn=collate_fn)
    t.train_dataloader_it = None
    t.config = OmegaConf.create({"data": {"train_batch_size": 2}})
    t.replay_buffer = RlvrReplayBuffer(
        trainer_mode="sync",
        trainer_config={},
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs={},
        refill_fn=lambda n: n,
        sync_refill_failed_groups=True,
        gen_batch_size=1,
        train_batch_size=2,
    )
    fa = t.replay_buffer.fa = FailureAware(FailureConfig(quarantine_consecutive=1), group_size=4)
    return t, fa


def _row(i: int | None, q: str) -> dict:
    return {
        "prompt": [{"role": "user", "content": q}],
        "data_source": "openai/gsm8k",
        "reward_model": {"style": "rule", "ground_truth": "4"},
        "extra_info": {"index": i},
    }


def _pid(batch) -> str:
    from rlvr.integrations.verl.trainer import _prompt_id

    return _prompt_id(batch)


def test_quarantined_prompts_are_passed_over_at_the_dataloader(tmp_path) -> None:
    t, fa = _trainer(tmp_path, [_row(i, f"{i}+{i}") for i in range(4)])
    assert [_pid(t._fetch_one_gen_batch()) for _ in range(4)] == ["0", "1", "2", "3"]
    fa.quarantine.observe("1", [Cause.INVALID] * 4, step=3)
    fa.quarantine.observe("2", [Cause.INVALID] * 4, step=3)
    # the next epoch: 1 and 2 are never fetched, the stream goes on past them (and wraps)
    assert [_pid(t._fetch_one_gen_batch()) for _ in range(4)] == ["0", "3", "0", "3"]
    for p in ("0", "3"):
        fa.quarantine.observe(p, [Cause.INVALID] * 4, step=4)
    with pytest.raises(DataError, match="every training prompt is quarantined"):
        t._fetch_one_gen_batch()


def test_rows_without_a_prompt_id_are_refused_when_quarantine_counts_by_it(tmp_path) -> None:
    from rlvr.errors import ConfigError
    from rlvr.integrations.verl.settings import check_row

    t, _ = _trainer(tmp_path, [_row(None, "1+1"), _row(None, "2+2")])
    row = t.train_dataset[0]  # a row as verl's dataset gives it
    with pytest.raises(ConfigError, match=r"row 0: the row has no extra_info.index .*rlvr.failure.quarantine=false"):
        check_row(row, "train.parquet, row 0", needs_id=True)
    assert check_row(row, "train.parquet, row 0", needs_id=False) == "4"
    t, _ = _trainer(tmp_path, [_row(7, "1+1")])
    assert check_row(t.train_dataset[0], "row 0", needs_id=True) == "4"


def test_a_group_evicted_to_resample_gets_its_own_prompt_again_under_a_fresh_uid(tmp_path) -> None:
    """The replay buffer queues a redrawn group's uid; the next fetch submits that uid's prompt again
    (same prompt, a new uid, the attempt count carried over) before any fresh prompt."""
    from rlvr.integrations.verl.trainer import _first

    t, _ = _trainer(tmp_path, [_row(i, f"{i}+{i}") for i in range(4)])
    b0, b1 = t._fetch_one_gen_batch(), t._fetch_one_gen_batch()
    uid = _first(b1, "uid")
    rb = t.replay_buffer
    rb.redraw.append(uid)
    rb._attempt[uid] = 1
    again = t._fetch_one_gen_batch()
    assert _pid(again) == "1" and _first(again, "uid") not in (uid, _first(b0, "uid"))
    assert _first(again, "raw_prompt") == _first(b1, "raw_prompt") and _first(b1, "uid") == uid  # b1 untouched
    assert rb._attempt == {_first(again, "uid"): 1} and not rb.redraw
    assert _pid(t._fetch_one_gen_batch()) == "2"  # then the stream goes on where it was
