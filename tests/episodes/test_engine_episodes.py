"""Episodes on rlvr's own engine: tool results appended to the cache, out of the loss, causes in the run folder.

The policy is the tiny model taught by SFT to call the calculator on a handful of products (a
real model through rlvr's sampling loop; nothing scripted), so its episodes make real calls.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rlvr.config import TrainConfig
from rlvr.data.prompts import encode
from rlvr.data.tasks import Sample
from rlvr.engine.trainer import GRPOTrainer
from rlvr.episodes import toolbox
from rlvr.errors import ConfigError
from rlvr.sampling import generate
from rlvr.sampling.turns import Turns
from tests.conftest import CALCULATOR_PAIRS, calculator_rows

PAIRS = CALCULATOR_PAIRS


def _rows() -> list[Sample]:
    return calculator_rows()


@pytest.fixture(scope="module")
def policy(calculator_policy):
    return calculator_policy


def _turns(tok, rows, g=1, **kw):
    eps = [s for s in rows for _ in range(g)]
    return Turns(
        tok,
        toolbox(["calculator"]),
        [{} for _ in eps],
        [f"{s.id}:{i}" for i, s in enumerate(eps)],
        ["" for _ in eps],
        **kw,
    )


def _forward_logprobs(model, b):
    ids = torch.cat([b.prompt_ids, b.completion_ids], 1)
    mask = torch.cat([b.prompt_mask, b.completion_mask], 1)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, b.prompt_ids.shape[1] - 1 : -1]
    return torch.log_softmax(logits.float(), -1).gather(-1, b.completion_ids[..., None]).squeeze(-1)


@pytest.mark.parametrize("fast", [True, False], ids=["lean-decoder", "hf-cache"])
def test_a_tool_result_is_appended_to_the_cache_and_never_in_the_loss(policy, fast) -> None:
    model, tok = policy
    rows = _rows()
    turns = _turns(tok, rows)
    b = generate(
        model,
        tok,
        [encode(tok, s.prompt) for s in rows],
        group_size=1,
        max_new_tokens=160,
        temperature=0.0,
        fast=fast,
        turns=turns,
    )
    for s, ep, text in zip(rows, b.episodes, b.texts):
        assert [t.role for t in ep.turns] == ["assistant", "tool", "assistant"], ep.record()
        assert ep.calls()[0].name == "calculator" and ep.turns[1].content == s.gold  # the tool's exact result
        assert ep.finish == "eos" and text == ep.answer == ep.turns[2].content
    for i in range(len(rows)):  # the tool-result tokens are exactly the appended <tool_response> text
        tool = b.tool_mask[i].bool()
        result = b.episodes[i].turns[1].content
        assert tok.decode(b.completion_ids[i][tool]) == f"<tool_response>{result}</tool_response>"
        assert not b.loss_mask[i][tool].any() and b.completion_mask[i][tool].all()  # attended, never trained
        assert (b.logprobs[i][tool] == 0).all()
    # the sampling log-probs are the behaviour policy's: a full forward over the whole sequence agrees
    gap = ((_forward_logprobs(model, b) - b.logprobs).abs() * b.loss_mask).max()
    assert gap < 1e-4


@pytest.mark.parametrize("fast", [True, False], ids=["lean-decoder", "hf-cache"])
def test_the_final_answer_segment_is_constrained_and_tool_calls_stay_free(policy, fast) -> None:
    from rlvr.decoding.constrain import Constrainer, masked_logprobs, unpack_bits

    model, tok = policy
    rows = _rows()
    prompts = [encode(tok, s.prompt) for s in rows]
    c = Constrainer(tok, model.config.vocab_size, mode="answer", answer="integer")
    free = generate(
        model, tok, prompts, group_size=1, max_new_tokens=160, temperature=0.0, fast=fast, turns=_turns(tok, rows)
    )
    b = generate(
        model,
        tok,
        prompts,
        group_size=1,
        max_new_tokens=160,
        temperature=0.0,
        fast=fast,
        turns=_turns(tok, rows),
        constrain=c,
    )
    assert b.bitmask is not None
    for i, ep in enumerate(b.episodes):
        assert [t.role for t in ep.turns] == ["assistant", "tool", "assistant"], ep.record()
        assert ep.calls()[0].name == "calculator" and ep.answer == free.episodes[i].answer  # greedy, same path
        bits = b.bitmask[i]
        tool = b.tool_mask[i].bool()
        assert (bits[tool] == -1).all()  # a tool's result is never masked: it was not sampled
        sampled = b.loss_mask[i].bool()
        allowed = unpack_bits(bits, model.config.vocab_size)
        assert allowed[sampled].gather(-1, b.completion_ids[i][sampled][:, None]).all()  # each token its mask allowed
        # reasoning and tool calls are free (only the stop token is held back); the grammar starts in the answer
        grammar = sampled & (allowed.sum(-1) < model.config.vocab_size - len(c.stop_ids))
        before = tok.decode(b.completion_ids[i][: int(grammar.nonzero().min())])
        assert before.endswith("<answer>") and "</tool_response>" in before
    # the training forward with the same masks gives the sampling log-probs back (ratio 1)
    ids = torch.cat([b.prompt_ids, b.completion_ids], 1)
    mask = torch.cat([b.prompt_mask, b.completion_mask], 1)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, b.prompt_ids.shape[1] - 1 : -1]
    picked = torch.log_softmax(logits.float(), -1).gather(-1, b.completion_ids[..., None]).squeeze(-1)
    lp = masked_logprobs(picked, logits.float(), b.completion_ids, b.bitmask)
    assert float(((lp - b.logprobs).abs() * b.loss_mask).max()) < 1e-4


def test_a_constrained_episode_is_never_cut_inside_its_answer(policy) -> None:
    """Tool results use the budget but not the answer's reserve: an episode either answers in full or,
    when the result would leave the answer no room, stops ``context_overflow`` (said, not cut)."""
    from rlvr.decoding.constrain import Constrainer
    from rlvr.diagnostics.causes import Cause

    model, tok = policy
    rows = _rows()
    c = Constrainer(tok, model.config.vocab_size, mode="answer", answer="integer")
    prompts = [encode(tok, s.prompt) for s in rows]
    probe = generate(model, tok, prompts, group_size=1, max_new_tokens=160, temperature=0.0, turns=_turns(tok, rows))
    ends = [int(probe.completion_mask[i].nonzero().max()) + 1 for i in range(len(rows))]
    free = generate(
        model, tok, prompts, group_size=1, max_new_tokens=min(ends) - 3, temperature=0.0, turns=_turns(tok, rows)
    )
    assert all(f == "length" for f in free.finish)  # unconstrained, this budget cuts every answer off
    answered = overflowed = 0
    for budget in range(min(ends) - 30, max(ends) + 8, 3):
        b = generate(
            model,
            tok,
            prompts,
            group_size=1,
            max_new_tokens=budget,
            temperature=0.0,
            turns=_turns(tok, rows),
            constrain=c,
        )
        for s, ep, fin in zip(rows, b.episodes, b.finish):
            assert fin != "length", (budget, ep.record())
            if ep.cause() is Cause.CONTEXT_OVERFLOW:
                overflowed += 1
            else:  # a closed answer; the budget may have opened it mid-call (then it is a guess)
                assert ep.finish == "eos" and re.search(r"<answer>\d+</answer>$", ep.answer), (budget, ep.record())
                if budget >= max(ends):  # room for the call, its result and the answer: the policy's own path
                    assert ep.answer == f"<answer>{s.gold}</answer>", (budget, ep.record())
                answered += 1
    assert answered and overflowed


def test_sampled_episodes_with_faults_keep_their_causes_and_the_group_shape(policy) -> None:
    from rlvr.episodes import Faults

    model, tok = policy
    rows = _rows()
    turns = _turns(tok, rows, g=4, faults=Faults({"tool_error": 0.5, "env_crash": 0.2}, seed=3))
    b = generate(
        model,
        tok,
        [encode(tok, s.prompt) for s in rows],
        group_size=4,
        max_new_tokens=160,
        temperature=1.0,
        generator=torch.Generator().manual_seed(0),
        turns=turns,
    )
    assert len(b.episodes) == 16 and b.completion_ids.shape[0] == 16
    faulted = [ep for ep in b.episodes if ep.finish == "fault"]
    assert faulted and all(ep.fault() is not None and ep.answer == "" for ep in faulted)
    for ep, fin in zip(b.episodes, b.finish):
        assert fin == ep.finish
    # a faulted episode stops at its fault: nothing after the failed call was sampled
    for i, ep in enumerate(b.episodes):
        if ep.finish == "fault":
            assert tok.decode(b.completion_ids[i][b.completion_mask[i].bool()]).endswith("</tool_call>")


def _cfg(tmp: Path, **env) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "data": {"task": "arithmetic", "task_options": {"digits": 2, "ops": "*"}, "eval_size": 4},
            "rollout": {"prompts_per_step": 2, "group_size": 4, "max_new_tokens": 160},
            "env": {"tools": ["calculator"], "max_turns": 2, **env},
            "run": {"steps": 2, "out_dir": str(tmp), "eval_every": 0, "save_every": 100},
        }
    )


def test_the_trainer_keeps_environment_faults_out_and_writes_episodes_to_the_run(policy, tmp_path) -> None:
    model, tok = policy
    cfg = _cfg(tmp_path, faults={"tool_error": 0.4, "env_timeout": 0.1, "env_crash": 0.1})
    tr = GRPOTrainer(cfg, model=copy.deepcopy(model), tokenizer=tok, train_rows=_rows() * 4, eval_rows=_rows())
    out = tr.train()
    assert out["after"]["tool_rate"] > 0.5  # evaluated in a fault-free environment: the policy still calls
    lines = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert all("episode" in r for r in lines)
    env_faults = {"tool_error", "env_timeout", "env_crash"}
    faulted = [r for r in lines if r["cause"] in env_faults]
    assert faulted, "no episode met an injected fault"
    for r in faulted:  # recorded where it happened, out of the baseline and the loss, and redrawn
        assert not r["admitted"] and r["advantage"] == 0.0
        assert r["cause"] in [e["cause"] for e in r["episode"]["events"]] and r["episode"]["finish"] == "fault"
    assert any(r.get("replaced") for r in faulted)  # the fault's original is kept, marked replaced
    kept = [r for r in lines if not r.get("replaced")]
    assert len(kept) == 2 * 2 * 4
    m = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    step = next(x for x in m if x["step"] == 1)
    assert step["tools/calls_per_episode"] > 0 and "env/fault_rate" in step and "episodes/partial_groups" in step
    assert step["tools/calculator/latency_s"] is not None
    assert "eval/tool_rate" in m[-1]
    # the tools that read a run: the report shows the turns of sampled failures and the episode causes
    from rlvr.report.page import build_report

    html = build_report([tmp_path]).read_text()
    assert all(f"<th>{r['cause']}</th>" in html for r in faulted)
    assert 'class="turn tool"' in html and "event, turn" in html
    stood = {r["cause"] for r in faulted if not r.get("replaced")}  # a redrawn original is not sampled
    assert all(f"<summary>{c} (" in html for c in stood)
    r = subprocess.run(
        [sys.executable, "-c", "from rlvr.cli.app import main; main()", "causes", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and "whose fault" in r.stdout and "environment" in r.stdout, r.stderr


def test_the_trainer_trains_constrained_episodes_with_redraws(policy, tmp_path) -> None:
    """decoding.constrain: answer with an env section: the masks travel with the episodes through the
    fault redraws into the update (whose first ratio is then 1) and the held-out run decodes under them."""
    model, tok = policy
    cfg = _cfg(tmp_path, faults={"tool_error": 0.3}).model_copy(
        update={
            "decoding": TrainConfig.model_validate({"decoding": {"constrain": "answer", "answer": "integer"}}).decoding
        }
    )
    tr = GRPOTrainer(cfg, model=copy.deepcopy(model), tokenizer=tok, train_rows=_rows() * 4, eval_rows=_rows())
    out = tr.train()
    assert out["after"]["tool_rate"] > 0.5 and out["after"]["accuracy"] > 0
    lines = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert any(r.get("replaced") for r in lines)  # faults were redrawn under the constraint too
    m = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    step = next(x for x in m if x["step"] == 1)
    assert step["decoding/masked_frac"] > 0 and step["tools/calls_per_episode"] > 0
    assert abs(step["rollout/logprob_gap"]) < 1e-3  # the update's forward re-applies the masks


def test_tool_tokens_carry_no_gradient(policy, tmp_path) -> None:
    """Poisoning the old log-probs of the tool-result tokens changes nothing in the update."""
    model, tok = policy

    def trainer() -> GRPOTrainer:
        return GRPOTrainer(
            _cfg(tmp_path), model=copy.deepcopy(model), tokenizer=tok, train_rows=_rows() * 4, eval_rows=[]
        )

    tr, twin = trainer(), trainer()
    batch = tr.rollout(_rows()[:2])
    assert batch.tool_mask is not None and batch.tool_mask.sum() > 0
    adv = torch.linspace(-1, 1, batch.completion_ids.shape[0])
    admit = torch.ones_like(adv, dtype=torch.bool)
    tr.learner.update(batch, adv, admit)
    poisoned = copy.copy(batch)
    poisoned.logprobs = batch.logprobs.masked_fill(batch.tool_mask.bool(), -5.0)
    twin.learner.update(poisoned, adv, admit)
    moved = False
    for (k, v), w in zip(tr.model.state_dict().items(), twin.model.state_dict().values()):
        assert torch.equal(v, w), k
        moved |= not torch.equal(v, model.state_dict()[k])
    assert moved  # the update did change the weights: only the tool tokens were left out


def test_episode_configs_that_cannot_work_fail_before_the_run(policy, tmp_path) -> None:
    model, tok = policy
    with pytest.raises(ValueError, match="use_vllm"):
        TrainConfig(env={"tools": ["calculator"]}, engine="trl", trl={"use_vllm": True})
    with pytest.raises(ValueError, match=r"decoding\.constrain: full"):
        TrainConfig(env={"tools": ["calculator"]}, decoding={"constrain": "full"})
    with pytest.raises(ValueError, match="engine trl"):
        TrainConfig(env={"tools": ["calculator"]}, decoding={"constrain": "answer"}, engine="trl")
    TrainConfig(env={"tools": ["calculator"]}, decoding={"constrain": "answer"})  # rlvr's engine runs it
    with pytest.raises(ValueError, match="max_turns"):
        TrainConfig(env={"tools": ["calculator"], "max_turns": 0})
    with pytest.raises(ConfigError, match=r"cannot be built.*no sandbox"):
        GRPOTrainer(
            _cfg(tmp_path, environment=f"{__name__}:Unbuildable", tools=[]),
            model=model,
            tokenizer=tok,
            train_rows=_rows(),
            eval_rows=[],
        )
    tr = GRPOTrainer(
        _cfg(tmp_path, environment=f"{__name__}:Moody", tools=[]),
        model=model,
        tokenizer=tok,
        train_rows=_rows(),
        eval_rows=[],
    )
    with pytest.raises(ConfigError, match="different observations"):
        tr.rollout(_rows()[:1])
    assert not (tmp_path / "rollouts.jsonl").exists()


class Unbuildable:
    def __init__(self) -> None:
        raise RuntimeError("no sandbox")

    def reset(self, row: dict) -> None:
        return None


class Moody:
    """Its observation differs per instance: a group's episodes would not share their prompt."""

    count = 0

    def reset(self, row: dict) -> str:
        Moody.count += 1
        return f"mood {Moody.count}"

    def ping(self) -> str:
        """Answer pong."""
        return "pong"


