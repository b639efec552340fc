"""One answer against its gold: extract -> normalise -> parse -> compare, as a :class:`Verdict`.

Before extraction the completion is cut to the model's own text, as it renders
(:mod:`rlvr.verify.model_text`); text addressed to the grader is never an answer
(:mod:`rlvr.verify.grader_talk`); neither is a range ("about 2-3 hours") nor a box that
negates itself. :func:`rlvr.verify.math.verify_math` wraps it with a time limit and the
multiple-choice dispatch.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from functools import lru_cache
from typing import Literal, TypeVar

from rlvr.types import Method, Status, Verdict
from rlvr.verify.grader_talk import grader_talk
from rlvr.verify.math.commitment import uncommitted
from rlvr.verify.math.conventions import DEFAULT, Conventions, conventions, using
from rlvr.verify.math.equivalence import equal_alts, unevaluated
from rlvr.verify.math.extract import (
    BARE_MAX_CHARS,
    RANGE_MARK,
    Candidate,
    final_claims,
    find_boxes,
    is_bare_answer,
    iter_candidates,
    unfinished_answer,
)
from rlvr.verify.math.forms import base_subscript, in_base, integration_constant
from rlvr.verify.math.normalize import DEGREES, PLAIN_NUMBER, normalize, unicode_to_latex, unwrap_text
from rlvr.verify.math.parse import Alts, Num, Text, is_malformed, parse_alts, try_parse
from rlvr.verify.model_text import answer_pattern, answer_text, plain_unicode


class _Lazy:
    """Candidates pulled from the extractor only as far as they are needed (the first usually
    parses: a box found, the costly last-number scan of a long solution is never run)."""

    def __init__(self, it: Iterator[Candidate]) -> None:
        self._it: Iterator[Candidate] = it
        self._seen: list[Candidate] = []

    def __iter__(self) -> Iterator[Candidate]:
        yield from self._seen
        for c in self._it:
            self._seen.append(c)
            yield c

    def first(self) -> Candidate | None:
        return next(iter(self), None)


def _first_parsed(cands: Iterable[Candidate]) -> tuple[Candidate | None, Alts, str | None]:
    """The first candidate with a reading; also the refusal reason if one was refused."""
    refusal = None
    for cand in cands:
        alts, refusal = try_parse(cand.text)
        if cand.rule == "bare" and all(isinstance(a, Text) and a.raw for a in alts):
            continue  # a "bare" reading nothing could parse: try the stricter rules
        if alts:
            return cand, alts, None
        if refusal is not None:  # refused: do not fall back to a weaker rule
            return cand, (), refusal
    return next(iter(cands), None), (), refusal


_T = TypeVar("_T")


def _number_gold(gold: str) -> str | None:
    """The gold stripped, when it is a plain number (most golds: GSM8K's all, half of MATH's)."""
    t = gold.strip()
    return t if len(t) <= BARE_MAX_CHARS and PLAIN_NUMBER.fullmatch(t) else None


def _gold_candidates(gold: str) -> Iterator[Candidate]:
    """:func:`iter_candidates` of a gold, its first candidate read directly when the gold is a plain
    number: the bare number, which every earlier rule (tags, tables, boxes, "the answer is", GSM8K's
    ``####``) leaves to it - ten regex passes and a gold's reading a third cheaper (tested on
    generated numbers against the general path)."""
    if (number := _number_gold(gold)) is None:
        yield from iter_candidates(gold, gold=True)
        return
    yield Candidate("bare", (number,))
    rest = iter_candidates(gold, gold=True)
    next(rest, None)  # that same bare number
    yield from rest


class _Gold:
    """A gold answer as the comparison reads it, each part worked out when first needed and kept.

    A group of G completions is verified against one gold, and reading it (malformed or not, its
    first span, its parse) was a third of a verdict's time: :func:`_gold` keeps the readings of the
    most recent golds, one per gold string, each part computed once (again after a computation is cut
    short: never half of one).
    """

    def __init__(self, gold: str) -> None:
        self.text = gold
        self._lock = threading.Lock()
        self._cands = _Lazy(_gold_candidates(gold))
        self._done: dict[str, object] = {}

    def _once(self, part: str, compute: Callable[[], _T]) -> _T:
        with self._lock:  # one thread advances the candidates' generator at a time
            if part not in self._done:
                try:
                    self._done[part] = compute()
                except BaseException:
                    # cut short (a time limit lands anywhere, a generator that raised is spent):
                    # whoever holds this reading, now or later, starts it again whole
                    self._cands = _Lazy(_gold_candidates(self.text))
                    self._done.clear()
                    raise
            return self._done[part]  # type: ignore[return-value]

    def bare_malformed(self) -> bool:
        """A bare gold whose brackets do not balance: it cannot mean anything."""
        g = self.text
        if _number_gold(g) is not None:  # no bracket to balance
            return False
        # the cheap tests first: brackets almost always balance, and the bare-answer test reads prose
        return self._once(
            "malformed",
            lambda: (
                len(g.strip()) <= BARE_MAX_CHARS
                and not find_boxes(g)
                and is_malformed(g)
                and is_bare_answer(g, gold=True)
            ),
        )

    def first(self) -> Candidate | None:
        return self._once("first", self._cands.first)

    def parsed(self) -> tuple[Candidate | None, Alts, str | None]:
        return self._once("parsed", lambda: _first_parsed(self._cands))


@lru_cache(maxsize=1024)  # the most recent golds' readings, one per gold string
def _gold(gold: str) -> _Gold:
    return _Gold(gold)


def clear_gold_cache() -> None:
    """Forget every gold's reading (what :func:`rlvr.verify.math.warm_up` leaves behind)."""
    _gold.cache_clear()


