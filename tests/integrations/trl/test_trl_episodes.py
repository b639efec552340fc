"""Episodes with tools on TRL's GRPOTrainer: real TRL runs of its tool loop, rlvr's guards on every row.

The policy is the tiny model taught by SFT to call the calculator in its chat template's format
(the call turn ends with <eos>, TRL appends the result and the model answers), so TRL's own loop
parses and runs real calls; nothing of TRL is mocked.
"""

from __future__ import annotations

import copy
import itertools
import json
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from rlvr.config import FailureConfig
from rlvr.data.tasks import Sample
from rlvr.diagnostics.causes import Cause
from rlvr.episodes import Faults
from rlvr.episodes.guard import Outcome
from rlvr.episodes.traces import trace_of
from rlvr.errors import ConfigError
from rlvr.integrations.trl.episodes import episode_of

PAIRS = [(12, 34), (56, 78), (91, 23), (45, 67)]


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly.

    Args:
        expression: numbers with + - * / and parentheses.
    """
    from rlvr.episodes.tools import Calculator

    return Calculator().calculator(expression)


def _samples() -> list[Sample]:
    return [Sample([{"role": "user", "content": f"{a}*{b}"}], str(a * b), "math", f"p{a}x{b}") for a, b in PAIRS]


@pytest.fixture(scope="module")
def policy():
    """The tiny model after SFT on calculator traces in TRL's turn format."""
    from rlvr.models.tiny import build_model, build_tokenizer
    from rlvr.sft import sft

    torch.manual_seed(0)
    tok = build_tokenizer(max_length=512)
    model = build_model(tok, hidden=64, layers=2, heads=4, max_positions=256)
    sft(
        model,
        tok,
        itertools.cycle(_samples()),
        steps=150,
        batch_size=4,
        lr=5e-3,
        eval_every=0,
        warmup_steps=10,
        completion_of=lambda s: trace_of(s, after_call="<eos>"),
    )
    return model.eval(), tok


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _trainer(policy, tmp_path: Path, *, steps: int = 1, **kw):
    from datasets import Dataset

    from rlvr.integrations.trl import FailureAwareGRPOTrainer
    from rlvr.rewards import build_reward

    model, tok = policy
    rows = [{"prompt": s.prompt, "answer": s.gold, "prompt_id": s.id} for s in _samples()] * 2
    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=steps,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=kw.pop("max_new", 160),
        learning_rate=1e-4,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        save_strategy="no",
        seed=0,
        beta=0.0,
        disable_tqdm=True,
        temperature=1.0,
        max_tool_calling_iterations=kw.pop("iterations", 2),
    )
    kw.setdefault("tools", [calculator])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FailureAwareGRPOTrainer(
            model=copy.deepcopy(model),
            processing_class=tok,
            reward_funcs=[build_reward("accuracy")],
            args=args,
            train_dataset=Dataset.from_list(rows),
            **kw,
        )


def test_trl_tool_loop_runs_under_guards_and_environment_faults_leave_the_step(policy, tmp_path) -> None:
    tr = _trainer(
        policy,
        tmp_path,
        failure=FailureConfig(resample_tries=2),
        eval_rows=_samples(),
        env_faults=Faults({"tool_error": 0.3, "env_timeout": 0.1}, seed=1),
    )
    tr.train()
    recs = _lines(tmp_path / "rollouts.jsonl")
    kept = [r for r in recs if not r.get("replaced")]
    assert len(kept) == 8
    eps = [r["episode"] for r in kept]
    # TRL's loop made real calls through the guard: the call, the calculator's exact result, the answer
    called = [e for e in eps if e["tool_calls"]]
    assert called, eps
    for r in kept:
        e = r["episode"]
        if e["finish"] == "eos" and e["tool_calls"] and not e["events"]:
            assert [t["role"] for t in e["turns"]] == ["assistant", "tool", "assistant"]
            assert e["turns"][1]["content"] == r["gold"]  # what the tool returned, as the policy saw it
            assert r["completion"] == e["turns"][-1]["content"]  # the verifier judged the final turn only
    # injected faults were recorded where they happened and their episodes redrawn whole
    replaced = [r for r in recs if r.get("replaced")]
    assert replaced and all(r["cause"] in ("tool_error", "env_timeout") for r in replaced)
    assert all(r["episode"]["finish"] == "fault" and r["episode"]["events"] for r in replaced)
    # an episode that is still the environment's fault after the redraws stays out of the step
    for r in kept:
        if r["cause"] in ("tool_error", "env_timeout", "env_crash"):
            assert not r["admitted"] and r["advantage"] == 0.0
    lines = _lines(tmp_path / "metrics.jsonl")
    m = next(x for x in lines if "tools/calculator/calls" in x)
    assert m["tools/calculator/calls"] >= len(called) and "episodes/turns" in m
    assert m["env/fault_rate"] >= 0.0 and m["failure/resampled"] == len(replaced)
    # held-out episodes run in TRL's own turn format, fault-free: the SFT'd policy calls and answers
    ev = [x for x in lines if "eval/accuracy" in x]
    assert len(ev) == 2 and ev[0]["eval/tool_rate"] == 1.0 and ev[0]["eval/accuracy"] >= 0.75, ev


