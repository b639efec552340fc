"""rlvr's replay buffer on verl's local Ray and TransferQueue, fed as verl's agent loop feeds it:
prompts tagged in TransferQueue, trajectories put with their reward_extra_info, then ``sample``."""

from __future__ import annotations

import json

import pytest
import ray
import torch
import transfer_queue as tq
from omegaconf import OmegaConf
from verl.utils.tensordict_utils import list_of_dict_to_tensordict

from rlvr.integrations.verl.replay import RlvrReplayBuffer
from rlvr.integrations.verl.rows import score_row
from rlvr.rewards import Total

TOTAL = Total({"accuracy": 1.0, "format": 0.2}, options={"format": {"think_tag": None}})


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=4, include_dashboard=False, namespace="rlvr-replay-test", log_to_driver=False)
    tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
    yield
    tq.close()
    ray.shutdown()


@pytest.fixture(autouse=True)
def empty_queue():
    yield
    for partition, items in (tq.kv_list() or {}).items():
        if items:
            tq.kv_clear(keys=list(items), partition_id=partition)


def put_group(uid: str, index: int | None, texts: list[str], gold: str = "4", step: int = 1) -> list[str]:
    """A finished prompt group, stored as verl's AgentLoopWorkerTQ stores it."""
    tq.kv_put(key=uid, partition_id="train", tag={"is_prompt": True, "status": "finished", "global_steps": step})
    fields, tags, keys = [], [], []
    for s, text in enumerate(texts):
        row = score_row(TOTAL, text, gold)
        fields.append(
            {
                "response_mask": torch.ones(6, dtype=torch.int64),
                "extra_fields": {"reward_extra_info": row.extra, "min_global_steps": step},
                "extra_info": {"index": index} if index is not None else {"split": "train"},
                "data_source": "openai/gsm8k",
                "reward_model": {"ground_truth": gold},
            }
        )
        tags.append({"status": "success", "global_steps": step, "min_global_steps": step, "max_global_steps": step})
        keys.append(f"{uid}_{s}_0")
    tq.kv_batch_put(keys=keys, partition_id="train", fields=list_of_dict_to_tensordict(fields), tags=tags)
    return keys


def buffer(tmp_path, refill, redraw_groups: bool = False, **failure) -> RlvrReplayBuffer:
    return RlvrReplayBuffer(
        trainer_mode="sync",
        trainer_config={},
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        redraw_groups=redraw_groups,
        sampler_kwargs={"rlvr": {"failure": {"quarantine": True, **failure}}},
        poll_interval=0.01,
        refill_fn=refill,
        sync_refill_failed_groups=True,
        gen_batch_size=1,
        train_batch_size=2,
        run_dir=tmp_path,
    )


def test_excluded_rows_lose_their_response_mask_and_the_step_logs_causes(tmp_path):
    keys = put_group("u1", 1, ["<answer>4</answer>", "<answer>5</answer>", "", "<answer>4</answer>"])
    keys += put_group("u2", 2, ["<answer>4</answer>", "no idea", "<answer>4</answer>", "<answer>3</answer>"])
    rb = buffer(tmp_path, refill=lambda n: n)
    batch, metrics = rb.sample(global_steps=1, partition_id="train", batch_size=2)
    assert sorted(batch.keys) == sorted(keys)
    masks = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["response_mask"])["response_mask"]
    kept = {k: int(m.sum()) for k, m in zip(batch.keys, masks.unbind(0), strict=True)}
    assert kept["u1_2_0"] == 0 and all(v == 6 for k, v in kept.items() if k != "u1_2_0")  # only the empty one
    assert metrics["causes/invalid"] == pytest.approx(1 / 8) and metrics["causes/no_answer"] == pytest.approx(1 / 8)
    assert metrics["failure/excluded_rows"] == 1.0 and "verify/correct" in metrics
    rb.close()
    rollouts = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 8 and {r["cause"] for r in rollouts} >= {"invalid", "no_answer", "wrong", "correct"}
    assert json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])["step"] == 1