_DIVIDES_BY_ZERO = re.compile(r"\\frac\s*\{[^{}]*\}\s*\{\s*0\s*\}|\\frac\s*\d0(?!\d)|(?<![\d.])\d+\s*/\s*0(?![\d.])")


def _same_string(pred: Candidate, gold: Candidate, details: dict[str, str]) -> Verdict | None:
    """The string fast path: identical normalised spans are equal without parsing (an undefined
    value such as ``\\frac{1}{0}`` never is: it equals nothing; bare digits against a gold in a
    base are read by the convention, :func:`_in_gold_base`)."""
    if normalize(pred.text) != normalize(gold.text) or _DIVIDES_BY_ZERO.search(gold.text):
        return None
    if "_" in gold.text and _in_gold_base(gold.text, pred.text) is not None:
        return None
    return Verdict(
        Status.CORRECT, pred.text, Method.STRING, "answers are identical after normalisation", gold.text, details
    )


_NEGATION = re.compile(
    r"\b(?:incorrect|wrong|false|invalid|not\s+(?:correct|right|the\s+answer|it|valid))\b"
    r"|^\W*(?:not|never)\b|\bisn't\b",
    re.IGNORECASE,
)


_DIGIT = re.compile(r"\d")


def _negated(span: str) -> bool:
    """A box or tag that says its own content is not the answer (``\\boxed{\\text{42 is incorrect}}``)."""
    words = unwrap_text(span)
    return bool(_DIGIT.search(words)) and bool(_NEGATION.search(words))


def _final_statement(completion: str) -> str:
    """The raw content of the last complete answer tag, else of the last box ('' when neither)."""
    end = completion.rfind("</answer")
    if end != -1:
        start = completion.rfind("<answer", 0, end)
        close = completion.find(">", start) if start != -1 else -1
        if close != -1 and close < end:
            return completion[close + 1 : end]
    at = completion.rfind("\\boxed")
    if at == -1:
        at = completion.rfind("\\fbox")
    boxes = find_boxes(completion[at:]) if at != -1 else []
    return boxes[-1][2] if boxes else ""


#: When an answer that is a computation left undone (``4 - 1``, ``2^{10}``, ``\binom{5}{2}`` against a
#: numeric gold) is wrong: ``question``: when the question is given and the computation only restates
#: it (every number in it is one the question states); ``always``; ``never`` (compared by value).
Unevaluated = Literal["question", "always", "never"]

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def question_numbers(question: str) -> frozenset[str]:
    """The numbers a question states (digits as written, leading zeros dropped).

    Examples:
        >>> sorted(question_numbers(r"What is $2^{10} - 24$, to 0.50 precision?"))
        ['0.5', '10', '2', '24']
    """
    return frozenset(_plain_number(n) for n in _NUMBER.findall(plain_unicode(question)))


