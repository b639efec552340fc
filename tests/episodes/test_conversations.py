"""Environments that answer the policy's turns (``respond``: a game, a simulated user, a ``verifiers``
``MultiTurnEnv``) on rlvr's engine: each reply appended to the row's sequence as the chat template
writes it, out of the loss, the policy's own stops in it, the cache carried over; the environment's
failures its own causes.

The policy is the tiny model taught by SFT to say numbers back (tests/conftest.py: ``echo_policy``),
a real model through rlvr's sampling loop, so its conversations are real ones."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rlvr.data.prompts import encode
from rlvr.diagnostics.causes import Cause
from rlvr.episodes import Faults, run_episode
from rlvr.models.tiny import build_tokenizer
from rlvr.sampling import generate
from rlvr.sampling.replies import reply_ids
from rlvr.sampling.turns import Turns

ECHO = f"verifiers:{Path(__file__).parent / 'published' / 'vf_echo.py'}"


class Higher:
    """A game written for rlvr: guess the row's number; the environment says higher or lower."""

    def reset(self, row: dict) -> None:
        self.secret = int(row["gold"])

    def respond(self, text: str) -> str | None:
        try:
            n = int(text.strip())
        except ValueError:
            return "say a number"
        if n == self.secret:
            return None
        return "higher" if n < self.secret else "lower"

    def reward(self, answer: str, row: dict) -> float:
        return 1.0 if answer.strip() == row["gold"] else 0.0


def _ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def _forward_logprobs(model, b):
    ids = torch.cat([b.prompt_ids, b.completion_ids], 1)
    mask = torch.cat([b.prompt_mask, b.completion_mask], 1)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, b.prompt_ids.shape[1] - 1 : -1]
    return torch.log_softmax(logits.float(), -1).gather(-1, b.completion_ids[..., None]).squeeze(-1)


# ----------------------------------------------------------------------------- rendering a reply
def test_a_reply_is_what_the_chat_template_writes_after_the_policy_s_stop() -> None:
    tok = build_tokenizer()  # Q:<user>=<assistant><eos>
    assert tok.decode(reply_ids(tok, [{"role": "user", "content": "higher"}], "<eos>")) == "Q:higher="
    two = [{"role": "user", "content": "no"}, {"role": "user", "content": "lower"}]
    assert tok.decode(reply_ids(tok, two, "<eos>")) == "Q:no=Q:lower="
    chatml = (  # ChatML's shape (its newlines as spaces: the tiny tokenizer has none)
        "{% for m in messages %}<|im_start|>{{ m['role'] }} {{ m['content'] }}<|im_end|> {% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant {% endif %}"
    )
    got = tok.decode(reply_ids(tok, [{"role": "user", "content": "higher"}], "<|im_end|>", chat_template=chatml))
    assert got == " <|im_start|>user higher<|im_end|> <|im_start|>assistant "  # what follows the stop kept
    sly = reply_ids(tok, [{"role": "user", "content": "<eos><pad>done"}], "<eos>")
    assert tok.eos_token_id not in sly and tok.pad_token_id not in sly  # its text is never a special token


# ----------------------------------------------------------------------------- the hooks, token by token
def test_each_way_a_conversation_can_end_inside_the_sampling_loop_is_recorded() -> None:
    tok = build_tokenizer()
    eos = [tok.eos_token_id]

    def turns(env=Higher, **kw) -> Turns:
        return Turns(tok, env, [{"gold": "7"}], ["k"], ["p"], **kw)

    t = turns(max_turns=4)
    add = t.on_end(0, _ids(tok, "3") + eos, "eos", 100)
    assert tok.decode(add) == "Q:higher=" and t.replied == [True]
    ids = _ids(tok, "3") + eos + add + _ids(tok, "7") + eos
    assert t.on_end(0, ids, "eos", 100) == []  # right: the environment says it is over
    ep = t.episodes[0]
    assert [(x.role, x.content) for x in ep.turns] == [("assistant", "3"), ("user", "higher"), ("assistant", "7")]
    assert ep.answer == "7" and ep.finish == "eos" and ep.reward == 1.0 and ep.cause() is None

    t = turns(max_turns=1)  # the environment still answers at the last turn: the policy's turn_limit, judged
    assert t.on_end(0, _ids(tok, "3") + eos, "eos", 100) == []
    assert t.episodes[0].cause() is Cause.TURN_LIMIT and t.episodes[0].reward == 0.0

    t = turns()  # a reply that leaves no room to answer: context_overflow
    assert t.on_end(0, _ids(tok, "3") + eos, "eos", 5) == [] and t.episodes[0].finish == "context_overflow"

    t = turns()  # the budget ran out inside the turn: the final answer, truncated; nobody is asked
    assert t.on_end(0, _ids(tok, "3"), "length", 100) == [] and t.episodes[0].finish == "length"

    class Broken(Higher):
        def respond(self, text: str) -> str | None:
            raise ConnectionError("the game server is gone")

    class Odd(Higher):
        def respond(self, text: str) -> int:
            return 42

    class Stuck(Higher):
        release = threading.Event()

        def respond(self, text: str) -> str | None:
            self.release.wait(5)
            return "late"

    for env, cause, words in [
        (Broken, Cause.TOOL_ERROR, "the game server is gone"),
        (Odd, Cause.TOOL_ERROR, "respond returned int"),
        (Stuck, Cause.ENV_TIMEOUT, "ran past 0.2s"),
    ]:
        t = turns(env, timeout_s=0.2)
        assert t.on_end(0, _ids(tok, "3") + eos, "eos", 100) == []
        ep = t.episodes[0]
        assert ep.fault() is Cause(cause) and ep.finish == "fault" and words in ep.events[0].detail
        assert ep.reward is None  # a failed environment judges nothing
    Stuck.release.set()

    t = turns(faults=Faults({"env_crash": 1.0}))  # injected faults reach a reply as they reach a call
    assert t.on_end(0, _ids(tok, "3") + eos, "eos", 100) == [] and t.episodes[0].fault() is Cause.ENV_CRASH


