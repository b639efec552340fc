"""The two-level verifier: rules first, the judge for the rest, its replies checked, a down judge harmless."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rlvr.diagnostics.causes import Cause, cause_of
from rlvr.types import Method, Status
from rlvr.verify.judge import (
    HTTPJudge,
    JudgedVerifier,
    JudgeReply,
    ReplyError,
    TransformersJudge,
    check_reply,
    parse_reply,
)


def reply(verdict: str, reason: str, final: str) -> str:
    return json.dumps({"verdict": verdict, "reason": reason, "final_answer": final})


class FakeJudge:
    """An OpenAI-compatible chat-completions server in the test process, told how to behave."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.delay = 0.0
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                try:
                    self._answer()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up first (the slow tests)
                    pass

            def _answer(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append(body)
                if outer.delay:
                    time.sleep(outer.delay)
                if outer.mode == "fail":
                    self.send_response(503)
                    self.end_headers()
                    self.wfile.write(b"overloaded")
                    return
                user = body["messages"][-1]["content"]
                answer = user.rsplit("Candidate's final answer:\n", 1)[1].strip()
                gold = user.split("Reference answer:\n", 1)[1].split("\n\n", 1)[0].strip()
                content = {
                    "ok": reply(
                        "correct" if (hit := gold.lower() in answer.lower()) else "wrong",
                        f"The candidate answer {answer} {'matches' if hit else 'does not match'} the reference {gold}.",
                        answer,
                    ),
                    "malformed": "Sure! The answer is correct.",
                    "contradict": reply("correct", f"The answer {answer} is wrong, it does not match {gold}.", answer),
                }[outer.mode]
                data = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture()
def server() -> Iterator[FakeJudge]:
    s = FakeJudge()
    yield s
    s.server.shutdown()
    s.server.server_close()


def rows_200() -> tuple[list[str], list[str], list[str]]:
    """200 rows: 100 rule-decidable maths, 100 open-text answers no rule covers."""
    comps, golds, qs = [], [], []
    for i in range(100):
        comps.append(f"<answer>{i if i % 3 else i + 1}</answer>")
        golds.append(str(i))
        qs.append(f"What is {i} + 0?")
    for i in range(100):
        city = ["Paris", "Lyon", "Rome", "Oslo"][i % 4]
        comps.append(f"<answer>the city of {city} number{i}</answer>")
        golds.append(f"Paris number{i}")
        qs.append(f"Which city, case {i}?")
    return comps, golds, qs


def test_only_undecidable_rows_reach_the_judge(server: FakeJudge) -> None:
    comps, golds, qs = rows_200()
    jv = JudgedVerifier(HTTPJudge(server.url, "judge-model"), concurrency=8)
    verdicts = jv.verify_many(comps, golds, qs)
    assert len(server.requests) == 100 and jv.stats.judged == 100 and jv.stats.rule_decided == 100
    assert all(v.method is not Method.JUDGE for v in verdicts[:100])
    judged = verdicts[100:]
    assert all(v.method is Method.JUDGE for v in judged)
    assert sum(v.correct for v in judged) == 25  # "the city of Paris numberN" vs "Paris numberN"
    assert all(v.status in (Status.CORRECT, Status.WRONG) for v in judged)
    # the same pairs again: answered from the cache, nothing sent
    jv.verify_many(comps, golds, qs)
    assert len(server.requests) == 100 and jv.stats.cache_hits == 100
    m = jv.stats.metrics()
    assert m["judge/uncertain_rate"] == 0.0 and m["judge/latency_mean_s"] > 0


def test_a_down_judge_loses_nothing_and_blocks_nothing() -> None:
    comps, golds, qs = rows_200()
    jv = JudgedVerifier(HTTPJudge("http://127.0.0.1:9/v1"), timeout=1.0, retries=2, backoff=0.05)
    t0 = time.monotonic()
    verdicts = jv.verify_many(comps, golds, qs)
    assert time.monotonic() - t0 < jv.deadline + 5
    assert [v.status for v in verdicts[:100]] == [Status.WRONG if i % 3 == 0 else Status.CORRECT for i in range(100)]
    assert all(v.status is Status.UNCERTAIN and "judge unavailable" in v.reason for v in verdicts[100:])
    assert jv.stats.calls <= 3 + 4  # the breaker stops calling a judge that keeps failing


def test_a_slow_judge_hits_the_deadline_and_rows_come_back_uncertain(server: FakeJudge) -> None:
    server.delay = 5.0
    comps, golds, qs = rows_200()
    jv = JudgedVerifier(HTTPJudge(server.url), timeout=0.5, retries=1, backoff=0.05, deadline=1.5, concurrency=4)
    t0 = time.monotonic()
    verdicts = jv.verify_many(comps[100:120], golds[100:120], qs[100:120])
    assert time.monotonic() - t0 < 1.5 + 1.5
    assert all(v.status is Status.UNCERTAIN for v in verdicts)


def test_failing_and_malformed_and_self_contradicting_judges_are_demoted(server: FakeJudge) -> None:
    comps, golds, qs = rows_200()
    for mode, words in (("fail", "HTTP 503"), ("malformed", "not JSON"), ("contradict", "contradiction")):
        server.mode = mode
        jv = JudgedVerifier(HTTPJudge(server.url), timeout=1, retries=1, backoff=0.01)
        v = jv.verify(comps[104], golds[104], qs[104])
        assert v.status is Status.UNCERTAIN and words in v.reason, (mode, v.reason)


def test_retries_recover_from_a_transient_failure() -> None:
    calls = []

    def flaky(messages: list[dict], *, timeout: float) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return reply("correct", "The candidate answer blue whale matches the reference.", "blue whale")

    jv = JudgedVerifier(flaky, retries=2, backoff=0.01)
    v = jv.verify("<answer>blue whale</answer>", "the blue whale", "Largest animal?")
    assert v.correct and v.method is Method.JUDGE and len(calls) == 3


def test_open_tasks_always_go_to_the_judge_but_format_deaths_stay() -> None:
    seen = []

    def judge(messages: list[dict], *, timeout: float) -> str:
        seen.append(messages)
        return reply("wrong", "The candidate answer 4 does not match the reference 5.", "4")

    jv = JudgedVerifier(judge, open_tasks=["essay"])
    assert jv.verify("<answer>4</answer>", "4", task="essay").status is Status.WRONG  # the judge decided
    assert jv.verify("no answer here at all", "4", task="essay").status is Status.NO_ANSWER
    assert len(seen) == 1


def test_audit_measures_agreement_on_rule_decided_rows(server: FakeJudge) -> None:
    comps, golds, qs = rows_200()
    jv = JudgedVerifier(HTTPJudge(server.url), audit_rate=0.5, seed=1)
    verdicts = jv.verify_many(comps[:100], golds[:100], qs[:100])
    assert all(v.method is not Method.JUDGE for v in verdicts)  # the rules' verdicts stand
    assert 30 < jv.stats.audited < 70
    assert jv.stats.metrics()["judge/audit_agreement"] > 0.5


def test_no_judge_configured_means_uncertain_not_zero() -> None:
    v = JudgedVerifier(None).verify("<answer>the blue whale</answer>", "blue whale shark")
    assert v.status is Status.UNCERTAIN and "no judge" in v.reason
    assert cause_of(v.status) is Cause.INVALID  # the trainer gives it no gradient and resamples it


GOOD = JudgeReply("correct", "The candidate answer 42 matches the reference 42 exactly.", "42")


@pytest.mark.parametrize(
    "crafted, check",
    [
        (JudgeReply("correct", "The answer 42 is incorrect; the reference is 41.", "42"), "contradiction"),
        (JudgeReply("wrong", "The candidate answer 42 matches the reference and is correct.", "42"), "contradiction"),
        (JudgeReply("correct", "Maybe 42 is right, the reference says 42.", "42"), "hedging"),
        (JudgeReply("correct", "It is probably equivalent to 42 in the reference.", "42"), "hedging"),
        (JudgeReply("correct", "42 matches the reference, however the working is off.", "42"), "hedging"),
        (JudgeReply("correct", "The candidate answer 42 matches the reference 42.", "41"), "final_answer"),
        (JudgeReply("correct", "The last digit 2 matches the reference.", "42"), "last_token"),
        (JudgeReply("correct", "The answer ends with 2, like the reference.", "42"), "last_token"),
        (JudgeReply("correct", "Correct.", "42"), "empty_reason"),
    ],
)
def test_every_crafted_gaming_reply_is_demoted(crafted: JudgeReply, check: str) -> None:
    problems = check_reply(crafted, "42")
    assert any(p.startswith(check) for p in problems), problems


def test_last_token_check_on_a_multi_token_answer() -> None:
    r = JudgeReply("correct", "The reference also has 3, so x = 3 holds.", "x = 2 or x = 3")
    assert any(p.startswith("last_token") for p in check_reply(r, "x = 2 or x = 3"))
    ok = JudgeReply("correct", "The candidate gives x = 2 or x = 3, the same roots as the reference.", "x=2 or x=3")
    assert check_reply(ok, "x = 2 or x = 3") == []


def test_an_honest_reply_passes_and_equal_spellings_of_the_answer_count_as_the_same() -> None:
    assert check_reply(GOOD, "42") == []
    half = JudgeReply("correct", "The candidate answer 0.5 equals the reference one half.", "1/2")
    assert check_reply(half, "0.5") == []


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yes",
        "[1, 2]",
        '{"verdict": "correct"}',
        '{"verdict": "maybe", "reason": "x", "final_answer": "1"}',
        '{"verdict": "correct", "reason": "ok ok ok", "final_answer": "1", "extra": 1}',
    ],
)
def test_replies_are_parsed_strictly(text: str) -> None:
    with pytest.raises(ReplyError):
        parse_reply(text)


def test_a_fenced_reply_is_accepted() -> None:
    assert parse_reply('```json\n{"verdict": "Wrong", "reason": "r r r", "final_answer": 3}\n```').verdict == "wrong"


def test_local_transformers_judge_plumbing() -> None:
    pytest.importorskip("torch")
    from rlvr.models.tiny import build_model, build_tokenizer

    tok = build_tokenizer(max_length=1024)
    model = build_model(tok, hidden=32, layers=1, heads=2, max_positions=1024)
    judge = TransformersJudge(model, tok, max_new_tokens=16)
    text = judge([{"role": "user", "content": "Q"}], timeout=5)
    assert isinstance(text, str)
    jv = JudgedVerifier(judge, retries=0)
    v = jv.verify("<answer>a blue whale</answer>", "the blue whale", "Largest animal?")
    # an untrained model's reply is not the JSON asked for: uncertain, with the parser's reason
    assert v.status is Status.UNCERTAIN and "judge unavailable" in v.reason and jv.stats.calls == 1