class Graded:
    """An environment that judges its own episodes (its reward replaces the verifier's accuracy)."""

    def reset(self, row: dict) -> str:
        self.gold = row["gold"]
        return "Use the calculator."

    def calculator(self, expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: the expression.
        """
        from rlvr.episodes import evaluate

        return str(evaluate(expression))

    def reward(self, answer: str, row: dict) -> float:
        return 1.0 if row["gold"] in answer else 0.25


def test_an_environment_observation_joins_the_prompt_and_its_reward_judges(policy, tmp_path) -> None:
    model, tok = policy
    tr = GRPOTrainer(
        _cfg(tmp_path, environment=f"{__name__}:Graded", tools=[]),
        model=model,
        tokenizer=tok,
        train_rows=_rows(),
        eval_rows=[],
    )
    rows = _rows()[:2]
    scored = tr.draws.groups(rows)
    batch = scored.batch
    assert all(ep.prompt.endswith("Use the calculator.") for ep in batch.episodes)
    assert "Use the calculator." in tok.decode(batch.prompt_ids[0])
    for view, ep in zip(scored.views, batch.episodes):
        if ep.finish in ("eos", "length"):
            assert view.components["accuracy"] == ep.reward and "environment's reward" in view.verdict.reason


def _ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def test_each_way_a_turn_can_end_inside_the_sampling_loop_is_recorded() -> None:
    """The loop's hook, token by token as generate calls it (no model needed)."""
    from rlvr.diagnostics.causes import Cause
    from rlvr.models.tiny import build_tokenizer

    tok = build_tokenizer()
    call = '<tool_call>{"name":"calculator","arguments":{"expression":"6*7"}}</tool_call>'

    def turns(**kw) -> Turns:
        return Turns(tok, toolbox(["calculator"]), [{}], ["k"], ["p"], **kw)

    t = turns(max_turns=3)
    assert t.on_close(0, _ids(tok, "a > b"), 100) == ([], False)  # a '>' that closes nothing
    add, end = t.on_close(0, _ids(tok, call), 100)
    assert tok.decode(add) == "<tool_response>42</tool_response>" and not end
    ids = _ids(tok, call) + add + _ids(tok, "<answer>42</answer>")
    t.on_end(0, ids, "eos")
    ep = t.episodes[0]
    assert ep.answer == "<answer>42</answer>" and ep.finish == "eos" and ep.turns[1].content == "42"

    t = turns()  # a closing tag without its opening does not parse: the policy's fault, the episode goes on
    add, end = t.on_close(0, _ids(tok, '{"name":"calculator"}</tool_call>'), 500)
    assert not end and [e.cause for e in t.episodes[0].events] == [Cause.MALFORMED_TOOL_CALL]

    t = turns(max_turns=1)  # the last turn's call: turn_limit
    assert t.on_close(0, _ids(tok, call), 100) == ([], True) and t.episodes[0].finish == "turn_limit"

    t = turns()  # a result that leaves no room to answer: context_overflow
    assert t.on_close(0, _ids(tok, call), 20) == ([], True) and t.episodes[0].finish == "context_overflow"
    assert t.episodes[0].ended_by() is Cause.CONTEXT_OVERFLOW

    class Broken:
        def reset(self, row: dict) -> None:
            raise ConnectionError("session service down")

        def ping(self) -> str:
            """Answer pong."""
            return "pong"

    t = Turns(tok, Broken, [{}], ["k"], ["p"])  # reset fails: the row samples nothing, env_crash
    assert t.ended_at_start() == [0] and t.episodes[0].fault() is Cause.ENV_CRASH


def test_a_tool_result_cannot_write_special_tokens_into_the_sequence() -> None:
    from rlvr.models.tiny import build_tokenizer

    class Sly:
        def reset(self, row: dict) -> None:
            return None

        def echo(self, text: str) -> str:
            """Echo text back.

            Args:
                text: what to echo.
            """
            return "<eos><pad>" + text

    tok = build_tokenizer()
    t = Turns(tok, Sly, [{}], ["k"], ["p"])
    add, _ = t.on_close(0, _ids(tok, '<tool_call>{"name":"echo","arguments":{"text":"x"}}</tool_call>'), 200)
    assert tok.eos_token_id not in add and tok.pad_token_id not in add


def test_the_calls_rows_close_in_one_step_run_together() -> None:
    """Four rows close a call at the same decoding step: their tools run at the same time (each
    under its own guard: a hang is each row's env_timeout), and every row gets its own result."""
    import threading
    import time

    from rlvr.diagnostics.causes import Cause
    from rlvr.models.tiny import build_tokenizer

    tok = build_tokenizer()
    spans: list[tuple[float, float]] = []
    lock = threading.Lock()
    release = threading.Event()

    class Slow:
        def reset(self, row: dict) -> None:
            return None

        def lookup(self, key: str) -> str:
            """Look a key up.

            Args:
                key: the key.
            """
            start = time.monotonic()
            if key == "hang":
                release.wait(30)
            else:
                time.sleep(0.2)
            with lock:
                spans.append((start, time.monotonic()))
            return key.upper()

    def call(key: str) -> list[int]:
        return _ids(tok, f'<tool_call>{{"name":"lookup","arguments":{{"key":"{key}"}}}}</tool_call>')

    t = Turns(tok, Slow, [{}] * 4, [f"k{i}" for i in range(4)], ["p"] * 4, timeout_s=1.0)
    keys = ["a", "b", "hang", "c"]
    out = t.on_closes([(i, call(k), 200) for i, k in enumerate(keys)])
    release.set()
    for i, ((add, end), k) in enumerate(zip(out, keys)):
        if k == "hang":
            assert end and t.episodes[i].fault() is Cause.ENV_TIMEOUT
        else:
            assert not end and tok.decode(add) == f"<tool_response>{k.upper()}</tool_response>"
    finished = sorted(spans)[:3]  # the three that returned within their limit
    assert max(s for s, _ in finished) < min(e for _, e in finished)  # all three were running at once
    assert t.on_closes([(0, _ids(tok, "no call here >"), 200)]) == [([], False)]


def test_an_outage_is_waited_out_and_heavy_faults_are_redrawn_within_the_budget(policy, tmp_path) -> None:
    """Step 2 falls in an injected outage: every call fails, one redraw round confirms it, the step
    takes no optimizer step (the schedule does not move) and says so; the other steps, at a 0.6 fault
    rate, redraw within the budget and keep no group thinner than the floor."""
    model, tok = policy
    base = _cfg(tmp_path, faults={"tool_error": 0.6}, outages=[(2, 3)]).model_dump()
    base["run"]["steps"] = 3
    base["optim"].update(schedule="linear", warmup_steps=0)
    base["failure"].update(redraw_budget=4.0, min_group_rows=2)
    cfg = TrainConfig.model_validate(base)
    tr = GRPOTrainer(cfg, model=copy.deepcopy(model), tokenizer=tok, train_rows=_rows() * 4, eval_rows=_rows())
    tr.train()
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    m = {x["step"]: x for x in lines if "causes/correct" in x}
    assert m[2]["env/down"] == 1.0 and m[2]["train/optimizer_steps"] == 0.0 and m[2]["train/rows"] == 0
    assert m[1]["env/down"] == 0.0 and m[3]["env/down"] == 0.0
    assert m[3]["lr"] == m[2]["lr"] < m[1]["lr"]  # the down step did not move the schedule
    for s in (1, 3):  # within the budget (4 x 8 extra episodes), no thin group admitted
        assert m[s]["failure/resampled"] <= 32
    rows = [json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    down = [r for r in rows if r["step"] == 2]
    assert down and not any(r["admitted"] for r in down)
    # one redraw round confirmed the outage; no budget was spent after it
    assert {r["attempt"] for r in down if r.get("replaced")} == {1}
    faults = [e for r in down for e in r["episode"]["events"] if e["cause"] == "env_crash"]
    assert faults and all("outage" in e["detail"] for e in faults)
    for s in (1, 3):
        kept = [r for r in rows if r["step"] == s and not r.get("replaced")]
        per_group = [sum(r["admitted"] for r in kept[k : k + 4]) for k in range(0, len(kept), 4)]
        assert all(n == 0 or n >= 2 for n in per_group)


def test_rlvr_causes_and_the_report_say_when_the_environment_was_down(policy, tmp_path) -> None:
    model, tok = policy
    base = _cfg(tmp_path, outages=[(1, 3)]).model_dump()
    base["run"]["steps"] = 3
    tr = GRPOTrainer(
        TrainConfig.model_validate(base), model=copy.deepcopy(model), tokenizer=tok, train_rows=_rows() * 4
    )
    tr.train()
    r = subprocess.run(
        [sys.executable, "-c", "from rlvr.cli.app import main; main()", "causes", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and "environment was down at steps 1-2" in " ".join(r.stdout.split()), r.stdout
    from rlvr.report.data import env_outages, load_run

    assert env_outages(load_run(tmp_path)) == [(1, 2)]


def test_a_run_whose_rows_mostly_stay_out_says_once_to_set_the_thin_step_policy(policy, tmp_path) -> None:
    model, tok = policy
    cfg = _cfg(tmp_path, faults={"tool_error": 0.95})
    cfg = cfg.model_copy(
        update={
            "run": cfg.run.model_copy(update={"steps": 6}),
            "failure": cfg.failure.model_copy(update={"resample_tries": 0}),
        }
    )
    tr = GRPOTrainer(cfg, model=copy.deepcopy(model), tokenizer=tok, train_rows=_rows() * 8, eval_rows=_rows())
    with pytest.warns(UserWarning, match=r"failure.redraw_budget: 12.*'When most episodes die'") as said:
        tr.train()
    assert sum("stayed out of the loss" in str(w.message) for w in said) == 1  # once, not every step
    m = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    advised = [x["step"] for x in m if x.get("failure/thin_advice")]
    assert advised == [5]  # the first step at which five steps of mostly excluded rows are known


def test_a_batch_whose_every_environment_failed_at_reset_decodes_to_nothing(policy) -> None:
    """No row samples a token (every reset raised): an empty batch, every episode env_crash, and a
    held-out evaluation that says so (the batch builder took the first stop of zero columns)."""
    from rlvr.sampling.evaluate import greedy_eval

    model, tok = policy

    class Down:
        def reset(self, row: dict) -> None:
            raise ConnectionError("the server refused the session (capacity)")

        def ping(self) -> str:
            """Answer pong."""
            return "pong"

    rows = _rows()[:3]

    def turns_for(chunk):
        t = Turns(tok, Down, [{} for _ in chunk], [f"k{i}" for i in range(len(chunk))], ["p"] * len(chunk))
        return t, [encode(tok, s.prompt) for s in chunk]

    t, prompts = turns_for(rows)
    b = generate(model, tok, prompts, group_size=1, max_new_tokens=8, temperature=0.0, turns=t)
    assert b.completion_ids.shape == (3, 0) and b.finish == ["fault"] * 3
    ev = greedy_eval(model, tok, rows, max_new_tokens=8, turns_for=turns_for)
    assert ev["accuracy"] == 0.0 and ev["statuses"] == {"env_crash": 1.0}


def test_every_episodes_environment_is_closed_when_decoding_ends(policy) -> None:
    """An environment with a session (OpenEnv's; a server caps them) is closed once its episode is
    over, however it ended (answered, faulted, never judged): none is left for the garbage collector."""
    model, tok = policy
    live: set[int] = set()

    class Sessions:
        def reset(self, row: dict) -> None:
            live.add(id(self))

        def close(self) -> None:
            live.discard(id(self))

        def calculator(self, expression: str) -> str:
            """Evaluate an arithmetic expression.

            Args:
                expression: numbers with + - * / and parentheses.
            """
            raise RuntimeError("the service fails every call")  # tool_error: the episode ends as a fault

    rows = _rows()[:4]
    t = Turns(tok, Sessions, [{} for _ in rows], [f"k{i}" for i in range(4)], ["p"] * 4)
    assert len(live) == 4
    prompts = [encode(tok, s.prompt) for s in rows]
    generate(model, tok, prompts, group_size=1, max_new_tokens=40, temperature=0.0, turns=t)
    assert live == set() and all(e is None for e in t.envs)