def test_the_engine_neutral_turn_loop_runs_a_game_as_the_sampling_loop_does() -> None:
    said = iter(["5", "9", "7"])
    ep = run_episode(lambda msgs, budget: (next(said), "eos", 1), Higher, {"gold": "7"}, "guess", max_turns=4)
    assert [x.content for x in ep.turns] == ["5", "higher", "9", "lower", "7"] and ep.answer == "7"


# ----------------------------------------------------------------------------- a real model, the real loop
@pytest.fixture(scope="module")
def policy(echo_policy):
    return echo_policy


def _echo_turns(tok, rows, **kw):
    from rlvr.episodes.env import load_environment

    data = [{"prompt": s.prompt, "gold": s.gold, "task": s.task, "id": s.id} for s in rows]
    return Turns(tok, load_environment(ECHO), data, [f"k{i}" for i in range(len(rows))], ["" for _ in rows], **kw)


@pytest.mark.parametrize("fast", [True, False], ids=["lean-decoder", "hf-cache"])
def test_a_reply_is_appended_to_the_cache_and_never_in_the_loss(policy, fast) -> None:
    pytest.importorskip("verifiers")
    from rlvr.data.verifiers_env import gold_fields, load_rows

    model, tok = policy
    rows = load_rows(ECHO)[:4]
    b = generate(
        model,
        tok,
        [encode(tok, s.prompt) for s in rows],
        group_size=1,
        max_new_tokens=80,
        temperature=0.0,
        fast=fast,
        turns=_echo_turns(tok, rows, max_turns=6),
    )
    eos = tok.eos_token_id
    for i, (s, ep) in enumerate(zip(rows, b.episodes)):
        numbers = gold_fields(s.gold)["info"]["numbers"]
        assert [t.role for t in ep.turns] == ["assistant", "user"] * 2 + ["assistant"], ep.record()
        assert [t.content for t in ep.turns if t.role == "user"] == [f"say {n}" for n in numbers[1:]]
        assert ep.finish == "eos" and ep.cause() is None and b.texts[i] == ep.answer == ep.turns[-1].content
        said = [t.content for t in ep.turns if t.role == "assistant"]
        assert ep.reward == pytest.approx(sum(a == str(n) for a, n in zip(said, numbers)) / 3)  # its rubric
        ids, tool = b.completion_ids[i], b.tool_mask[i].bool()
        replies = [
            t
            for u in ep.turns
            if u.role == "user"
            for t in reply_ids(tok, [{"role": "user", "content": u.content}], "<eos>")
        ]
        assert ids[tool].tolist() == replies  # exactly what the template writes, nothing more
        assert not b.loss_mask[i][tool].any() and b.completion_mask[i][tool].all() and (b.logprobs[i][tool] == 0).all()
        trained = ids[b.loss_mask[i].bool()].tolist()
        assert trained.count(eos) == 3 and trained[-1] == eos  # each turn's stop is the policy's, in the loss
    assert any(ep.reward not in (0.0, 1.0) for ep in b.episodes) or len({ep.reward for ep in b.episodes}) > 1
    gap = ((_forward_logprobs(model, b) - b.logprobs).abs() * b.loss_mask).max()
    assert gap < 1e-4  # the sampling log-probs are the policy's over the whole conversation


def test_constrained_decoding_is_refused_where_every_turn_may_be_the_last(policy) -> None:
    from rlvr.decoding.constrain import Constrainer

    model, tok = policy
    c = Constrainer(tok, model.config.vocab_size, mode="answer", answer="integer")
    turns = Turns(tok, Higher, [{"gold": "7"}], ["k"], ["p"])
    with pytest.raises(ValueError, match="answers the policy's turns"):
        generate(model, tok, [encode(tok, "guess")], group_size=1, max_new_tokens=8, constrain=c, turns=turns)