def _plain_number(n: str) -> str:
    whole, _, frac = n.partition(".")
    whole, frac = whole.lstrip("0") or "0", frac.rstrip("0")
    return f"{whole}.{frac}" if frac else whole


# an operation written out: a LaTeX function or operator, a power, a factorial, or one number
# combined with another (a reduced fraction, a decimal or a percentage is a number, not an operation)
_OPERATION = re.compile(
    r"\\(?:d?t?binom|choose|ln|log|lg|exp|sqrt|int|sum|prod|times|cdot|div|sin|cos|tan)\b|[\^!]"
    r"|\d\s*[-+*×÷·]\s*[-+]?\s*\d"
)


def _restated(g_alts: Alts, p_alts: Alts, span: str, question: str) -> bool:
    """A numeric gold answered by a computation written out (``4 - 1``, ``2^{10}``, ``\\binom{5}{2}``,
    ``e^{\\ln 7}``, an unreduced fraction) that states nothing the question did not."""
    if not g_alts or not all(isinstance(g, Num) for g in g_alts):
        return False
    written = unevaluated(g_alts, p_alts, span) or bool(_OPERATION.search(span))
    return written and restates(span, question)


def restates(span: str, question: str) -> bool:
    r"""Whether an answer computation states nothing the question did not: each of its numbers is one
    the question gives (``4 - 1`` for "What is 4 minus 1?"; not ``10 \cdot 9`` for "10 people, 2 posts")."""
    numbers = {_plain_number(n) for n in _NUMBER.findall(span)}
    return bool(numbers) and numbers <= question_numbers(question)


def compare(
    completion: str,
    gold: str,
    strict: bool = False,
    *,
    question: str | None = None,
    unevaluated_rule: Unevaluated = "question",
    reading: Conventions | None = None,
) -> Verdict:
    """One completion's answer against a gold answer (no time limit; exceptions propagate): the
    steps of :func:`rlvr.verify.math.verify_math` after the multiple-choice dispatch. ``reading``:
    the conventions where reading is one (:mod:`rlvr.verify.math.conventions`; None: the defaults)."""
    if reading is None or reading == DEFAULT:  # the commonest call: nothing to set
        return _compare(completion, gold, strict, question, unevaluated_rule)
    with using(reading):
        return _compare(completion, gold, strict, question, unevaluated_rule)


def _compare(completion: str, gold: str, strict: bool, question: str | None, unevaluated_rule: Unevaluated) -> Verdict:
    if not isinstance(completion, str) or not isinstance(gold, str):
        raise TypeError(f"completion and gold must be str, got {type(completion).__name__}, {type(gold).__name__}")
    raw, completion, gold = completion, answer_text(completion), plain_unicode(gold)
    if (talk := grader_talk(completion)) is not None:
        return Verdict(
            Status.WRONG,
            reason=f"addressed to the grader, not an answer: {talk}",
            details={"rule": "grader_talk", "grader_talk": talk},
        )
    if _negated(stated := _final_statement(completion)):
        why = f"the answer says it is not the answer: {stated[:60]!r}"
        return Verdict(Status.WRONG, stated[:200], Method.STRING, why, details={"rule": "negated"})
    read = _gold(gold)
    verdict = _against(read, completion, strict, question, unevaluated_rule)
    if (
        verdict.status is Status.CORRECT
        and (other := _conflicting(completion, verdict.extracted, read, raw)) is not None
    ):
        why = f"conflicting answers: {other.rule} says {other.text[:40]!r}, not {verdict.extracted[:40]!r}"
        details = {**verdict.details, "rule": "conflicting", "conflict": other.rule}
        return Verdict(Status.WRONG, verdict.extracted, Method.STRING, why, verdict.gold, details)
    return verdict


def _bold_last_line(raw: str) -> bool:
    """The completion's last line, as the model wrote it, is all in bold ("**12**")."""
    last = raw.rstrip().rsplit("\n", 1)[-1].strip().rstrip(".")
    return len(last) > 4 and last.startswith("**") and last.endswith("**")