class Retry:
    """A conversation written for rlvr: the environment asks again until a turn of the policy's holds
    the answer (no tools: a call's markup is only text to it)."""

    def reset(self, row: dict) -> None:
        self.answer = str(row["answer"])

    def respond(self, text: str) -> str | None:
        return None if self.answer in text else "not yet: try again"

    def reward(self, answer: str, row: dict) -> float:
        return float(self.answer in answer)


def test_a_conversation_runs_through_trl_s_rollout_func_its_replies_out_of_trl_s_loss(policy, tmp_path) -> None:
    from rlvr.sampling.replies import reply_ids

    tr = _trainer(
        policy,
        tmp_path,
        tools=None,
        conversation=Retry,
        max_turns=3,
        eval_rows=_samples(),
        failure=FailureConfig(resample_tries=2),
        env_faults=Faults({"tool_error": 0.3}, seed=1),
    )
    seen = []
    score = tr._generate_and_score_completions
    tr._generate_and_score_completions = lambda inputs: seen.append(score(inputs)) or seen[-1]
    tr.train()
    tok = tr.processing_class
    recs = _lines(tmp_path / "rollouts.jsonl")
    kept = [r for r in recs if not r.get("replaced")]
    assert len(kept) == 8
    talked = [r for r in kept if r["cause"] != "tool_error"]
    assert talked and all(r["episode"]["replies"] >= 1 for r in talked)
    for r in talked:  # the environment's turns between the policy's, as the conversation went
        roles = [t["role"] for t in r["episode"]["turns"]]
        assert set(roles[::2]) == {"assistant"} and set(roles[1::2]) <= {"user"}
    replaced = [r for r in recs if r.get("replaced")]  # the environment's failures redrawn whole
    assert replaced and all(r["cause"] == "tool_error" and r["episode"]["finish"] == "fault" for r in replaced)
    for r in kept:
        if r["cause"] == "tool_error":
            assert not r["admitted"] and r["advantage"] == 0.0
    out = seen[0]  # what TRL's loss reads: the replies' tokens carry none of it
    eps = tr._gen.episodes
    for i, ep in enumerate(eps):
        ids = out["completion_ids"][i][out["completion_mask"][i].bool()]
        theirs = ids[~out["tool_mask"][i][: len(ids)].bool()].tolist()
        answered = ep.turns[: max((k for k, u in enumerate(ep.turns) if u.role == "assistant"), default=0)]
        replies = [u.content for u in answered if u.role == "user"]  # those the policy read and answered
        assert theirs == [t for c in replies for t in reply_ids(tok, [{"role": "user", "content": c}], "<eos>")]
    ev = [x for x in _lines(tmp_path / "metrics.jsonl") if "eval/accuracy" in x]
    assert len(ev) == 2  # held-out conversations, in the same format, fault-free


def test_what_a_conversation_cannot_run_with_on_trl_is_refused(policy, tmp_path) -> None:
    from rlvr.config import DecodingConfig

    with pytest.raises(ConfigError, match="conversation with tools"):
        _trainer(policy, tmp_path, conversation=Retry)
    with pytest.raises(ConfigError, match="none is the answer's"):
        _trainer(policy, tmp_path, tools=None, conversation=Retry, constrain=DecodingConfig(constrain="answer"))


