"""Multiple choice (GPQA, MMLU(-Pro), AQuA, MedQA): is the model's final choice the gold option?

The gold is one option letter A-J (bare, ``(B)``, ``B.``), or an option's text when the options
are known (a ``options``/``choices`` column, or the prompt's ``A) ...`` lines): then the letter that
names that option is the answer. The model's final choice is read from the usual places, the
last one winning: answer tags, boxes in their LaTeX dressings (``\\boxed{\\text{(C)}}``),
"the answer is ...", "Answer: ...", and the sentences models write to name or endorse one option
("the correct option is B", "I choose (D)", "C is correct"), with or without the option's text
after the letter; the letter case-insensitively where it cannot be an article ("(b)", "b)").

Unequal, never a match by luck: several letters ("A or C", "A and B", every option listed), a
negation ("the answer is not A"), and a choice that is retracted after it was made ("B. Wait, no,
B is wrong"). No choice at all is ``no_answer`` (a format death).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.errors import VerifierTimeout
from rlvr.types import Method, Status, Verdict
from rlvr.verify.math.compare import compare
from rlvr.verify.math.extract import MAX_SCAN_CHARS, find_boxes, strip_reasoning, unfinished_answer
from rlvr.verify.model_text import answer_text
from rlvr.verify.timeout import time_limit

LETTERS = "ABCDEFGHIJ"
_GOLD = re.compile(r"^\s*(?:\(\s*([A-Ja-j])\s*\)|([A-J])\s*[.):]?|option\s+([A-Ja-j]))\s*$", re.IGNORECASE)
_DRESS = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|textrm|mathit|bf)\s*\{([^{}]*)\}")
# a letter standing for an option: uppercase, or lowercase when it cannot be an article
_UPPER = r"\(?\s*([A-J])\s*\)?(?![A-Za-z0-9])"
_LOWER = r"(?:\(\s*([a-j])\s*\)|([a-j])\)|([a-j])(?=\s*(?:[.,;!]\s*$|[.,;!]?\s*\n|$)))"
_LETTER = rf"(?:{_UPPER}|{_LOWER})"
_OPT = r"(?:option|choice|letter)?\s*:?\s*"
# statements that name the final choice; the letter is the (first) group that matched
_STATEMENTS = [
    re.compile(p, flags)
    for p, flags in (
        (
            rf"(?:final\s+|correct\s+|best\s+)?answer\s*(?:is|would\s+be|must\s+be|:|=)\s*{_OPT}(?=(?P<x>.{{0,80}}))",
            re.IGNORECASE,
        ),
        (
            r"(?:the\s+|my\s+)?(?:correct|right|best|final)\s+(?:option|choice|answer|letter|selection|pick)"
            r"\s*(?:\bis\b|\bwould\s+be\b|\bmust\s+be\b|:)\s*(?=(?P<x>.{0,80}))",
            re.IGNORECASE,
        ),
        # "the only consistent one is (A)", "the one that fits is C": a choice singled out
        (
            rf"\b(?:the\s+)?(?:only|one)\s+(?:[a-z]+\s+){{0,3}}(?:one|option|choice|answer)\s+(?:that\s+[a-z]+\s+)?"
            rf"(?:is|remains)\s+{_OPT}(?=(?P<x>.{{0,80}}))",
            re.IGNORECASE,
        ),
        # "corresponds to choice (b)", "which matches option C": the work pointing at one option
        (
            r"\b(?:corresponds|corresponding|matches|matching|points|leads|agrees)\s+(?:(?:to|with)\s+)?"
            r"(?:the\s+)?(?:option|choice|answer)\s+(?=(?P<x>.{0,80}))",
            re.IGNORECASE,
        ),
        (
            rf"\bI(?:\s+would|'d|\s+will|'ll)?\s+(?:choose|pick|select|go\s+with)\s+{_OPT}(?=(?P<x>.{{0,80}}))",
            re.IGNORECASE,
        ),
        (rf"\b(?:it\s+is|it's|it\s+must\s+be|it\s+should\s+be|so\s+it's)\s+{_OPT}(?=(?P<x>.{{0,80}}))", re.IGNORECASE),
        (
            rf"\b(?:option|choice)\s+(?P<x>{_LETTER})\s+(?:is|seems|appears)\s+(?:to\s+be\s+)?(?:the\s+)?"
            rf"(?:correct|right|best|answer)",
            re.IGNORECASE,
        ),
        # the answer named in the languages models answer in: "la respuesta correcta es la B", "die richtige
        # Antwort ist C", "la bonne réponse est D", "a resposta correta é a alternativa E", "правильный ответ: B"
        (
            r"(?:(?:bonne|richtige|korrekte|правильный|正确)\s*)?(?:respuesta|Antwort|réponse|resposta|risposta|ответ|答案)"
            r"\s*(?:correcta|correcte|correta|corretta|richtige|final|finale|правильный)?\s*"
            r"(?:est\b|es\b|ist\b|lautet\b|é|è|:|：|—|是|为|-)\s*(?:(?:la|le|a|die)\s+|l')?"
            r"(?:opción|alternativa|option|opção|opzione|Option|вариант|选项)?\s*(?=(?P<x>.{0,80}))",
            re.IGNORECASE,
        ),
        # "C is correct": an uppercase letter only ("a is correct" is prose)
        (
            rf"(?<![A-Za-z])(?P<x>{_UPPER})\s+is\s+(?:the\s+)?(?:correct|right|best)(?:\s+(?:answer|option|choice))?\b",
            0,
        ),
    )
]
_NEGATED = re.compile(r"^\s*(?:not|never|isn't|is\s+not)\b", re.IGNORECASE)
_EXCLUDED = re.compile(rf"(?:\bnot|\brather\s+than|\binstead\s+of|\bbut\s+not)\s+{_OPT}{_LETTER}", re.IGNORECASE)
_SEVERAL = re.compile(rf"^{_LETTER}\s*(?:,|/|&|\band\b|\bor\b|\+)\s*{_OPT}{_LETTER}", re.IGNORECASE)
_RETRACT = (
    r"\b(?:wait|no|actually|hmm)\b[^.\n]{{0,40}}\b(?:not|isn't|wrong|incorrect)\b",
    r"(?<![A-Za-z]){L}\s+is\s+(?:wrong|incorrect|not\s+(?:correct|right|the\s+answer))",
    r"\bnot\s+(?:option\s+)?\(?{L}\)?(?![A-Za-z])",
    r"\bscratch\s+that\b",
)
_ANOTHER = re.compile(r"(?<![A-Za-z])\(?[A-J][).:](?:\s|$)")
_OPTION_LINE = re.compile(r"(?:^|\n|\s)\(?([A-J])[).:]\s*(.+?)(?=\s+\(?[A-J][).:]\s|\n|$)")


@dataclass(frozen=True)
class Choice:
    """What the model chose: ``letter`` (None when none or several), and why."""

    letter: str | None
    rule: str
    why: str = ""
    text: str = ""


def gold_letter(gold: str) -> str | None:
    """The option letter a gold names (``"B"``, ``"(b)"``, ``"B."``, ``"option B"``), or None."""
    m = _GOLD.match(gold) if isinstance(gold, str) and len(gold) < 20 else None
    return next(g for g in m.groups() if g).upper() if m else None


def parse_options(source: Any) -> dict[str, str]:
    """Options by letter from a list (``["5", "6"]`` is A, B), a mapping, or text with ``A) ...``
    lines (a prompt); empty when none can be read."""
    if isinstance(source, Mapping):
        return {str(k).strip("() ").upper(): str(v) for k, v in source.items() if gold_letter(str(k))}
    if isinstance(source, Sequence) and not isinstance(source, str):
        return {LETTERS[i]: str(v) for i, v in enumerate(list(source)[: len(LETTERS)])}
    if not isinstance(source, str) or not source.strip():
        return {}
    if source.lstrip().startswith(("[", "{")):
        try:
            return parse_options(json.loads(source))
        except ValueError:
            pass
    found: dict[str, str] = {}
    for m in _OPTION_LINE.finditer(source):
        found.setdefault(m.group(1), m.group(2).strip())
    # only a run of options from A counts (an "I." or "A:" in prose does not make a list)
    keep = {}
    for letter in LETTERS:
        if letter not in found:
            break
        keep[letter] = found[letter]
    return keep if len(keep) >= 2 else {}


def _undress(s: str) -> str:
    for _ in range(3):
        s2 = _DRESS.sub(lambda m: m.group(1), s)
        if s2 == s:
            break
        s = s2
    return s.replace("$", " ").replace("**", " ").strip()


def _letter(m: re.Match[str]) -> str | None:
    groups = [g for g in m.groups() if g is not None and len(g) == 1 and g.upper() in LETTERS]
    return groups[0].upper() if groups else None


def _content(content: str, rule: str, options: Mapping[str, str]) -> Choice | None:
    """The choice inside an answer span (a box, a tag, the words after "the answer is")."""
    s = _undress(content).strip(" .*:。：")
    if not s:
        return None
    if _NEGATED.match(s):
        return Choice(None, rule, "the choice is negated", s)
    s = _EXCLUDED.sub(" ", s).strip(" ,.;")
    if _SEVERAL.match(s):
        return Choice(None, rule, "several options are chosen", s)
    m = re.match(rf"{_LETTER}(?:\s*[.):,;\-。，；：、）]\s*|\s+|$)", s)
    if m and (letter := _letter(m)):
        rest = s[m.end() :].strip()
        if _ANOTHER.search(rest):  # "A) 5 B) 6 C) 7": every option listed
            return Choice(None, rule, "several options are listed", s)
        return Choice(letter, rule, text=rest)
    for letter, text in options.items():  # the option's text instead of its letter
        if _same_text(s, text):
            return Choice(letter, rule, text=s)
    return None


def _same_text(a: str, b: str) -> bool:
    norm = lambda x: re.sub(r"\s+", " ", _undress(x)).strip(" .").lower()  # noqa: E731
    if norm(a) == norm(b):
        return True
    try:  # the two option texts as maths answers (a bounded check: a pathological text is unequal)
        with time_limit(2):
            return compare(a, b, strict=True, unevaluated_rule="always").correct  # an option is a value
    except (VerifierTimeout, Exception):  # as verify_math would say: timeout or error, so not the same
        return False


def final_choice(completion: str, options: Mapping[str, str] | None = None) -> Choice:
    """The model's final choice (see the module docstring)."""
    options = options or {}
    text = answer_text(completion)[-MAX_SCAN_CHARS:]
    if (why := unfinished_answer(text)) is not None:
        return Choice(None, "unfinished", why)
    body = strip_reasoning(text)
    if body is None:
        return Choice(None, "none", "the reasoning never closed")
    found: list[tuple[int, int, Choice]] = []  # (position, end, choice)
    for m in re.finditer(r"<answer\s*>(.*?)</answer\s*>", body, re.DOTALL | re.IGNORECASE):
        if (c := _content(m.group(1), "answer_tag", options)) is not None:
            found.append((m.start(), m.end(), c))
    for start, end, inner in find_boxes(body):
        if (c := _content(inner, "boxed", options)) is not None:
            found.append((start, end, c))
    for pat in _STATEMENTS:
        for m in pat.finditer(body):
            span = m.group("x")
            sentence = re.split(r"(?<=[.!?])\s|\n", span, maxsplit=1)[0]
            if (c := _content(sentence, "statement", options)) is not None:
                found.append((m.start(), m.start("x") + len(sentence), c))
    if not found:  # the whole output may be the choice: "B", "(C)", "D) 12"
        bare = _content(body, "bare", options) if len(body.strip()) <= 40 else None
        dressed = bare is not None and re.match(r"\s*\(?[A-Ja-j]\s*(?:$|[).:])", _undress(body))
        named = bare is not None and bare.letter is not None and _same_text(bare.text, options.get(bare.letter, "\0"))
        if bare is None or not (bare.letter is None or dressed or named):
            return Choice(None, "none", "no option was chosen")
        found.append((0, len(body) - len(bare.text), bare))
    found.sort(key=lambda f: (f[0], f[1]))
    _, end, choice = found[-1]
    if choice.letter is not None and _retracted(body[end:], choice.letter):
        return Choice(None, choice.rule, f"the choice {choice.letter} is retracted after it was made", choice.text)
    return choice


