"""Failure-aware GRPO on TRL's GRPOTrainer: a real TRL run, in one process and across two (torchrun, gloo)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from typer.testing import CliRunner

from rlvr.cli.app import app
from rlvr.config import DecodingConfig, FailureConfig, load_config
from rlvr.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
TINY = [
    "model.hidden=32",
    "model.layers=1",
    "model.heads=2",
    "rollout.prompts_per_step=4",
    "rollout.group_size=4",
    "rollout.max_new_tokens=10",
    "data.eval_size=8",
    "run.eval_every=0",
]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    return {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.slow
def test_two_processes_agree_exclude_without_loss_and_write_one_run_folder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_addr=127.0.0.1",
        f"--master_port={_port()}",
        str(ROOT / "tests" / "integrations" / "trl" / "two_process.py"),
        str(out),
    ]
    res = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    ranks = [json.loads((out / f"rank{k}.json").read_text()) for k in (0, 1)]
    assert ranks[0]["world"] == 2
    # one quarantine set, one cold-start switch: decided on gathered data, identically everywhere
    assert ranks[0]["quarantined"] == ranks[1]["quarantined"] and "dies" in ranks[0]["quarantined"]
    assert ranks[0]["cold_start"] == ranks[1]["cold_start"]
    # excluded rows carry no loss token; the normaliser counts every process's admitted tokens, only those
    for a, b in zip(ranks[0]["loss_inputs"], ranks[1]["loss_inputs"], strict=True):
        for side in (a, b):
            assert all(m == 0 for m, ok in zip(side["mask"], side["admit"]) if not ok)
        assert a["items"] == b["items"] == sum(a["mask"]) + sum(b["mask"])
    # the run folder: every step, every rollout of both processes, the quarantine, the model
    steps = [m for m in _lines(out / "metrics.jsonl") if "reward/total/mean" in m]
    assert [m["step"] for m in steps] == [1, 2, 3, 4]
    assert "loss/policy" in steps[0] and "causes/invalid" in steps[0] and "failure/resampled" in steps[0]
    rollouts = _lines(out / "rollouts.jsonl")
    assert {r["rank"] for r in rollouts} == {0, 1}
    causes = {r["cause"] for r in rollouts}
    assert {"bad_gold", "invalid"} <= causes
    dies = [r for r in rollouts if r["prompt_id"] == "dies"]
    assert dies and all(r["cause"] == "invalid" and not r["admitted"] for r in dies)
    assert any(r.get("replaced") for r in dies)  # invalid rows were redrawn before being given up
    assert "dies" in [e["prompt_id"] for e in _lines(out / "quarantine.jsonl")]
    assert all(r["prompt_id"] != "dies" for r in rollouts if r["step"] > 1)  # never sampled again
    assert (out / "model" / "config.json").exists()
    runner = CliRunner()
    r = runner.invoke(app, ["causes", str(out)])
    assert r.exit_code == 0 and "bad_gold" in r.output, r.output
    r = runner.invoke(app, ["report", str(out)])
    assert r.exit_code == 0 and (out / "report.html").exists(), r.output
    r = runner.invoke(app, ["quarantine", str(out)])
    assert r.exit_code == 0 and "dies" in r.output, r.output


@pytest.mark.slow
def test_rlvr_train_with_engine_trl_on_two_processes_resumes(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    base = [
        sys.executable,
        "-m",
        "rlvr",
        "train",
        "--processes",
        "2",
        "--set",
        "engine=trl",
        *[x for o in TINY for x in ("--set", o)],
        "--set",
        "failure.exclude_truncated=true",
    ]
    first = subprocess.run(
        [*base, "--set", f"run.out_dir={out}", "--set", "run.steps=2", "--set", "run.save_every=2"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert "trained 2 steps" in first.stdout and (out / "checkpoint-2" / "rlvr_failure.json").exists()
    again = subprocess.run(
        [*base, "--resume", str(out), "--set", "run.steps=3"], env=_env(), capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 0, again.stderr[-3000:]
    steps = [m["step"] for m in _lines(out / "metrics.jsonl") if "reward/total/mean" in m]
    assert steps == [1, 2, 3]  # the resumed run continued at step 3, the first two kept
    assert {r["rank"] for r in _lines(out / "rollouts.jsonl")} == {0, 1}
    assert (out / "config.yaml").exists() and (out / "model" / "config.json").exists()


def _trainer(tmp_path: Path, rows: list[dict], rewards: list, **kw):
    from datasets import Dataset

    from rlvr.integrations.trl import FailureAwareGRPOTrainer
    from rlvr.models.tiny import build_model, build_tokenizer

    torch.manual_seed(0)
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=1, heads=2, seed=1)
    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=kw.pop("steps", 1),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=kw.pop("max_new", 12),
        learning_rate=1e-3,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        save_strategy="no",
        seed=0,
        beta=0.0,
        disable_tqdm=True,
        num_iterations=kw.pop("num_iterations", 1),
        top_k=kw.pop("top_k", 0),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FailureAwareGRPOTrainer(
            model=model,
            processing_class=tok,
            reward_funcs=rewards,
            args=args,
            train_dataset=Dataset.from_list(rows),
            **kw,
        )


ROWS = [{"prompt": [{"role": "user", "content": f"{a}+{a}"}], "answer": str(2 * a)} for a in range(8)]


@pytest.mark.parametrize("top_k", [0, 50], ids=["rlvr's sampling loop", "generate + logits processor"])
def test_masks_are_applied_again_in_trl_own_forward_so_the_first_ratio_is_one(
    tmp_path: Path, top_k: int, monkeypatch
) -> None:
    """On both constrained paths: rlvr's own sampling loop where TRL's sampling settings allow it
    (lean decoder, jump-forward), transformers' ``generate`` with the logits processor otherwise."""
    import rlvr.integrations.trl.constrained as rollout
    from rlvr.decoding.constrain import unpack_bits
    from rlvr.rewards import build_reward

    calls = []
    monkeypatch.setattr(rollout, "generate", lambda *a, _g=rollout.generate, **k: calls.append(1) or _g(*a, **k))
    trainer = _trainer(
        tmp_path,
        ROWS,
        [build_reward("accuracy")],
        constrain=DecodingConfig(constrain="full"),
        num_iterations=2,
        tags=(None, "answer"),
        top_k=top_k,
    )
    trainer.model.train()
    batch = [dict(r, prompt_id=str(i)) for i, r in enumerate(ROWS[:2]) for _ in range(4)]
    out = trainer._generate_and_score_completions(batch)
    assert bool(calls) == (top_k == 0)  # which path sampled
    texts = trainer.processing_class.batch_decode(out["completion_ids"], skip_special_tokens=True)
    assert all(t.startswith("<answer>") for t in texts)  # sampled under the grammar, on TRL's generation path
    bits, ids, mask = out["rlvr_bitmask"], out["completion_ids"], out["completion_mask"].bool()
    allowed = unpack_bits(bits, trainer.model.config.vocab_size).gather(-1, ids[..., None]).squeeze(-1)
    assert bool(allowed[mask].all())  # every sampled token was allowed by its own mask
    old = out["old_per_token_logps"]  # computed by TRL (num_iterations=2) under the masks
    inp = torch.cat([out["prompt_ids"], ids], 1)
    am = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
    trainer._pending_bits = bits
    new, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, inp, am, ids.shape[1])
    trainer._pending_bits = None
    plain, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, inp, am, ids.shape[1])
    ratio = (new - old)[mask].abs()
    assert float(ratio.max()) < 1e-4  # the first update's ratio is 1 for every kept token
    forced = (unpack_bits(bits, trainer.model.config.vocab_size).sum(-1) == 1) & mask
    assert bool(forced.any()) and float(new[forced].abs().max()) < 1e-5  # a forced token: log-prob 0, no gradient
    assert float((plain - old)[mask].abs().max()) > 0.5  # without the masks the ratio would be far from 1


