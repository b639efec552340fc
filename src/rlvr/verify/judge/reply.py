"""The judge's prompt, its strict reply parser, and the rules that check a reply before it counts.

A generative judge covers answers rules cannot decide, but it can be gamed (a
policy learns what makes the judge say yes) and it can be sloppy. So its reply is
a JSON object ``{verdict, reason, final_answer}`` parsed strictly, and then the
*reason* is checked by rules (:func:`check_reply`). Any of these demotes the row
to ``uncertain`` (no gradient; resampled by the failure-aware trainer):

=================== ===========================================================
check               fires when
=================== ===========================================================
contradiction       the verdict says correct but the reason says wrong (or the reverse)
hedging             the reason hedges or contradicts itself (maybe, probably, not sure, however...)
final_answer        the judge's ``final_answer`` differs from the answer rlvr extracted
last_token          the reason argues from the answer's last token or character only
empty_reason        the reason is missing or too short to be a reason
=================== ===========================================================
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from rlvr.verify.math import verify_math

SYSTEM_PROMPT = (
    "You grade answers. Compare the candidate's final answer with the reference answer for the question. "
    "Reply with one JSON object and nothing else: "
    '{"verdict": "correct" or "wrong", "reason": "<one or two sentences>", '
    '"final_answer": "<the candidate\'s final answer, copied exactly>"}'
)


def judge_messages(question: str, answer: str, gold: str) -> list[dict[str, str]]:
    """The chat messages sent to the judge."""
    user = f"Question:\n{question or '(not given)'}\n\nReference answer:\n{gold}\n\nCandidate's final answer:\n{answer}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class JudgeReply:
    """A parsed judge reply.

    Attributes:
        verdict: ``correct`` or ``wrong``.
        reason: the judge's stated reason.
        final_answer: the answer the judge says it judged.
        raw: the reply text as received.
    """

    verdict: str
    reason: str
    final_answer: str
    raw: str = field(default="", compare=False)


class ReplyError(ValueError):
    """The judge's reply is not the JSON object it was asked for."""


_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.S | re.I)


def parse_reply(text: str) -> JudgeReply:
    """Parse a reply strictly: one JSON object (a code fence around it is tolerated), exactly the three keys.

    Raises:
        ReplyError: anything else, with what was wrong.
    """
    body = text.strip()
    if m := _FENCE.match(body):
        body = m.group(1).strip()
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        raise ReplyError(f"judge reply is not JSON ({e.msg}): {text[:120]!r}") from None
    if not isinstance(obj, dict):
        raise ReplyError(f"judge reply is JSON but not an object: {text[:120]!r}")
    keys = set(obj)
    if keys != {"verdict", "reason", "final_answer"}:
        raise ReplyError(f"judge reply has keys {sorted(keys)}; expected verdict, reason, final_answer")
    verdict = obj["verdict"]
    if not isinstance(verdict, str) or verdict.strip().lower() not in ("correct", "wrong"):
        raise ReplyError(f"judge verdict must be 'correct' or 'wrong', got {verdict!r}")
    if not isinstance(obj["reason"], str) or not isinstance(obj["final_answer"], str | int | float):
        raise ReplyError("judge reason must be a string and final_answer a string or number")
    return JudgeReply(verdict.strip().lower(), obj["reason"].strip(), str(obj["final_answer"]).strip(), raw=text)


_NEG = r"(?:not|n't|never|no longer|fails? to|does not|doesn't|isn't|is not)"
_SAYS_WRONG = re.compile(
    rf"\b(?:incorrect|wrong|mismatch(?:es)?|differs?|different|unequal|not (?:equal|equivalent|correct|the same)|"
    rf"{_NEG} (?:match|agree|equal|correspond))\b",
    re.I,
)
_SAYS_RIGHT = re.compile(
    r"\b(?:is correct|are correct|correct answer|matches|match(?:es)? the reference|"
    r"equivalent|equals|is equal|the same as|agrees?|identical)\b",
    re.I,
)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|may be|not sure|unsure|uncertain|unclear|hard to (?:say|tell)|"
    r"can(?:not|'t) (?:tell|determine|be sure)|arguably|on the other hand|however|although|though|"
    r"i think|i guess|seems?|appears? to|either)\b",
    re.I,
)
_LAST_PART = re.compile(
    r"\b(?:last|final|trailing|ending|end(?:s|ing)? (?:in|with))\s+(?:digit|character|char|"
    r"token|letter|number|symbol|part)s?\b|\bends? (?:in|with)\b",
    re.I,
)


def _norm(s: str) -> str:
    s = s.strip().strip("$").replace("\\boxed", "")
    s = re.sub(r"\\(?:left|right|,|;|!|\s)", "", s)
    s = re.sub(r"[\s{}]", "", s).lower().rstrip(".")
    return s


def _same_answer(a: str, b: str) -> bool:
    if _norm(a) == _norm(b):
        return True
    try:  # numerically or symbolically equal spellings (0.5 vs 1/2) are the same answer
        return verify_math(f"\\boxed{{{a}}}", b, strict=True, timeout=2).correct
    except Exception:
        return False


def check_reply(reply: JudgeReply, extracted: str) -> list[str]:
    """The rule checks a reply fails (empty: it may count). See the module docstring."""
    problems = []
    reason = reply.reason
    if len(reason.split()) < 3:
        problems.append("empty_reason: the reason is missing or too short")
    says_wrong, says_right = bool(_SAYS_WRONG.search(reason)), bool(_SAYS_RIGHT.search(reason))
    if reply.verdict == "correct" and says_wrong:
        problems.append("contradiction: verdict correct, reason says wrong")
    elif reply.verdict == "wrong" and says_right and not says_wrong:
        problems.append("contradiction: verdict wrong, reason says correct")
    if m := _HEDGE.search(reason):
        problems.append(f"hedging: the reason says {m.group(0)!r}")
    if extracted and not _same_answer(reply.final_answer, extracted):
        problems.append(
            f"final_answer: the judge judged {reply.final_answer[:60]!r}, the extracted answer is {extracted[:60]!r}"
        )
    if _last_part_only(reason, extracted):
        problems.append("last_token: the reason argues from the answer's last token or character only")
    return problems


def _last_part_only(reason: str, answer: str) -> bool:
    """The reason points at the answer's ending instead of the whole answer."""
    if _LAST_PART.search(reason):
        return True
    answer = answer.strip()
    tokens = answer.split()
    if len(_norm(answer)) < 2:
        return False
    whole = _norm(answer) in _norm(reason)
    last = tokens[-1] if len(tokens) > 1 else answer[-1]
    return not whole and re.search(rf"(?<![\w.]){re.escape(last)}(?![\w.])", reason) is not None