def test_an_environment_whose_reset_raises_is_an_env_crash_not_a_crashed_step(policy, tmp_path) -> None:
    class Flaky:
        calls = 0

        def reset(self, **row) -> None:
            Flaky.calls += 1
            if Flaky.calls % 3 == 0:
                raise RuntimeError("session service unavailable")

        def calculator(self, expression: str) -> str:
            """Evaluate an arithmetic expression exactly.

            Args:
                expression: numbers with + - * / and parentheses.
            """
            return calculator(expression)

    tr = _trainer(policy, tmp_path, tools=None, environment_factory=Flaky, failure=FailureConfig(resample_tries=3))
    tr.train()
    recs = _lines(tmp_path / "rollouts.jsonl")
    crashed = [r for r in recs if r["cause"] == "env_crash"]
    assert crashed and all(r.get("replaced") or not r["admitted"] for r in crashed)
    assert any("session service unavailable" in e["detail"] for r in crashed for e in r["episode"]["events"])


class _Tok:
    def decode(self, ids):
        return "".join(ids)


def test_what_trl_leaves_untraced_is_classified_from_its_messages() -> None:
    call = {"type": "function", "function": {"name": "calculator", "arguments": {"expression": "1+1"}}}
    ok = Outcome("2")
    # a final turn that still holds <tool_call> markup TRL could not parse: malformed, the answer judged
    text = "<tool_call>{oops</tool_call>"
    ep = episode_of(
        [{"role": "assistant", "content": text}],
        [*text, "E"],
        None,
        [],
        prompt="q",
        tokenizer=_Tok(),
        stop_ids={"E"},
        max_iterations=2,
    )
    assert [e.cause for e in ep.events] == [Cause.MALFORMED_TOOL_CALL] and ep.finish == "eos"
    # a call left unanswered after max_tool_calling_iterations rounds: turn_limit
    msgs = [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "2"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    ep = episode_of(
        msgs,
        list("aaRRbb"),
        [1, 1, 0, 0, 1, 1],
        [ok, ok],
        prompt="q",
        tokenizer=_Tok(),
        stop_ids=set(),
        max_iterations=1,
    )
    assert ep.cause() == Cause.TURN_LIMIT and ep.finish == "turn_limit"
    # the same with rounds to spare: TRL rolled the result back, it did not fit
    ep = episode_of(
        msgs,
        list("aaRRbb"),
        [1, 1, 0, 0, 1, 1],
        [ok, ok],
        prompt="q",
        tokenizer=_Tok(),
        stop_ids=set(),
        max_iterations=5,
    )
    assert ep.cause() == Cause.CONTEXT_OVERFLOW
    # arguments that are not an object never reached a tool: the policy's bad_arguments
    bad = {"type": "function", "function": {"name": "calculator", "arguments": "1+1"}}
    ep = episode_of(
        [
            {"role": "assistant", "content": "", "tool_calls": [bad]},
            {"role": "tool", "content": "x"},
            {"role": "assistant", "content": "2"},
        ],
        list("aaRRbE"),
        [1, 1, 0, 0, 1, 1],
        [],
        prompt="q",
        tokenizer=_Tok(),
        stop_ids={"E"},
        max_iterations=3,
    )
    assert [e.cause for e in ep.events] == [Cause.BAD_ARGUMENTS] and ep.answer == "2" and ep.cause() is None


def test_tool_lists_and_environments_trl_cannot_run_are_refused_before_trl_starts(policy, tmp_path) -> None:
    def undocumented(x: int) -> int:
        return x

    with pytest.raises(ConfigError, match="undocumented"):
        _trainer(policy, tmp_path, tools=[undocumented])

    class Broken:
        def __init__(self) -> None:
            raise OSError("no sandbox")

        def reset(self, **row) -> None: ...

    with pytest.raises(ConfigError, match="environment_factory: the environment cannot be built: OSError"):
        _trainer(policy, tmp_path, tools=None, environment_factory=Broken)
    from rlvr.config import DecodingConfig

    with pytest.raises(ConfigError, match="constrain"):
        _trainer(policy, tmp_path, constrain=DecodingConfig(constrain="answer"))


def _rlvr_train(policy, tmp_path: Path, *sets: str) -> tuple[list[str], dict[str, str], Path]:
    """``rlvr train`` with ``engine=trl`` on the SFT'd policy saved as a model folder, on 2-digit
    products: the command (``sets`` added), its environment and the run folder."""
    import os
    import sys

    model, tok = policy
    folder = tmp_path / "policy"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    out = tmp_path / "run"
    base = [
        f"model.name={folder}",
        "data.task=arithmetic",
        "data.task_options={digits: 2, ops: '*'}",
        "rollout.prompts_per_step=2",
        "rollout.max_new_tokens=160",
        "run.eval_every=0",
        f"run.out_dir={out}",
        "engine=trl",
    ]
    env = {
        **os.environ,
        "GLOO_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src"),
    }
    return [sys.executable, "-m", "rlvr", "train", *[x for o in (*base, *sets) for x in ("--set", o)]], env, out