@pytest.mark.parametrize("in_eval", [True, False])
def test_held_out_evaluation_is_constrained_only_where_decoding_in_eval_says(tmp_path: Path, in_eval: bool) -> None:
    """Sampling stays under the grammar either way; ``decoding.in_eval: false`` judges what the
    policy writes by itself (an untrained model writes no answer tag), as rlvr's engine does."""
    from rlvr.data.tasks import addition_eval
    from rlvr.rewards import build_reward

    trainer = _trainer(
        tmp_path,
        ROWS,
        [build_reward("accuracy")],
        tags=(None, "answer"),
        constrain=DecodingConfig(constrain="full", in_eval=in_eval),
        eval_rows=addition_eval(8),
        max_new=40,
    )  # room for the forced answer to close
    assert trainer.constrainer is not None  # rollouts are constrained in both cases
    statuses = trainer.run_folder._evaluate(0)["statuses"]
    if in_eval:
        assert statuses.get("no_answer", 0.0) == 0.0  # every answer forced into the tag
    else:
        assert statuses.get("no_answer", 0.0) > 0.5


def test_a_reward_that_declines_leaves_the_others_and_a_row_no_reward_scores_is_invalid(tmp_path: Path) -> None:
    """TRL's contract: ``None`` is "this function does not apply to this row": the other functions'
    values still count (their weighted sum). Only a row that no function scores is ``invalid`` (TRL
    leaves such a row out of its group's statistics too); a gold that cannot be parsed is named."""

    def first_four_declined(completions, **kw):
        return [None] * 4 + [1.0] * (len(completions) - 4)

    def first_two_declined(completions, **kw):
        return [None] * 2 + [0.5] * (len(completions) - 2)

    rows = [dict(ROWS[0], answer="\\frac{")] + ROWS[1:]
    trainer = _trainer(
        tmp_path, rows, [first_four_declined, first_two_declined], failure=FailureConfig(resample_tries=0)
    )
    trainer.model.train()
    batch = [dict(rows[k]) for k in (1, 2) for _ in range(4)]
    trainer._generate_and_score_completions(batch)
    d, views = trainer._gen.decision, trainer._gen.views
    assert [c.value for c in d.causes[:2]] == ["invalid"] * 2  # nothing scored them
    assert all(c.value in ("correct", "wrong", "no_answer", "truncated") for c in d.causes[2:])  # verified
    assert [v.total for v in views[2:4]] == [0.5, 0.5]  # the function that applied still counts
    assert [v.total for v in views[4:]] == [1.5] * 4
    assert not bool(d.admit[:2].any()) and bool(d.admit[2:].all())
    batch = [dict(rows[1])] * 4 + [dict(rows[0])] * 4
    trainer._generate_and_score_completions(batch)  # the bad gold in the second group
    assert [c.value for c in trainer._gen.decision.causes[4:]] == ["bad_gold"] * 4


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["run.processes=2"], "needs engine: trl"),
        (["engine=trl", "run.processes=3"], "do not split over run.processes 3"),
        (["engine=trl", "run.processes=2", "algo.micro_batch=8", "rollout.prompts_per_step=3"], "micro_batch 8"),
        (["engine=trl", "trl.use_vllm=true", "decoding.constrain=answer"], "vLLM's structured output"),
        (["engine=trl", "judge={base_url: 'http://127.0.0.1:9/v1'}"], "engine: rlvr only"),
        (["engine=trl", "rollout.dtype=bfloat16"], "rollout.dtype bfloat16 is rlvr's own decoder"),
    ],
)
def test_configs_trl_cannot_run_are_refused_before_any_model_loads(overrides, message) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)
    r = CliRunner().invoke(app, ["train", *[x for o in overrides for x in ("--set", o)]])
    assert r.exit_code == 2 and message.split()[0] in r.output


