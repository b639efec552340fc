"""Injected truncation: a seeded share of completions cut as a smaller token budget would cut them,
on rlvr's engine and on TRL's sampling, before the rewards see them."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from rlvr.decoding.truncation import Truncation

torch = pytest.importorskip("torch")


def test_a_cut_hits_its_rate_keeps_a_prefix_and_never_the_eos() -> None:
    cut, eos = Truncation(0.3, seed=1), {2}
    rows = [([7, i % 5], [10 + (i * 7 + k) % 40 for k in range(3 + i % 9)] + [2] * (i % 2)) for i in range(3000)]
    kept = [cut.length(p, c, eos) for p, c in rows]
    share = sum(k is not None for k in kept) / len(rows)
    assert 0.27 < share < 0.33
    for (_, c), k in zip(rows, kept):
        if k is None:
            continue
        body = len(c) - (c[-1] == 2)
        assert 1 <= k <= body and (k < len(c) if c[-1] != 2 else True)  # a prefix without the eos, never empty
        assert 2 not in c[:k]
    assert [cut.length(p, c, eos) for p, c in rows[:100]] == kept[:100]  # the same rollout, the same cut
    assert [Truncation(0.3, seed=2).length(p, c, eos) for p, c in rows[:200]] != kept[:200]
    assert Truncation(1.0).length([1], [2], eos) is None  # nothing before the eos: nothing to cut
    assert Truncation(1.0).length([1], [9], eos) is None  # one token and no eos: already as short as it gets
    with pytest.raises(ValueError, match=r"rollout\.truncation"):
        Truncation(1.2)


TINY = [
    "model.hidden=32",
    "model.layers=1",
    "model.heads=2",
    "rollout.prompts_per_step=4",
    "rollout.group_size=8",
    "rollout.max_new_tokens=16",
    "run.eval_every=0",
    "data.eval_size=4",
    "run.steps=1",
]


def test_rlvr_engine_cuts_the_rows_it_names_after_sampling(tmp_path: Path) -> None:
    from rlvr.config import load_config
    from rlvr.engine.trainer import GRPOTrainer

    def batch(rate: float):
        cfg = load_config(None, [*TINY, f"run.out_dir={tmp_path / str(rate)}", f"rollout.truncation={rate}"])
        t = GRPOTrainer(cfg)
        return t, t.rollout(t.data.take(4))

    def end(b, i: int) -> int:  # one past the row's last token (a pad sampled mid-row is masked)
        return int(b.completion_mask[i].nonzero().max()) + 1

    _, whole = batch(0.0)
    t, cut = batch(0.5)
    changed = [i for i in range(32) if end(cut, i) != end(whole, i)]
    assert 6 <= len(changed) <= 26
    for i in range(32):
        n, m = end(cut, i), end(whole, i)
        assert torch.equal(cut.completion_ids[i, :n], whole.completion_ids[i, :n])
        assert torch.equal(cut.logprobs[i, :n], whole.logprobs[i, :n])  # the behaviour policy's, as sampled
        if i in changed:
            assert n < m and cut.finish[i] == "length" and int(cut.completion_mask[i, n:].sum()) == 0
            assert t.tok.eos_token_id not in cut.completion_ids[i, :n].tolist()
            assert cut.texts[i] == t.tok.decode(cut.completion_ids[i, :n].tolist(), skip_special_tokens=True)
        else:
            assert cut.finish[i] == whole.finish[i] and cut.texts[i] == whole.texts[i]


def test_truncation_is_refused_for_episodes_and_vllm() -> None:
    from rlvr.config import load_config
    from rlvr.errors import ConfigError

    with pytest.raises(ConfigError, match="episodes are not cut"):
        load_config(None, ["rollout.truncation=0.2", "env={tools: [calculator]}"])
    with pytest.raises(ConfigError, match=r"trl\.use_vllm"):
        load_config(None, ["rollout.truncation=0.2", "engine=trl", "trl.use_vllm=true"])


@pytest.mark.slow
def test_trl_training_rows_are_cut_before_the_rewards_and_read_as_truncated(tmp_path: Path) -> None:
    trl = pytest.importorskip("trl")
    from datasets import Dataset

    from rlvr.integrations.trl import FailureAwareGRPOTrainer
    from rlvr.models.tiny import build_model, build_tokenizer

    rows = [{"prompt": [{"role": "user", "content": f"{a}+{a}"}], "answer": str(2 * a)} for a in range(8)]
    seen: dict[str, list] = {}

    def trainer(name: str, truncation: Truncation | None):
        torch.manual_seed(0)
        tok = build_tokenizer()
        model = build_model(tok, hidden=32, layers=1, heads=2, seed=1)
        args = trl.GRPOConfig(
            output_dir=str(tmp_path / name),
            max_steps=1,
            per_device_train_batch_size=8,
            num_generations=4,
            max_completion_length=12,
            report_to="none",
            use_cpu=True,
            bf16=False,
            save_strategy="no",
            seed=0,
            beta=0.0,
            disable_tqdm=True,
        )

        def length(completions, **kw):  # what TRL hands the rewards
            seen[name] = list(completions)
            return [float(len(str(c))) for c in completions]

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return FailureAwareGRPOTrainer(
                model=model,
                processing_class=tok,
                reward_funcs=[length],
                args=args,
                train_dataset=Dataset.from_list(rows),
                truncation=truncation,
            )

    batch = [dict(rows[k], prompt_id=str(k)) for k in (0, 1) for _ in range(4)]
    out = {}
    for name, cut in (("whole", None), ("cut", Truncation(0.6, seed=0))):
        t = trainer(name, cut)
        t.model.train()
        torch.manual_seed(5)
        out[name] = (t._generate_and_score_completions(batch), t._gen.decision, t)
    (w, _, _), (c, d, t) = out["whole"], out["cut"]
    eos = t.eos_token_ids[0]
    cut_rows = [i for i in range(8) if int(c["completion_mask"][i].sum()) < int(w["completion_mask"][i].sum())]
    assert 1 <= len(cut_rows) <= 7
    for i in range(8):
        n = int(c["completion_mask"][i].sum())
        assert torch.equal(c["completion_ids"][i, :n], w["completion_ids"][i, :n])
        if i in cut_rows:
            assert eos not in c["completion_ids"][i, :n].tolist() and d.causes[i].value == "truncated"
            assert len(str(seen["cut"][i])) < len(str(seen["whole"][i]))  # the rewards saw the cut text
    evaluating = trainer("eval", Truncation(1.0, seed=0))
    evaluating.model.eval()  # held-out generation is never cut
    ids, _, _ = evaluating._sample([[5, 6, 7]], None, {}, 1, False)
    assert ids[0][-1] == eos or len(ids[0]) == 12  # a cut would have ended it short of both