def test_rlvr_train_engine_trl_with_env_runs_episodes_on_two_processes(policy, tmp_path) -> None:
    """The same ``env`` config as on rlvr's engine, with ``--set engine=trl --processes 2``: TRL's tool
    loop on both processes, one run folder, ``rlvr causes`` splitting the causes by owner."""
    import subprocess
    import sys

    cmd, env, out = _rlvr_train(
        policy,
        tmp_path,
        "data.eval_size=4",
        "rollout.group_size=4",
        "run.steps=1",
        "env={tools: [calculator], max_turns: 3, faults: {tool_error: 0.3}, fault_seed: 2}",
    )
    res = subprocess.run([*cmd, "--processes", "2"], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    recs = _lines(out / "rollouts.jsonl")
    assert {r["rank"] for r in recs} == {0, 1}
    assert all("episode" in r for r in recs) and any(r["episode"]["tool_calls"] for r in recs)
    assert any(r.get("replaced") and r["cause"] == "tool_error" for r in recs)
    causes = subprocess.run(
        [sys.executable, "-m", "rlvr", "causes", str(out)], env=env, capture_output=True, text=True, timeout=120
    )
    assert causes.returncode == 0, causes.stderr[-2000:]
    assert "tool_error" in causes.stdout and "environment" in causes.stdout.lower()


def test_a_trl_episode_run_killed_mid_run_resumes_from_its_checkpoint(policy, tmp_path, kill_at_step) -> None:
    """SIGKILL during step 2 of an episode run on TRL, then ``--resume``: the run goes on from
    checkpoint 1, nothing written before it is lost, every step's episodes are in the run folder."""
    import subprocess
    import sys

    cmd, env, out = _rlvr_train(
        policy,
        tmp_path,
        "data.eval_size=2",
        "rollout.group_size=2",
        "run.steps=3",
        "run.save_every=1",
        "env={tools: [calculator], max_turns: 2, faults: {tool_error: 0.3}}",
    )
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    kill_at_step(proc, out, 2)
    assert (out / "checkpoint-1").is_dir()
    res = subprocess.run(
        [sys.executable, "-m", "rlvr", "train", "--resume", str(out), "--set", "run.steps=3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    # every training step logs its tool metrics (a step whose episodes made no call has no per-tool entry)
    steps = [m["step"] for m in _lines(out / "metrics.jsonl") if "tools/calls_per_episode" in m]
    assert steps == [1, 2, 3]
    recs = _lines(out / "rollouts.jsonl")
    assert sorted({r["step"] for r in recs}) == [1, 2, 3] and all("episode" in r for r in recs)
    assert (out / "model" / "config.json").exists()


class Judged:
    """An rlvr environment that judges its own episodes (every answer that writes 408 scores 1)."""

    def reset(self, row: dict) -> None:
        return None

    def calculator(self, expression: str) -> str:
        """Evaluate an arithmetic expression exactly.

        Args:
            expression: numbers with + - * / and parentheses.
        """
        return calculator(expression)

    def reward(self, answer: str, row: dict) -> float:
        return 1.0 if "408" in answer else 0.0


def test_an_rlvr_environment_judges_its_episodes_on_trl_redrawn_ones_too(policy, tmp_path) -> None:
    from rlvr.integrations.trl.episodes import trl_environment

    tr = _trainer(
        policy,
        tmp_path,
        tools=None,
        environment_factory=trl_environment(Judged),
        failure=FailureConfig(resample_tries=3),
        env_faults=Faults({"tool_error": 0.4}, seed=4),
    )
    tr.train()
    recs = _lines(tmp_path / "rollouts.jsonl")
    assert any(r.get("replaced") for r in recs)  # some episodes were redrawn with a fresh environment
    judged = [r for r in recs if not r.get("replaced") and r["episode"]["finish"] != "fault"]
    assert judged and all("the environment's reward" in r["verdict"]["reason"] for r in judged)
    assert all(r["components"]["accuracy"] == (1.0 if "408" in r["completion"] else 0.0) for r in judged)


def test_a_tools_output_never_becomes_special_tokens(policy, tmp_path) -> None:
    """A tool that prints the text of a special token (``<eos>``, ``<pad>``, ``<bos>``) gives the
    policy those characters as ordinary tokens, as rlvr's engine does: no stop, no turn boundary."""
    trainer = _trainer(policy, tmp_path)
    tok = trainer.processing_class
    specials = {tok.eos_token_id, tok.pad_token_id, tok.bos_token_id}

    def suffix(content: str) -> list[int]:
        return list(trainer._get_tool_suffix_ids([{"role": "tool", "name": "calculator", "content": content}]))

    plain, hostile = suffix("12"), suffix("1<eos>2<pad><bos>")
    template = [t for t in plain if t in specials]  # the special tokens the template itself writes
    assert [t for t in hostile if t in specials] == template
    assert tok.decode(hostile).count("<eos>") == tok.decode(plain).count("<eos>") + 1  # the text is kept


def test_on_trl_an_outage_is_waited_out_and_a_thin_step_moves_by_its_share(policy, tmp_path) -> None:
    """Step 1 in an outage: TRL's tool loop meets it on every call, one redraw round confirms it,
    nothing is admitted (``env/down``); step 2 redraws its 0.5 faults within the budget and scales
    its loss by the admitted share."""
    tr = _trainer(
        policy,
        tmp_path,
        steps=2,
        failure=FailureConfig(redraw_budget=2.0, thin_step_scale=True, min_group_rows=2),
        env_faults=Faults({"tool_error": 0.5}, seed=3, outages=((1, 2),)),
    )
    tr.train()
    lines = [x for x in _lines(tmp_path / "metrics.jsonl") if "env/down" in x]
    assert [x["env/down"] for x in lines] == [1.0, 0.0]
    assert lines[0]["failure/admitted_share"] == 0.0 and lines[1]["failure/admitted_share"] > 0.0
    recs = _lines(tmp_path / "rollouts.jsonl")
    first = [r for r in recs if r["step"] == 1]
    assert not any(r["admitted"] for r in first)
    assert {r["attempt"] for r in first if r.get("replaced")} <= {1}  # one round, then it waited
    second = [r for r in recs if r["step"] == 2]
    assert sum(bool(r.get("replaced")) for r in second) <= 16  # within 2 x 8 extra episodes


def test_each_reset_of_a_pooled_trl_environment_ends_the_previous_episodes_session() -> None:
    """TRL pools its environment instances and resets them per episode; an rlvr environment with
    sessions (OpenEnv's: a server caps them) has the last one closed before the next starts, so the
    open sessions never outnumber the pool (they piled up until the server refused every reset)."""
    from rlvr.integrations.trl.episodes import trl_environment

    open_sessions: set[int] = set()

    class Sessions:
        def reset(self, row: dict) -> None:
            open_sessions.add(id(self))

        def close(self) -> None:
            open_sessions.discard(id(self))

        def ping(self) -> str:
            """Answer pong."""
            return "pong"

    pool = [trl_environment(Sessions)() for _ in range(2)]
    for step in range(5):
        for env in pool:
            env.reset(prompt="p", id=f"{step}")
    assert len(open_sessions) == len(pool)