@pytest.mark.parametrize("template", ["current", "without bos"])
def test_trl_sees_the_prompt_ids_rlvr_engine_would(tmp_path: Path, template: str) -> None:
    """A model trained on rlvr's engine must see the same prompt ids under TRL: tiny tokenizers saved
    with a template that leaves out <bos> get their prompts rendered as text for TRL."""
    from rlvr.data.prompts import encode
    from rlvr.integrations.trl.from_config import trl_dataset
    from rlvr.models.tiny import CHAT_TEMPLATE, build_tokenizer

    tok = build_tokenizer()
    if template == "without bos":
        tok.chat_template = CHAT_TEMPLATE.replace("{{ bos_token }}", "")
    cfg = load_config(None, [*TINY, "engine=trl", f"run.out_dir={tmp_path}", "run.steps=1"])
    dataset, _ = trl_dataset(cfg, tok)
    trainer = _trainer(
        tmp_path, [dict(r) for r in dataset.select(range(8))], [lambda completions, **k: [0.0] * len(completions)]
    )
    trainer.processing_class.chat_template = tok.chat_template
    prompts = dataset["prompt"][:4]
    ids, _, _ = trainer._tokenize_prompts(prompts)
    assert ids[0][0] == tok.bos_token_id
    assert [list(x) for x in ids] == [encode(tok, p) for p in prompts]
    assert isinstance(prompts[0], list) == (template == "current")