def _retracted(after: str, letter: str) -> bool:
    return any(re.search(p.format(L=letter), after, re.IGNORECASE if "{L}" not in p else 0) for p in _RETRACT)


def _gold_spec(gold: Any) -> tuple[str, Any, str]:
    """``(answer, options source, prompt)`` from a plain gold or ``{"answer", "options", "prompt"}``."""
    if isinstance(gold, str) and gold.lstrip().startswith("{"):
        try:
            gold = json.loads(gold)
        except ValueError:
            pass
    if isinstance(gold, Mapping):
        answer = gold.get("answer", gold.get("gold", gold.get("target")))
        return (
            str(answer if answer is not None else ""),
            gold.get("options") or gold.get("choices"),
            str(gold.get("prompt") or ""),
        )
    return str(gold), None, ""


def verify_mcq(completion: str, gold: Any, *, options: Any = None, prompt: str | None = None, **_: Any) -> Verdict:
    """Verify a multiple-choice answer.

    Args:
        completion: the model's output.
        gold: an option letter, an option's text (with options known), or
            ``{"answer": ..., "options": [...] | {...}, "prompt": ...}``.
        options: the options (a list for A, B, ...; a mapping; or text with ``A) ...`` lines).
        prompt: the question, to read the options from when none are given.

    Examples:
        >>> verify_mcq("Let me think. The correct option is (B).", "B").status.value
        'correct'
        >>> verify_mcq("It is A or B.", "B").status.value
        'wrong'
    """
    answer, spec_options, spec_prompt = _gold_spec(gold)
    opts = parse_options(options if options is not None else spec_options) or parse_options(prompt or spec_prompt)
    want = gold_letter(answer)
    if want is None and opts:
        want = next((k for k, v in opts.items() if _same_text(answer, v)), None)
    if want is None:
        why = "the gold names no option" + ("" if opts else " (and no options are known to map its text)")
        return Verdict(Status.BAD_GOLD, method=Method.STRING, reason=f"{why}: {answer[:60]!r}", gold=answer)
    choice = final_choice(completion, opts)
    details = {"rule": choice.rule, "gold_letter": want, "choice": choice.letter, "options": len(opts)}
    if choice.letter is None and choice.rule in ("none", "unfinished"):
        return Verdict(Status.NO_ANSWER, method=Method.STRING, reason=choice.why, gold=want, details=details)
    if choice.letter is None:
        return Verdict(Status.WRONG, choice.text[:80], Method.STRING, choice.why, want, details)
    if choice.letter == want:
        return Verdict(Status.CORRECT, choice.letter, Method.STRING, f"chose {want}", want, details)
    return Verdict(
        Status.WRONG, choice.letter, Method.STRING, f"chose {choice.letter}, the gold is {want}", want, details
    )
