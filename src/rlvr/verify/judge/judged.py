"""``JudgedVerifier``: rules first, an LLM judge only for what rules cannot decide.

Rule verifiers are exact but narrow; a generative judge covers open answers but
can be gamed. So:

1. every row goes through the task's rule verifier (:func:`rlvr.verify.registry.verify_many`);
   ``correct`` / ``wrong`` / ``no_answer`` are final (a format death stays a format death);
2. only *undecidable* rows go to the judge: rule verdict ``bad_gold``, ``error`` or
   ``timeout``; an answer kind no rule covers (two texts compared only as strings);
   or a task marked open;
3. the judge's reply is parsed strictly and its reason checked by rules
   (:mod:`rlvr.verify.judge.reply`); a failed check, a judge that is down, slow past
   the deadline or talking garbage gives ``uncertain`` with the reason, never a
   silent 0. The failure-aware trainer treats ``uncertain`` like ``invalid``: no
   gradient, resampled.

Calls run ``concurrency`` at a time with per-attempt timeouts, retries with
exponential backoff, one deadline for the whole batch, and a circuit breaker (a
judge that failed ``breaker`` times in a row is not called again in that batch).
Replies are cached by (question, answer, gold), so a pair is judged once. A
sampled share of rule-decided rows (``audit_rate``) is also sent to the judge,
to measure how often it agrees with the rules (the rule verdict stands).
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import Any

from rlvr.errors import ConfigError
from rlvr.types import Method, Status, Verdict
from rlvr.verify.judge.backends import HTTPJudge, JudgeBackend, TransformersJudge
from rlvr.verify.judge.reply import (
    JudgeReply,
    ReplyError,
    check_reply,
    judge_messages,
    parse_reply,
)
from rlvr.verify.registry import verify_many
from rlvr.verify.tags import last_answer_block

_WORDS = re.compile(r"(?<!\\)\b[A-Za-z]{3,}\b")
#: Words that do not make an answer prose: LaTeX, function names, connectives, common units.
_NOT_PROSE = frozenset(
    "sqrt frac dfrac tfrac cdot times text mathrm mathbf infty sin cos tan cot sec csc log exp arcsin arccos "
    "arctan left right boxed and the leq geq neq cup cap mbox circ degree degrees percent units unit meters meter "
    "metres inches inch feet foot hours hour minutes minute seconds second dollars dollar cents cent miles mile "
    "pounds pound grams gram liters litres days day years year weeks week".split()
)


def _prose_words(text: str) -> set[str]:
    return {w.lower() for w in _WORDS.findall(text)} - _NOT_PROSE


def uncovered(v: Verdict) -> bool:
    """Two pieces of prose compared: no rule covers that kind of answer (``Paris`` vs ``the capital``).

    Identical strings stay ``correct``; maths answers with units or LaTeX words stay with the rules."""
    if v.status not in (Status.CORRECT, Status.WRONG) or (v.correct and v.method is Method.STRING):
        return False
    return bool(_prose_words(v.extracted)) and bool(_prose_words(v.gold))


def default_undecidable(v: Verdict) -> bool:
    """Which rule verdicts go to the judge (see the module docstring)."""
    return v.status in (Status.BAD_GOLD, Status.ERROR, Status.TIMEOUT) or uncovered(v)


@dataclass
class JudgeStats:
    """What the two levels did (cumulative; :meth:`metrics` for a log line).

    Attributes:
        rows: rows verified.
        rule_decided: rows the rules decided.
        judged: rows sent to the judge (cache hits included).
        calls: judge requests made (retries included).
        cache_hits: judged rows answered from the cache.
        uncertain: rows that came back ``uncertain``.
        demoted: judge replies that failed a rule check.
        failures: rows where the judge was down, timed out or replied garbage.
        audited / audit_agree: rule-decided rows also judged, and how many agreed.
        latencies: seconds per successful judge request.
    """

    rows: int = 0
    rule_decided: int = 0
    judged: int = 0
    calls: int = 0
    cache_hits: int = 0
    uncertain: int = 0
    demoted: int = 0
    failures: int = 0
    audited: int = 0
    audit_agree: int = 0
    latencies: list[float] = field(default_factory=list)

    def metrics(self) -> dict[str, float | None]:
        """Flat ``judge/...`` metrics (``None`` where there is nothing to average)."""
        lat = sorted(self.latencies)
        return {
            "judge/rows": self.rows,
            "judge/rule_decided": self.rule_decided,
            "judge/judged": self.judged,
            "judge/calls": self.calls,
            "judge/cache_hits": self.cache_hits,
            "judge/uncertain_rate": self.uncertain / self.rows if self.rows else 0.0,
            "judge/demoted": self.demoted,
            "judge/failures": self.failures,
            "judge/audit_agreement": self.audit_agree / self.audited if self.audited else None,
            "judge/latency_mean_s": sum(lat) / len(lat) if lat else None,
            "judge/latency_p90_s": lat[int(0.9 * (len(lat) - 1))] if lat else None,
        }


class JudgedVerifier:
    """The two-level verifier (see the module docstring).

    Args:
        judge: a backend (:class:`~rlvr.verify.judge.backends.HTTPJudge`,
            :class:`~rlvr.verify.judge.backends.TransformersJudge`, or any
            ``(messages, *, timeout) -> str``); ``None`` makes every undecidable row ``uncertain``.
        open_tasks: tasks always sent to the judge (no rule verifier is trusted for them).
        timeout: seconds for one judge request.
        deadline: seconds for the whole judging phase of one batch (default ``timeout * (retries + 1)``
            plus the backoff); rows not judged by then are ``uncertain``.
        retries: extra attempts after a failed request; ``backoff`` seconds before the first, doubling.
        concurrency: judge requests in flight at once.
        breaker: consecutive failures after which the judge is not called again in that batch.
        audit_rate: share of rule-decided rows also judged to measure agreement.
        cache_size: replies kept (LRU).
        jobs / rule_timeout / strict: passed to the rule verifier.
        undecidable: which rule verdicts go to the judge (default :func:`default_undecidable`).
    """

    def __init__(
        self,
        judge: JudgeBackend | Callable[..., str] | None,
        *,
        open_tasks: Sequence[str] = (),
        timeout: float = 10.0,
        deadline: float | None = None,
        retries: int = 2,
        backoff: float = 0.25,
        concurrency: int = 4,
        breaker: int = 3,
        audit_rate: float = 0.0,
        cache_size: int = 100_000,
        jobs: int = 0,
        rule_timeout: float = 5.0,
        strict: bool = False,
        undecidable: Callable[[Verdict], bool] = default_undecidable,
        seed: int = 0,
    ) -> None:
        self.judge = judge
        self.open_tasks = set(open_tasks)
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.deadline = deadline if deadline is not None else timeout * (retries + 1) + backoff * (2**retries)
        self.concurrency, self.breaker, self.audit_rate = max(1, concurrency), breaker, audit_rate
        self.jobs, self.rule_timeout, self.strict = jobs, rule_timeout, strict
        self.undecidable = undecidable
        self.stats = JudgeStats()
        self._cache: OrderedDict[tuple[str, str, str], JudgeReply] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._rng = random.Random(seed)

    # -- public -------------------------------------------------------------------------------

    def verify(self, completion: str, gold: Any, question: str = "", task: str | None = None) -> Verdict:
        """One row."""
        return self.verify_many([completion], [gold], [question], [task])[0]

    def verify_many(
        self,
        completions: Sequence[str],
        golds: Sequence[Any],
        questions: Sequence[str] | None = None,
        tasks: Sequence[str | None] | None = None,
    ) -> list[Verdict]:
        """Verify rows: rules for all, the judge for the undecidable ones, in input order."""

        n = len(completions)
        questions = list(questions) if questions is not None else [""] * n
        tasks = list(tasks) if tasks is not None else [None] * n
        rule_tasks = [None if t in self.open_tasks else t for t in tasks]
        rules = verify_many(
            completions, golds, rule_tasks, jobs=self.jobs, timeout=self.rule_timeout, strict=self.strict
        )
        out: list[Verdict] = list(rules)
        to_judge: list[int] = []
        audit: list[int] = []
        for i, v in enumerate(rules):
            if self._needs_judge(v, tasks[i] in self.open_tasks, completions[i]):
                to_judge.append(i)
            elif (
                v.status in (Status.CORRECT, Status.WRONG) and self.audit_rate and self._rng.random() < self.audit_rate
            ):
                audit.append(i)
        with self._lock:
            self.stats.rows += n
            self.stats.rule_decided += n - len(to_judge)
            self.stats.judged += len(to_judge)
        if not to_judge and not audit:
            return out
        keys = {
            i: (str(questions[i] or ""), self._answer(completions[i], rules[i]), self._gold_text(golds[i], rules[i]))
            for i in to_judge + audit
        }
        replies = self._judge_all(sorted(set(keys.values())))
        for i in to_judge:
            out[i] = self._verdict(rules[i], keys[i], replies[keys[i]])
            if out[i].status is Status.UNCERTAIN:
                with self._lock:
                    self.stats.uncertain += 1
        for i in audit:
            got = replies[keys[i]]
            if isinstance(got, JudgeReply):
                with self._lock:
                    self.stats.audited += 1
                    self.stats.audit_agree += (got.verdict == "correct") == rules[i].correct
        return out

    __call__ = verify

    # -- internals ----------------------------------------------------------------------------

    def _needs_judge(self, v: Verdict, open_task: bool, completion: str) -> bool:
        if open_task:  # no rule is trusted; a completion with no answer at all stays a format death
            return bool(v.extracted) or last_answer_block(completion) is not None
        return self.undecidable(v)

    @staticmethod
    def _answer(completion: str, rule: Verdict) -> str:
        if rule.extracted:
            return rule.extracted
        if (block := last_answer_block(completion)) is not None:
            return block.strip()
        return completion.strip()[-2000:]

    @staticmethod
    def _gold_text(gold: Any, rule: Verdict) -> str:
        return rule.gold or (gold if isinstance(gold, str) else str(gold))

    def _judge_all(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], JudgeReply | str]:
        """Each distinct key judged once: a cached reply, a fresh reply, or why there is none."""
        result: dict[tuple[str, str, str], JudgeReply | str] = {}
        todo = []
        for k in keys:
            with self._lock:
                hit = self._cache.get(k)
                if hit is not None:
                    self._cache.move_to_end(k)
                    self.stats.cache_hits += 1
            if hit is not None:
                result[k] = hit
            else:
                todo.append(k)
        if not todo:
            return result
        if self.judge is None:
            return result | dict.fromkeys(todo, "no judge configured")
        end = time.monotonic() + self.deadline
        state = {"fails_in_a_row": 0}
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo)), thread_name_prefix="rlvr-judge")
        futures = {pool.submit(self._judge_one, k, end, state): k for k in todo}
        done, _pending = wait_futures(futures, timeout=max(0.0, end - time.monotonic()) + 0.5)
        pool.shutdown(wait=False, cancel_futures=True)  # nothing waits on a judge past the deadline
        for f, k in futures.items():
            if f in done and f.exception() is None:
                result[k] = f.result()
            elif f in done:
                result[k] = f"judge call crashed: {f.exception()!r}"
            else:
                result[k] = f"judge did not answer within the {self.deadline:g}s deadline"
        return result

    def _judge_one(self, key: tuple[str, str, str], end: float, state: dict[str, int]) -> JudgeReply | str:
        question, answer, gold = key
        messages = judge_messages(question, answer, gold)
        why = "judge not called"
        for attempt in range(self.retries + 1):
            left = end - time.monotonic()
            if left <= 0.05:
                return f"judge deadline passed ({why})"
            if state["fails_in_a_row"] >= self.breaker:
                return f"judge skipped: it failed {state['fails_in_a_row']} times in a row ({why})"
            t0 = time.monotonic()
            with self._lock:
                self.stats.calls += 1
            try:
                text = self.judge(messages, timeout=min(self.timeout, left))  # type: ignore[misc]
                reply = parse_reply(text)
            except ReplyError as e:  # garbage: asking again rarely helps, but a sampling judge may recover
                why = str(e)
            except Exception as e:
                why = f"{type(e).__name__}: {e}"
            else:
                with self._lock:
                    self.stats.latencies.append(time.monotonic() - t0)
                    state["fails_in_a_row"] = 0
                    self._cache[key] = reply
                    if len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
                return reply
            with self._lock:
                state["fails_in_a_row"] += 1
            if attempt < self.retries:
                time.sleep(min(self.backoff * 2**attempt, max(0.0, end - time.monotonic())))
        return why

    def _verdict(self, rule: Verdict, key: tuple[str, str, str], got: JudgeReply | str) -> Verdict:
        _question, answer, gold = key
        details = {"rule": {"status": rule.status.value, "reason": rule.reason}, "judged": True}
        if isinstance(got, str):
            with self._lock:
                self.stats.failures += 1
            return Verdict(
                Status.UNCERTAIN,
                extracted=answer,
                method=Method.JUDGE,
                gold=gold,
                reason=f"judge unavailable: {got}",
                details=details,
            )
        details["judge"] = {"verdict": got.verdict, "reason": got.reason, "final_answer": got.final_answer}
        if problems := check_reply(got, answer):
            with self._lock:
                self.stats.demoted += 1
            return Verdict(
                Status.UNCERTAIN,
                extracted=answer,
                method=Method.JUDGE,
                gold=gold,
                reason="judge reply demoted: " + "; ".join(problems),
                details=details | {"checks": problems},
            )
        status = Status.CORRECT if got.verdict == "correct" else Status.WRONG
        return Verdict(
            status, extracted=answer, method=Method.JUDGE, gold=gold, reason=f"judge: {got.reason}", details=details
        )


def from_config(cfg: Any, *, seed: int = 0, device: Any = None) -> JudgedVerifier:
    """A :class:`JudgedVerifier` from a :class:`rlvr.config.JudgeConfig` (a local judge on ``device``)."""

    if cfg.backend == "local":
        model = cfg.model or os.environ.get("RLVR_JUDGE_MODEL")
        if not model:
            raise ConfigError("judge.backend local needs judge.model (a model name or folder)")
        backend: Any = TransformersJudge(model, device=device)
    else:
        backend = HTTPJudge(cfg.base_url, cfg.model, os.environ.get(cfg.api_key_env))
    return JudgedVerifier(
        backend,
        open_tasks=cfg.open_tasks,
        timeout=cfg.timeout,
        retries=cfg.retries,
        concurrency=cfg.concurrency,
        audit_rate=cfg.audit_rate,
        seed=seed,
    )
