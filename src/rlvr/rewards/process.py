"""``process``: step-level credit from the completion's intermediate results (seed 003, 3.2).

``r = w_steps * mean(step_signals) + w_correct * correct`` (0.6 and 0.4 in the seed).

Step signals, each in {-1, 0, 1}:

* **+1** for every reference step whose result the completion reaches *anywhere*:
  order-tolerant, and method-tolerant (only the value is compared, so a different
  route to the same intermediate value counts);
* **0** for a reference step the completion never reaches (no exact imitation is
  demanded: the seed warns that over-specified steps turn RL into imitation);
* **-1** for every arithmetic claim in the completion that is false (``3 × 4 = 13``):
  a checkable wrong step.

Reference steps come from a ``steps`` column (a list of strings) or from the lines
of a worked gold solution (GSM8K's ``<<48/2=24>>`` annotations included). A row
without reference steps gets ``None`` (or the outcome alone with ``missing="outcome"``).
Results are numbers and arithmetic (exact rationals, rounding-aware); symbolic
results (``x = 2``, ``\\frac{\\pi}{4}``) are compared with the maths verifier.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from rlvr.errors import ConfigError
from rlvr.rewards.base import Reward, Scored, column, gold_column, register
from rlvr.rewards.verdicts import row_verdicts
from rlvr.types import Status
from rlvr.verify.arith import try_evaluate
from rlvr.verify.math.verifier import DEFAULT_TIMEOUT, verify_math

_ANNOTATION = re.compile(r"<<[^<>]*>>")
_NUM = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
_TERM = rf"[-+(]*\s*{_NUM}(?:\s*[)%]*\s*(?:[-+*/×÷^x·]|\\times|\\cdot|\\div)\s*[(]*\s*-?{_NUM}\s*\)*)*\s*\)*"
_CHAIN = re.compile(rf"{_TERM}(?:\s*=\s*{_TERM})+")
_LAST_NUM = re.compile(rf"-?{_NUM}(?!.*\d)", re.DOTALL)
_STATED = re.compile(
    rf"\b(?:is|are|was|were|equals|gives|get|gets|makes|leaves|total of)\s*:?\s*\$?"
    rf"(-?{_NUM})(?![\d.]*\s*[-+*/×÷^])|:\s*\$?(-?{_NUM})\b(?!\s*[-+*/×÷^=])",
    re.IGNORECASE,
)
_LATEX_EQ = re.compile(r"\$([^$]*=[^$]*)\$|\\\[(.*?=.*?)\\\]|\\\((.*?=.*?)\\\)", re.DOTALL)
MAX_SEGMENTS = 200  # per completion: bounded work on pathological text


@dataclass(frozen=True)
class Result:
    """An intermediate result: a value, and how precisely it was written."""

    value: Fraction
    decimals: int  # digits after the decimal point as written (rounding tolerance)

    def matches(self, other: Result) -> bool:
        """Equal up to the coarser rounding of the two."""
        written = [d for d in (self.decimals, other.decimals) if d]
        tol = Fraction(1, 2 * 10 ** min(written)) if written else Fraction(0)
        return abs(self.value - other.value) <= tol


def _result(text: str) -> Result | None:
    text = text.strip().rstrip(".")
    value = try_evaluate(text.replace("x", "*") if re.search(r"\dx\d|\d\s+x\s+\d", text) else text.replace("%", "/100"))
    if value is None:
        return None
    dec = re.search(r"\.(\d+)\s*$", text)
    return Result(value, len(dec.group(1)) if dec else 0)


def _chains(text: str) -> list[list[str]]:
    """Arithmetic equation chains ``a = b = c`` as their segments."""
    text = _ANNOTATION.sub(" ", text)
    return [re.split(r"\s*=\s*", m.group(0)) for m in _CHAIN.finditer(text)][:MAX_SEGMENTS]


def step_result(step: str) -> Result | None:
    """A reference step's conclusion: the last result of its last chain, else its last number."""
    annotated = re.findall(r"<<[^<>]*=([^<>]*)>>", step)
    if annotated and (r := _result(annotated[-1])):
        return r
    for chain in reversed(_chains(step)):
        if r := _result(chain[-1]):
            return r
    if m := _LAST_NUM.search(_ANNOTATION.sub(" ", step)):
        return _result(m.group(0))
    return None