def _conflicting(completion: str, chosen: str, read: _Gold, raw: str) -> Candidate | None:
    """A final-answer claim of another format (answer tag, boxes, ``####``, bold final line:
    :func:`final_claims`) that reads as an answer unequal to the gold: the completion did not
    commit to one answer. A claim nothing can read (a word, a sentence) is no claim."""
    markers = ("<answer" in completion) + ("\\boxed" in completion or "\\fbox" in completion) + ("####" in completion)
    if markers == 0 and "**" not in raw[-400:]:
        return None  # no format that could claim an answer: at most a final line
    lines = completion.rstrip().rsplit("\n", 1)
    bold_last_line = _bold_last_line(raw)
    # with no other format, an answer read elsewhere ("The answer is 12.") and a final line all in
    # bold ("**13**") are the two claims that must agree
    markers += markers == 0 and bold_last_line
    # the final line is a claim only as "Final answer: ..." or all in bold
    final_line = len(lines) > 1 and ("nswer" in lines[-1] or bold_last_line)
    tag_end = completion.rfind("</answer")
    phrase_after_tag = tag_end >= 0 and answer_pattern(completion[tag_end + 8 :]) is not None
    if markers + final_line + phrase_after_tag < 2:
        return None  # one format: nothing to disagree with (most correct verdicts)
    said = normalize(chosen)
    claims = [c for c in final_claims(completion, bold_last_line=bold_last_line) if normalize(c.text) != said]
    if not claims:
        return None
    _, g_alts, _ = read.parsed()
    for claim in claims:
        alts, _ = try_parse(claim.text)
        if not alts or all(isinstance(a, Text) and a.raw for a in alts):
            continue
        if not equal_alts(g_alts, alts)[0]:
            return claim
    return None


def _in_gold_base(g_span: str, span: str) -> tuple[bool, Method] | None:
    """Bare digits against a gold written in a base (``52`` for ``52_8``), under the ``base_digits``
    convention: the digits read in that base, never as a decimal number. None: not this case."""
    p = span.strip()
    if not conventions().base_digits or not re.fullmatch(r"[0-9A-Z]+", p) or not (base := base_subscript(g_span)):
        return None
    value = in_base(p, base)
    if value is None:
        return False, Method.STRUCTURAL  # a digit that base does not have
    return equal_alts(parse_alts(g_span), (Num(Fraction(value)),))


def _by_angle(g_span: str, span: str) -> tuple[bool, Method] | None:
    """An angle in degrees against one in radians (a multiple of pi), under the ``degrees_as_radians``
    convention. None: the convention is off, or not exactly one side is in degrees with the other in pi."""
    if not conventions().degrees_as_radians:
        return None
    g_latex, p_latex = unicode_to_latex(g_span), unicode_to_latex(span)  # "45°" is 45^\circ
    for degrees, radians in ((p_latex, g_latex), (g_latex, p_latex)):
        if DEGREES.search(degrees) and not DEGREES.search(radians) and "pi" in normalize(radians):
            value = normalize(DEGREES.sub("", degrees))
            return equal_alts(parse_alts(radians), parse_alts(rf"\frac{{({value}) \pi}}{{180}}"))
    return None


def _by_constant(g_span: str, span: str) -> tuple[bool, Method] | None:
    """An antiderivative's constant of integration, by the ``integration_constant`` convention
    (:mod:`rlvr.verify.math.conventions`). None: neither side carries one."""
    if "+" not in g_span and "+" not in span:  # a constant is added: most spans have no "+"
        return None
    chosen = conventions()
    g_const, p_const = integration_constant(normalize(g_span)), integration_constant(normalize(span))
    if g_const or p_const:
        both = g_const is not None and p_const is not None
        lower = (g_const is not None and g_const[1]) or (p_const is not None and p_const[1])
        if both or (chosen.integration_constant == "optional" and not lower):
            g_bare = g_const[0] if g_const else normalize(g_span)
            p_bare = p_const[0] if p_const else normalize(span)
            return equal_alts(parse_alts(g_bare), parse_alts(p_bare))
    return None