def test_a_prompt_that_keeps_dying_is_quarantined_evicted_and_refilled(tmp_path):
    fresh = []

    def refill(n: int) -> int:  # what verl's trainer does: submit n fresh prompts, here already generated
        for _ in range(n):
            fresh.append(put_group(f"f{len(fresh)}", 100 + len(fresh), ["<answer>4</answer>", "<answer>1</answer>"]))
        return n

    rb = buffer(tmp_path, refill, quarantine_consecutive=1)
    put_group("d1", 9, ["", ""])  # every rollout invalid: the prompt's group died
    put_group("ok", 3, ["<answer>4</answer>", "<answer>2</answer>"])
    rb.sample(global_steps=1, partition_id="train", batch_size=2)
    assert rb.fa.skip("9") and "9" in (tmp_path / "quarantine.jsonl").read_text()
    put_group("d2", 9, ["<answer>4</answer>", "<answer>4</answer>"], step=2)  # prompt 9 came back
    batch, metrics = rb.sample(global_steps=2, partition_id="train", batch_size=1)
    assert {k.split("_")[0] for k in batch.keys} == {"f0"} and len(fresh) == 1  # evicted, refilled exactly
    assert metrics.get("training/rollout_failure/evicted_samples") == 1
    rb.close()


def test_trajectories_without_a_prompt_id_are_refused_while_quarantine_counts_by_it(tmp_path):
    from rlvr.errors import ConfigError

    put_group("u9", None, ["<answer>4</answer>"] * 4)
    put_group("u8", None, ["<answer>4</answer>"] * 4)
    rb = buffer(tmp_path, refill=lambda n: n)
    with pytest.raises(ConfigError, match=r"trajectory u\d_0_0: its extra_info has no index"):
        rb.sample(global_steps=1, partition_id="train", batch_size=2)
    rb.close()


def _redrawing(rb_box: list, index: dict[str, int], attempts: dict[str, list[list[str]]]):
    """verl's trainer's refill as rlvr's trainer makes it: a queued redraw submits the same prompt
    again under a fresh uid (here: generated at once with the given texts)."""

    def refill(n: int) -> int:
        rb = rb_box[0]
        for _ in range(n):
            uid = rb.redraw.pop(0)
            attempt = rb._attempt[uid]
            new = f"{uid}r{attempt}"
            rb.redrawn(uid, new)
            root = uid.split("r")[0]
            index[new] = index[uid]
            put_group(new, index[uid], attempts[root][attempt - 1])
        return n

    return refill


def test_a_group_with_a_row_to_resample_is_generated_again_for_its_prompt(tmp_path):
    index = {"u1": 1, "u2": 2}
    box: list = []
    rb = buffer(
        tmp_path, _redrawing(box, index, {"u1": [["<answer>4</answer>", "<answer>5</answer>"]]}), redraw_groups=True
    )
    box.append(rb)
    put_group("u1", 1, ["<answer>4</answer>", ""])  # one empty (invalid) row
    put_group("u2", 2, ["<answer>4</answer>", "<answer>3</answer>"])
    batch, metrics = rb.sample(global_steps=1, partition_id="train", batch_size=2)
    assert {k.split("_")[0] for k in batch.keys} == {"u1r1", "u2"}  # the prompt again, not a fresh one
    masks = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["response_mask"])["response_mask"]
    assert all(int(m.sum()) == 6 for m in masks.unbind(0))  # nothing left to exclude
    assert metrics["failure/resampled"] == 1.0 and metrics["failure/redrawn_groups"] == 1.0
    assert metrics["causes/invalid"] == 0.0
    rb.close()
    lines = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    replaced = [r for r in lines if r.get("replaced")]
    assert len(lines) == 6 and len(replaced) == 2 and {r["attempt"] for r in replaced} == {1}
    assert sorted(r["cause"] for r in replaced) == ["correct", "invalid"]


