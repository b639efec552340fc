"""The trainer: a SIGKILLed run resumes to the same result; accumulation equals the full batch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import load_config
from rlvr.engine.trainer import GRPOTrainer

# A tiny random model; cosine (length-scaled) rewards differ between rollouts even when all are wrong,
# so every step has advantages and changes the weights.
TINY = [
    "model.hidden=32",
    "model.layers=1",
    "model.heads=2",
    "rollout.prompts_per_step=2",
    "rollout.group_size=4",
    "rollout.max_new_tokens=24",
    "run.eval_every=0",
    "data.eval_size=4",
    "rewards.weights={cosine: 1.0, format: 0.2}",
    "rewards.options={format: {think_tag: null}}",
]


def _train_cmd(out: Path, steps: int, *extra: str) -> list[str]:
    sets = [*TINY, f"run.steps={steps}", "run.save_every=2", f"run.out_dir={out}"]
    return [
        sys.executable,
        "-c",
        "from rlvr.cli.app import main; main()",
        "train",
        *[a for s in sets for a in ("--set", s)],
        *extra,
    ]


def test_resume_without_checkpoint_is_an_error(tmp_path):
    r = subprocess.run(
        _train_cmd(tmp_path / "none", 2, "--resume", str(tmp_path / "none")), capture_output=True, text=True
    )
    assert r.returncode == 2 and "no such run folder" in r.stderr and not (tmp_path / "none").exists()
    (tmp_path / "empty").mkdir()
    r = subprocess.run(
        _train_cmd(tmp_path / "empty", 2, "--resume", str(tmp_path / "empty")), capture_output=True, text=True
    )
    assert r.returncode == 2 and "no checkpoint to continue" in r.stderr and not any((tmp_path / "empty").iterdir())


def test_bad_config_exit_code_and_message(tmp_path):
    r = subprocess.run(
        [sys.executable, "-c", "from rlvr.cli.app import main; main()", "train", "--set", "algo.loss=ppo"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "algo.loss" in r.stderr and "dapo" in r.stderr


def _run(tmp: Path, *extra: str) -> dict[str, torch.Tensor]:
    cfg = load_config(None, [*TINY, "run.steps=2", f"run.out_dir={tmp}", "run.save_every=100", *extra])
    trainer = GRPOTrainer(cfg)
    trainer.train()
    return {k: v.clone() for k, v in trainer.model.state_dict().items()}


@pytest.mark.parametrize("loss", ["grpo", "dr_grpo", "dapo"])
def test_gradient_accumulation_equals_full_batch(tmp_path, loss):
    full = _run(tmp_path / "full", f"algo.loss={loss}")
    acc = _run(tmp_path / "acc", f"algo.loss={loss}", "algo.micro_batch=4")  # one group per pass
    start = _run(tmp_path / "zero", f"algo.loss={loss}", "optim.lr=1e-12")
    moved = max(float((full[k] - start[k]).abs().max()) for k in full)
    assert moved > 1e-5  # the test would be vacuous if nothing trained
    for k in full:
        torch.testing.assert_close(acc[k], full[k], atol=1e-6, rtol=1e-5)


def test_a_run_on_the_replayed_static_step_samples_and_learns_as_the_default_one(tmp_path):
    """rollout.cuda_graphs (on a CPU: the recorded step replayed eagerly): the same rollouts, so the
    same update up to the float rounding of attending over the whole cache."""
    default = _run(tmp_path / "default")
    graphed = _run(tmp_path / "graphed", "rollout.cuda_graphs=true")
    read = [
        [json.loads(x)["completion"] for x in (tmp_path / d / "rollouts.jsonl").read_text().splitlines()]
        for d in ("default", "graphed")
    ]
    assert read[0] == read[1] and len(read[0]) >= 16
    for k in default:
        torch.testing.assert_close(graphed[k], default[k], atol=1e-5, rtol=1e-4)


def test_kl_reference_and_multiple_iterations_run(tmp_path):
    cfg = load_config(
        None,
        [
            *TINY,
            "run.steps=2",
            f"run.out_dir={tmp_path}",
            "algo.beta=0.1",
            "algo.num_iterations=2",
            "algo.epsilon_high=0.28",
            "optim.schedule=cosine",
        ],
    )
    trainer = GRPOTrainer(cfg)
    trainer.train()
    m = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert m[0]["step"] == 0 and "eval/accuracy" in m[0]  # held-out accuracy before training
    m = [x for x in m if "verify/wrong" in x]
    assert len(m) == 2 and m[-1]["loss/kl"] >= 0 and m[-1]["loss/approx_kl"] >= 0
    for key in (
        "reward/total/mean",
        "verify/no_answer",
        "verify/wrong",
        "groups/zero_std_frac",
        "completions/mean_length",
        "completions/truncated_frac",
        "loss/policy",
        "loss/clipfrac",
        "grad_norm",
        "lr",
        "tokens_per_s",
        "weights/cosine",
        "alarms/multiple_answers",
        "alarms/answer_in_reasoning",
        "alarms/format_without_accuracy",
        "causes/no_answer",
    ):
        assert key in m[-1], key


def test_bf16_autocast_trains(tmp_path, bf16_numerics):
    cfg = load_config(None, [*TINY, "run.steps=2", f"run.out_dir={tmp_path}", "model.autocast=bf16"])
    trainer = GRPOTrainer(cfg)
    start = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.train()
    end = trainer.model.state_dict()
    assert all(v.dtype == torch.float32 for v in end.values())  # weights stay float32
    assert any(not torch.equal(start[k], end[k]) for k in start)


def test_rollout_log_and_cause_metrics(tmp_path):
    cfg = load_config(None, [*TINY, "run.steps=2", f"run.out_dir={tmp_path}", "algo.advantage_clip=0.5"])
    trainer = GRPOTrainer(cfg)
    trainer.train()
    rows = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    rows = [r for r in rows if not r.get("replaced")]  # resampled-away originals are logged too
    assert [r["step"] for r in rows] == [1] * 8 + [2] * 8  # prompts_per_step x group_size per step
    for r in rows:
        assert r["policy_version"] == r["step"] - 1 and abs(r["advantage"]) <= 0.5
        status, fin = r["verdict"]["status"], r["finish"]
        if not r["completion"].strip() or status in ("timeout", "error"):
            assert r["cause"] == "invalid"
        elif fin == "length":
            assert r["cause"] == "truncated"
        else:
            assert r["cause"] == {"no_answer": "no_answer", "wrong": "wrong", "correct": "correct"}[status]
        assert set(r["components"]) == {"cosine", "format"}
    m = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if '"causes/' in x]
    assert len(m) == 2 and all(abs(sum(v for k, v in x.items() if k.startswith("causes/")) - 1) < 1e-9 for x in m)
    assert all(0 <= x["advantages/clipped_frac"] <= 1 for x in m)


def test_rloo_trains_on_rlvrs_engine_with_its_own_advantages(tmp_path):
    """``algo.estimator: rloo``: every logged advantage is the row's total minus the mean of the
    other admitted rows of its group."""
    cfg = load_config(None, [*TINY, "run.steps=1", f"run.out_dir={tmp_path}", "algo.estimator=rloo"])
    GRPOTrainer(cfg).train()
    rows = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    rows = [r for r in rows if not r.get("replaced")]
    g = cfg.rollout.group_size
    for k in range(0, len(rows), g):
        group = [r for r in rows[k : k + g] if r["admitted"]]
        for r in group:
            others = [o["total"] for o in group if o is not r]
            want = r["total"] - sum(others) / len(others) if others else 0.0
            assert r["advantage"] == pytest.approx(want, abs=1e-5)


def test_cold_start_keeps_format_deaths_out_of_the_loss(tmp_path):
    # an untrained model: most rollouts are format deaths, injected by construction
    cfg = load_config(
        None,
        [*TINY, "run.steps=2", f"run.out_dir={tmp_path}", "failure.cold_start=true", "failure.exclude_truncated=true"],
    )
    GRPOTrainer(cfg).train()
    rows = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    dead = [r for r in rows if r["cause"] in ("no_answer", "truncated", "invalid")]
    assert dead, "expected format deaths from an untrained model"
    assert all(not r["admitted"] and r["advantage"] == 0.0 for r in dead)
    m = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if "failure/cold_start" in x]
    assert [x["failure/cold_start"] for x in m] == [1.0, 1.0]
    for x in m:
        step_rows = [r for r in rows if r["step"] == x["step"] and not r.get("replaced")]
        assert x["failure/excluded_frac"] == sum(not r["admitted"] for r in step_rows) / len(step_rows)


def test_invalid_and_truncated_rollouts_are_resampled_and_logged(tmp_path):
    cfg = load_config(
        None,
        [
            *TINY,
            "run.steps=2",
            f"run.out_dir={tmp_path}",
            "failure.exclude_truncated=true",
            "failure.resample_tries=2",
            "rollout.max_new_tokens=6",
        ],
    )
    GRPOTrainer(cfg).train()
    rows = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    replaced = [r for r in rows if r.get("replaced")]
    assert replaced, "an untrained model cut at 6 tokens truncates: there must be replacements"
    assert all(
        r["cause"] in ("invalid", "truncated") and not r["admitted"] and r["attempt"] in (1, 2) for r in replaced
    )
    m = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if "failure/resampled" in x]
    for x in m:
        assert x["failure/resampled"] == sum(r["step"] == x["step"] for r in replaced)
    final = [r for r in rows if not r.get("replaced")]
    assert len(final) == 16
    assert all(not r["admitted"] for r in final if r["cause"] in ("invalid", "truncated"))


def test_dynamic_sampling_draws_extra_groups_when_all_are_flat(tmp_path):
    # an untrained model is always wrong: every group is flat in accuracy, so each step uses all
    # its extra rounds and still trains on prompts_per_step groups
    cfg = load_config(
        None,
        [*TINY, "run.steps=2", f"run.out_dir={tmp_path}", "failure.dynamic_sampling=2", "failure.resample_tries=0"],
    )
    trainer = GRPOTrainer(cfg)
    trainer.train()
    assert trainer.data.position == 2 * 2 * (1 + 2)  # steps x prompts_per_step x (1 + extra rounds)
    m = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if "failure/dynamic_rounds" in x]
    assert [x["failure/dynamic_rounds"] for x in m] == [2.0, 2.0] and all(
        x["groups/flat_accuracy_frac"] == 1.0 for x in m
    )
    rows = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1] * 8 + [2] * 8


def test_groups_drawn_ahead_are_used_while_fresh_and_dropped_when_stale(tmp_path):
    cfg = load_config(
        None,
        [
            *TINY,
            "run.steps=10",
            f"run.out_dir={tmp_path}",
            "failure.dynamic_sampling=1",
            "failure.max_staleness=1",
            "failure.resample_tries=0",
        ],
    )
    trainer = GRPOTrainer(cfg)
    seen: list[list[int]] = []
    real_update = trainer.learner.update
    trainer.learner.update = lambda batch, adv, admit, **kw: (
        seen.append(list(batch.versions))
        or real_update(  # type: ignore[method-assign]
            batch, adv, admit, **kw
        )
    )

    def ahead(version: int):
        sample = trainer.data.take(1)[0]
        trainer.step = trainer.draws.step = trainer.draws.version = version
        return trainer.draws.groups([sample])

    trainer.ahead.put(0, ahead(0))  # made at step 0, used at step 3: older than max_staleness
    trainer.step = 3
    m = trainer.train_step()
    assert (m["failure/stale_dropped"], m["failure/buffer_used"]) == (1.0, 0.0)
    assert 0 not in seen[-1]  # the stale group never reached the loss
    trainer.ahead.put(3, ahead(3))  # made at step 3, used at step 4: fresh enough
    trainer.step = 4
    m = trainer.train_step()
    assert (m["failure/stale_dropped"], m["failure/buffer_used"]) == (0.0, 1.0)
    assert seen[-1][:4] == [3] * 4  # the buffered group leads the batch, with its own version


def test_a_down_judge_makes_rows_uncertain_which_are_invalid_and_resampled(tmp_path):
    cfg = load_config(
        None,
        [
            *TINY,
            "run.steps=1",
            f"run.out_dir={tmp_path}",
            "rollout.max_new_tokens=8",
            "rewards.weights={accuracy: 1.0, format: 0.2}",
            "failure.resample_tries=1",
            "judge={base_url: 'http://127.0.0.1:9/v1', open_tasks: [math], timeout: 0.5, retries: 0}",
        ],
    )
    trainer = GRPOTrainer(cfg)
    # an untrained model rarely writes an answer: give every rollout one, so each goes to the judge
    trainer.draws.rollout = _with_answers(trainer.draws.rollout)
    trainer.train()
    rows = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert rows
    assert all(r["verdict"]["status"] == "uncertain" and r["cause"] == "invalid" and not r["admitted"] for r in rows)
    assert any(r.get("replaced") for r in rows)  # uncertain rows were resampled
    m = next(json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines() if "judge/rows" in x)
    assert m["judge/judged"] == m["judge/rows"] > 0 and m["judge/uncertain_rate"] == 1.0


def _with_answers(rollout):
    def wrapped(*a, **k):
        batch = rollout(*a, **k)
        batch.texts = [f"<answer>{i}</answer>" for i in range(len(batch.texts))]
        return batch

    return wrapped