def reference_steps(ref: str | Sequence[str]) -> list[tuple[str, Result]]:
    """``(step text, result)`` for each step of a reference with a result."""
    if isinstance(ref, str):
        lines = [ln for ln in ref.splitlines() if ln.strip() and not ln.lstrip().startswith("####")]
        if len(lines) < 2 and not _chains(ref):
            return []  # a bare answer is not a worked solution
    else:
        lines = [str(s) for s in ref]
    out = []
    for ln in lines:
        if (r := step_result(ln)) is not None:
            out.append((ln.strip(), r))
    return out


def completion_results(text: str) -> tuple[list[Result], list[str]]:
    """Every result the completion states, and the arithmetic claims it gets wrong."""
    results: list[Result] = []
    false_claims: list[str] = []
    for chain in _chains(text):
        parsed = [_result(seg) for seg in chain]
        for i, r in enumerate(parsed):
            if r is None:
                continue
            if i > 0:
                results.append(r)
            prev = parsed[i - 1] if i > 0 else None
            if prev is not None and not prev.matches(r):
                false_claims.append(f"{chain[i - 1].strip()} = {chain[i].strip()}")
    for m in list(_STATED.finditer(_ANNOTATION.sub(" ", text)))[:MAX_SEGMENTS]:  # "half of 48 is 24"
        if r := _result(m.group(1) or m.group(2)):
            results.append(r)
    return results, false_claims


def _symbolic_match(step: str, text: str) -> bool:
    """A LaTeX equation in the reference step that the completion states equivalently."""

    ref_eqs = [next(g for g in m.groups() if g) for m in _LATEX_EQ.finditer(step)]
    if not ref_eqs:
        return False
    rhs = ref_eqs[-1].split("=")[-1].strip()
    for m in list(_LATEX_EQ.finditer(text))[:MAX_SEGMENTS]:
        seg = next(g for g in m.groups() if g)
        if verify_math(f"\\boxed{{{seg.split('=')[-1].strip()}}}", rhs, strict=True, timeout=1.0).correct:
            return True
    return False


def step_signals(text: str, steps: list[tuple[str, Result]], answer: str = "") -> tuple[list[int], list[str]]:
    """The signals (see the module docstring) and the false claims behind the -1s."""
    results, false_claims = completion_results(text)
    if answer and (r := _result(answer)):
        results.append(r)
    signals = []
    for step, ref in steps:
        hit = any(ref.matches(r) for r in results) or (("$" in step or "\\" in step) and _symbolic_match(step, text))
        signals.append(1 if hit else 0)
    return signals + [-1] * len(false_claims), false_claims


@register("process")
class Process(Reward):
    """``w_steps * mean(step_signals) + w_correct * correct`` (0.6 / 0.4).

    Args:
        w_steps, w_correct: the weights of the step part and the outcome part.
        steps_field: column holding each row's reference steps (list of strings);
            when absent, the gold itself is read as a worked solution.
        missing: what a row without reference steps gets: ``none`` (not applicable)
            or ``outcome`` (``w_correct * correct`` alone, rescaled to [0, 1]).
    """

    name = "process"
    needs_verdict = True

    def __init__(
        self,
        *,
        w_steps: float = 0.6,
        w_correct: float = 0.4,
        steps_field: str = "steps",
        missing: Literal["none", "outcome"] = "none",
        strict: bool = False,
        gold_field: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__()
        if missing not in ("none", "outcome"):
            raise ConfigError(f"process missing must be 'none' or 'outcome', got {missing!r}")
        self.w_steps, self.w_correct, self.steps_field, self.missing = w_steps, w_correct, steps_field, missing
        self.strict, self.gold_field, self.timeout = strict, gold_field, timeout

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        n = len(texts)
        verdicts = row_verdicts(texts, columns, gold_field=self.gold_field, strict=self.strict, timeout=self.timeout)
        refs = column(columns, self.steps_field, n) or gold_column(columns, n, self.gold_field)
        out = []
        for text, v, ref in zip(texts, verdicts, refs):
            if v.status in (Status.BAD_GOLD, Status.TIMEOUT, Status.ERROR, Status.UNCERTAIN):
                out.append(Scored(None, v, {"problem": f"verdict {v.status.value}"}))
                continue
            correct = 1.0 if v.correct else 0.0
            steps = reference_steps(ref) if isinstance(ref, str | list | tuple) else []
            if not steps:
                value = correct if self.missing == "outcome" else None
                out.append(Scored(value, v, {"step_score": None, "problem": "no reference steps"}))
                continue
            signals, wrong = step_signals(text, steps, v.extracted)
            step_score = sum(signals) / len(signals)
            info = {"step_score": step_score, "signals": signals, "false_claims": wrong}
            out.append(Scored(self.w_steps * step_score + self.w_correct * correct, v, info))
        return out