def test_redraws_stop_after_the_tries_and_quarantine_judges_the_first_attempt(tmp_path):
    index = {"d1": 9, "ok": 3}
    box: list = []
    rb = buffer(
        tmp_path,
        _redrawing(box, index, {"d1": [["<answer>4</answer>", ""]]}),
        redraw_groups=True,
        resample_tries=1,
        quarantine_consecutive=1,
    )
    box.append(rb)
    put_group("d1", 9, ["", ""])  # the prompt's group died: redrawn once, still one invalid row
    put_group("ok", 3, ["<answer>4</answer>", "<answer>2</answer>"])
    batch, metrics = rb.sample(global_steps=1, partition_id="train", batch_size=2)
    assert {k.split("_")[0] for k in batch.keys} == {"d1r1", "ok"}
    masks = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["response_mask"])["response_mask"]
    kept = {k: int(m.sum()) for k, m in zip(batch.keys, masks.unbind(0), strict=True)}
    assert kept["d1r1_1_0"] == 0 and kept["d1r1_0_0"] == 6  # out of tries: the invalid row is excluded
    assert metrics["failure/excluded_rows"] == 1.0 and metrics["failure/redrawn_groups"] == 1.0
    assert rb.fa.skip("9")  # the first attempt (every row invalid) is what quarantine counted
    assert not rb.redraw and not rb._attempt and not rb._first  # nothing carried into the next step
    rb.close()


def test_rows_verls_rollout_correction_rejects_are_off_policy_in_the_metrics_and_the_run_folder(tmp_path):
    """verl's own ``_compute_advantage`` (rollout correction with a sequence band, then rlvr_grpo) on
    rlvr's trainer: the row whose trainer and sampler log-probs disagree loses its mask there, and
    the replay buffer logs it as ``off_policy``, out of the admitted rows."""
    from rlvr.integrations.verl import advantage
    from rlvr.integrations.verl.trainer import RlvrTrainer

    advantage.register()
    texts = ["<answer>4</answer>", "<answer>5</answer>", "<answer>4</answer>", "<answer>3</answer>"]
    put_group("u1", 1, texts)
    put_group("u2", 2, texts)
    rb = buffer(tmp_path, refill=lambda n: n)
    batch, metrics = rb.sample(global_steps=1, partition_id="train", batch_size=2)
    far = "u1_2_0"  # a right answer the sampler drew far from the trainer's policy
    fields = []
    for k in batch.keys:
        rollout = torch.full((6,), -1.0)
        scores = torch.zeros(6)
        scores[-1] = 1.0 if texts[int(k.split("_")[1])] == "<answer>4</answer>" else 0.0
        fields.append(
            {
                "uid": k.split("_")[0],
                "rm_scores": scores,
                "rollout_log_probs": rollout,
                "old_log_probs": rollout + (2.0 if k == far else 0.01),
            }
        )
    tq.kv_batch_put(keys=batch.keys, partition_id="train", fields=list_of_dict_to_tensordict(fields))
    t = RlvrTrainer.__new__(RlvrTrainer)  # only what _compute_advantage uses: no workers
    t.replay_buffer = rb
    t.config = OmegaConf.create(
        {
            "algorithm": {
                "use_kl_in_reward": False,
                "adv_estimator": "rlvr_grpo",
                "gamma": 1.0,
                "lam": 1.0,
                "norm_adv_by_std_in_grpo": True,
                "rollout_correction": {"rollout_rs": "seq_mean_k1", "rollout_rs_threshold": "0.5_2.0"},
            },
            "actor_rollout_ref": {"rollout": {"n": 4}},
        }
    )
    t._compute_advantage(batch, metrics=metrics)
    got = tq.kv_batch_get(keys=batch.keys, partition_id="train", select_fields=["response_mask", "advantages"])
    adv = dict(zip(batch.keys, got["advantages"].unbind(0), strict=True))
    assert float(adv[far].abs().sum()) == 0.0  # out of the loss, and of its group's baseline:
    assert float(adv["u1_0_0"][0]) > float(adv["u2_0_0"][0]) > 0  # u1's mean is 1/3 without it, u2's 1/2
    assert metrics["causes/off_policy"] == pytest.approx(1 / 8) and metrics["causes/correct"] == pytest.approx(3 / 8)
    assert metrics["offpolicy/rejected"] == pytest.approx(1 / 8) and metrics["failure/excluded_rows"] == 1.0
    rb.close()
    rollouts = {r["key"]: r for r in map(json.loads, (tmp_path / "rollouts.jsonl").read_text().splitlines())}
    assert rollouts[far]["cause"] == "off_policy" and rollouts[far]["admitted"] is False
    assert sum(r["cause"] == "off_policy" for r in rollouts.values()) == 1
    logged = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert logged["causes/off_policy"] == pytest.approx(1 / 8)
