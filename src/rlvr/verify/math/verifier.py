"""``verify_math``: a model's maths answer against a gold answer, as a :class:`Verdict`, within a time limit.

The comparison itself is :func:`rlvr.verify.math.compare.compare`; a gold that is one option letter
goes to the multiple-choice verifier (:mod:`rlvr.verify.mcq`).
"""

from __future__ import annotations

from rlvr.errors import VerifierTimeout
from rlvr.types import Status, Verdict
from rlvr.verify.math import equivalence, parse
from rlvr.verify.math.compare import Unevaluated, clear_gold_cache, compare
from rlvr.verify.math.conventions import Conventions
from rlvr.verify.math.normalize import normalize
from rlvr.verify.mcq import gold_letter, verify_mcq
from rlvr.verify.timeout import time_limit

DEFAULT_TIMEOUT = 5.0


def verify_math(
    completion: str,
    gold: str,
    *,
    question: str | None = None,
    strict: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    unevaluated: Unevaluated = "question",
    conventions: Conventions | None = None,
) -> Verdict:
    """Verify a model's maths answer against a gold answer.

    Args:
        completion: the model output (prose, ``<think>``/``<answer>`` tags, boxes...).
        gold: the reference: a bare answer or a worked solution with a box.
        question: the problem the completion answers (the row's prompt). With it, an answer that
            only restates the question's computation (``4 - 1`` for "What is 4 minus 1?", every
            number of it one the question gives) is ``wrong``, rule ``restated``; without it a
            closed form equal to the gold (``\\sqrt[3]{27}`` for 3) is ``correct``.
        strict: no last-number fallback; only explicit answers count.
        timeout: seconds for the whole verification (any thread; ``None`` = no limit).
        unevaluated: ``question`` (the default, above); ``always``: any computation left undone
            against a numeric gold is ``wrong`` (rule ``unevaluated``), question or not; ``never``.
        conventions: where reading an answer is a convention (a ratio against a fraction, an
            antiderivative without its constant, bare digits against a gold in a base), the
            choices to make: :class:`~rlvr.verify.math.conventions.Conventions` (None: a careful
            competition grader's defaults).

    Returns:
        A :class:`Verdict`; ``timeout`` and ``error`` are never reported as ``wrong``.

    Examples:
        >>> verify_math(r"so the answer is $\\boxed{\\frac{1}{2}}$", "0.5").status.value
        'correct'
        >>> verify_math("I don't know", "3", strict=True).status.value
        'no_answer'
        >>> verify_math(r"\\boxed{2^{10}}", "1024").status.value
        'correct'
        >>> verify_math(r"\\boxed{2^{10}}", "1024", question="What is 2^10?").details["rule"]
        'restated'
    """
    try:
        with time_limit(timeout):
            return _verify(completion, gold, strict, question, unevaluated, conventions)
    except VerifierTimeout:
        return Verdict(Status.TIMEOUT, reason=f"verification exceeded {timeout:g}s")
    except RecursionError:
        return Verdict(Status.ERROR, reason="input nested too deeply to parse")
    except Exception as e:  # a bug or an unexpected parser failure: reported, never 'wrong'
        return Verdict(Status.ERROR, reason=f"{type(e).__name__}: {str(e)[:200]}")


def _verify(
    completion: str,
    gold: str,
    strict: bool,
    question: str | None = None,
    unevaluated: Unevaluated = "question",
    conventions: Conventions | None = None,
) -> Verdict:
    if not isinstance(completion, str) or not isinstance(gold, str):
        raise TypeError(f"completion and gold must be str, got {type(completion).__name__}, {type(gold).__name__}")
    if gold_letter(gold) is not None:  # one option letter: a multiple-choice answer
        return verify_mcq(completion, gold)
    return compare(completion, gold, strict, question=question, unevaluated_rule=unevaluated, reading=conventions)


#: Invented answers in the forms models write them, each against an equal and an unequal gold:
#: verifying them once compiles the patterns and loads the SymPy paths a verdict takes.
_WARM_UP_PAIRS = (
    (r"Adding the two parts, the total is $\boxed{\frac{7}{3}}$.", r"\frac{7}{3}", "2.5"),
    (r"So the range is $\boxed{\left[ -1, \frac{\pi}{3} \right]}$.", r"[-1, \pi/3]", r"x^2 + 2x + 1"),
    (r"Therefore $x = \boxed{2 \pm \sqrt{3}}$.", r"2 \pm \sqrt{3}", "4"),
    (r"The angle measures $\boxed{40^\circ}$.", "40", r"\frac{2\pi}{9}"),
    (r"<think>3 times 4 is 12</think><answer>12</answer>", "12", "13"),
    (r"She pays 3 * $4 = $12 in all.\n#### 12", "12", r"6 - 2i"),
    (r"The answer is $\boxed{3 + 4i}$", r"3+4i", r"\text{(B)}"),
    (r"which gives $\boxed{y = 2x - 5}$", r"2x - 5", r"\sqrt{13}"),
    (r"It grows by $\boxed{15\%}$ a year.", "15", r"(1, 2)"),
)


def warm_up() -> None:
    """Verify invented answers once, before forking workers or timing anything.

    Fills the LaTeX parser's prediction cache (:func:`rlvr.verify.math.parse.warm_up`) and
    compiles what a verdict's first call would; no verdict or parse is left cached.
    """
    parse.warm_up()
    for completion, equal, unequal in _WARM_UP_PAIRS:
        for gold in (equal, unequal):
            verify_math(completion, gold)
    for cached in (parse.latex_to_sympy, parse.parse_alts, normalize, equivalence._evaluated):
        cached.cache_clear()
    clear_gold_cache()