def test_rows_trl_vllm_sequence_mask_zeroed_are_off_policy_and_leave_their_group(tmp_path: Path, monkeypatch) -> None:
    """With vLLM, TRL's ``sequence_mask`` correction zeroes a row's importance ratio (its product left
    ``[min, max]``); the row then only weighs 0 in TRL's loss and still sits in its group's baseline.
    rlvr's adapter waits for that ratio and makes the row ``off_policy``: out of the group's mean and
    std too. vLLM does not run on CPU: TRL's generation runs for real and the ratio it would attach
    (``importance_sampling_ratio``, shape (B, 1), 0 where masked) is added to its output."""
    parent = trl.GRPOTrainer._generate_and_score_completions

    def with_vllm_ratio(self, inputs):
        out = parent(self, inputs)
        ratio = torch.ones(len(inputs), 1)
        ratio[[1, 5]] = 0.0  # rows 1 and 5: masked by the sequence mask
        out["importance_sampling_ratio"] = ratio
        return out

    monkeypatch.setattr(trl.GRPOTrainer, "_generate_and_score_completions", with_vllm_ratio)

    def varied(completions, **kw):
        return [float(i % 3) for i in range(len(completions))]

    trainer = _trainer(tmp_path, ROWS, [varied], failure=FailureConfig(resample_tries=0))
    monkeypatch.setattr(trainer, "_masks_rows", lambda: True)
    trainer.model.train()
    batch = [dict(ROWS[k]) for k in (1, 2) for _ in range(4)]
    out = trainer._generate_and_score_completions(batch)
    d = trainer._gen.decision
    assert [c.value for c in d.causes].count("off_policy") == 2
    assert d.causes[1].value == d.causes[5].value == "off_policy"
    assert not bool(out["rlvr_admit"][[1, 5]].any()) and bool(out["rlvr_admit"][[0, 2, 3, 4, 6, 7]].all())
    # the baseline of row 1's group is its three other rows: 0, 2, 0 -> mean 2/3
    adv = out["advantages"]
    r = torch.tensor([0.0, 2.0, 0.0])
    torch.testing.assert_close(adv[[0, 2, 3]], (r - r.mean()) / (r.std() + 1e-4), atol=1e-3, rtol=1e-3)
    assert float(adv[1]) == 0.0 and float(adv[5]) == 0.0
    assert d.metrics["causes/off_policy"] == 0.25 and d.metrics["offpolicy/rejected"] == 0.25