def _against(
    read: _Gold, completion: str, strict: bool, question: str | None, unevaluated_rule: Unevaluated
) -> Verdict:
    """:func:`compare` once the completion has passed the whole-text rules."""
    gold = read.text
    if read.bare_malformed():
        return Verdict(Status.BAD_GOLD, reason=f"gold {gold[:60]!r} is malformed LaTeX", gold=gold)
    # Extract once per side; the first spans may already match as strings (no parsing at all).
    unfinished = unfinished_answer(completion)  # never read through a fallback (once the gold is known good)
    p_cands = _Lazy(iter([]) if unfinished else iter_candidates(completion, strict=strict))
    g0, p0 = read.first(), p_cands.first()
    if (
        g0 is not None
        and p0 is not None
        and (v := _same_string(p0, g0, {"rule": p0.rule, "gold_rule": g0.rule}))
        and uncommitted(completion, p0.text) is None
    ):
        return v
    g_cand, g_alts, g_refused = read.parsed()
    g_span = g_cand.text if g_cand else ""
    if g_alts and all(isinstance(a, Text) and a.raw for a in g_alts) and is_malformed(g_span):
        return Verdict(Status.BAD_GOLD, reason=f"gold {g_span[:60]!r} is malformed LaTeX", gold=g_span)
    if not g_alts:
        why = g_refused or ("gold is empty" if not gold.strip() else "no answer could be read from the gold")
        return Verdict(Status.BAD_GOLD, reason=why, gold=g_span)
    if unfinished is not None:
        return Verdict(Status.NO_ANSWER, reason=unfinished, gold=g_span, details={"rule": "unfinished"})
    p_cand, p_alts, p_refused = _first_parsed(p_cands)
    if p_cand is None:
        return Verdict(Status.NO_ANSWER, reason="no answer found in the completion", gold=g_span)
    span = p_cand.text
    details = {"rule": p_cand.rule, "gold_rule": g_cand.rule if g_cand else ""}
    if not p_alts and p_refused is None:  # a span was found but nothing in it reads as an answer
        return Verdict(
            Status.NO_ANSWER,
            extracted=span,
            gold=g_span,
            details=details,
            reason=f"no answer could be read from {span[:60]!r}",
        )
    if not p_alts:
        return Verdict(
            Status.TIMEOUT, extracted=span, gold=g_span, details=details, reason=f"refused up front: {p_refused}"
        )
    if RANGE_MARK in span and re.fullmatch(rf"[-+]?[\d.]+{RANGE_MARK}[-+]?[\d.]+", span):
        why = f"a range ({span.replace(RANGE_MARK, '-')}) is not one answer"
        return Verdict(Status.WRONG, span, Method.STRING, why, g_span, {**details, "rule": "range"})
    if _negated(span):
        return Verdict(
            Status.WRONG, span, Method.STRING, f"the answer says it is not the answer: {span[:60]!r}", g_span, details
        )
    if g_cand is not None and (v := _same_string(p_cand, g_cand, details)) and uncommitted(completion, span) is None:
        return v
    if unevaluated_rule == "always" and unevaluated(g_alts, p_alts, span):  # "4 - 1" for 3
        why = f"{span[:60]!r} is a computation, not its result: the answer must be the number"
        return Verdict(Status.WRONG, span, Method.STRUCTURAL, why, g_span, {**details, "rule": "unevaluated"})
    based = _in_gold_base(g_span, span) if "_" in g_span else None
    ok, method = based if based is not None else equal_alts(g_alts, p_alts)
    if not ok and based is None and (by_angle := _by_angle(g_span, span)) is not None:
        ok, method = by_angle
    if not ok and based is None and (by_convention := _by_constant(g_span, span)) is not None:
        ok, method = by_convention
    if ok and question is not None and unevaluated_rule == "question" and _restated(g_alts, p_alts, span, question):
        why = f"{span[:60]!r} restates the question's computation: the answer must be its result"
        return Verdict(Status.WRONG, span, Method.STRUCTURAL, why, g_span, {**details, "rule": "restated"})
    if ok and (given := uncommitted(completion, span)) is not None:  # named, but not given as the answer
        rule, why = given
        return Verdict(Status.WRONG, span, Method.STRING, why, g_span, {**details, "rule": rule})
    if ok:
        return Verdict(Status.CORRECT, span, method, f"equal ({method.value})", g_span, details)
    return Verdict(Status.WRONG, span, method, f"{span[:60]!r} differs from the gold {g_span[:60]!r}", g_span, details)
