"""Find the answer span in a model output.

Candidates come in priority order; the verifier takes the first that parses:

1. the last complete ``<answer>...</answer>`` (text inside ``<think>`` never counts; a sentence
   inside the tag is read with the rules below, "The answer is 12 apples." gives 12);
2. the last ``\\boxed{...}`` / ``\\fbox{...}`` (nested braces, ``\\boxed 5``), joined with
   the boxes before it in the same final sentence ("\\boxed{1} and \\boxed{2}");
3. "the (final) answer is ..." / "Final Answer: ..." (wins over numbers after it);
4. GSM8K's ``#### n``;
5. a solution list stated in the last sentence ("so x = 2 or x = 3");
6. the whole text, when it is a bare answer rather than prose;
7. the last math span (``$..$``, ``$$..$$``, ``\\(..\\)``, ``\\[..\\]``, and LaTeX written
   outside delimiters, ``\\frac{63}{400}``, whose numbers are never read on their own);
8. the last number, mixed numbers included ("2 1/2 cups"), or the phrase it closes (a quantity in
   two units, a chance, a ratio, a range); switched off by ``strict``.

Before the fallbacks (5-8), a check or an aside after the answer is cut off (:func:`before_check`),
and a text answer stated last ("so the equation has no solution") is taken
(:func:`text_answer_candidate`).

An *unfinished* final answer (an unclosed last ``\\boxed{`` or ``<answer>``) is no answer at
all (:func:`unfinished_answer`): the model never finished it, and no fallback reads through it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass

from rlvr.verify.math.forms import DMS_WORDS
from rlvr.verify.math.quantities import COMPOUND, compound_quantity
from rlvr.verify.math.text_answers import PHRASE, is_text_answer
from rlvr.verify.math.words import parse_number_words
from rlvr.verify.model_text import ANSWER_IS, answer_pattern

#: Completions longer than this are cut to their tail: answers sit at the end, and a
#: megabyte of text must not cost a megabyte of regex work.
MAX_SCAN_CHARS = 20_000


@dataclass(frozen=True)
class Candidate:
    """One possible answer span.

    Attributes:
        rule: which extraction rule produced it (``answer_tag``, ``boxed``...).
        parts: the answer pieces; several only when several boxes form a list.
    """

    rule: str
    parts: tuple[str, ...]

    @property
    def text(self) -> str:
        """The parts joined as one list-shaped answer string."""
        return ", ".join(self.parts)


_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"^\s*<think\s*>", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"<answer\s*>(.*?)</answer\s*>", re.DOTALL | re.IGNORECASE)
_BOX_START = re.compile(r"\\(?:boxed|fbox)\b")


def strip_reasoning(text: str) -> str | None:
    """Drop the ``<think>`` part. None when the reasoning never closed (no answer part)."""
    parts = _THINK_CLOSE.split(text)
    if len(parts) > 1:
        return parts[-1]
    if _THINK_OPEN.match(text):
        return None
    return text


_ANSWER_OPEN = re.compile(r"<answer\s*>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"</answer\s*>", re.IGNORECASE)


def unfinished_answer(text: str) -> str | None:
    """Why the completion's final answer is unfinished, or None when it is not.

    Unfinished: the last ``<answer>`` has no closing tag begun after it (``</``: a misspelt
    ``</answe:`` still ends the answer's content, which is what matters here; the format reward
    judges the tag), or the last ``\\boxed{`` never closes its brace. Reasoning inside ``<think>``
    does not count.

    Examples:
        >>> unfinished_answer(r"so it is \\boxed{42")
        'the final \\\\boxed{ was never closed (an unfinished answer)'
        >>> unfinished_answer(r"\\boxed{42}") is None
        True
    """
    if len(text) > MAX_SCAN_CHARS:
        text = text[-MAX_SCAN_CHARS:]
    body = strip_reasoning(text)
    if body is None:
        return None
    opens = [m.end() for m in _ANSWER_OPEN.finditer(body)]
    if opens and not _ANSWER_CLOSE.search(body, opens[-1]) and "</" not in body[opens[-1] :]:
        return "the final <answer> was never closed (an unfinished answer)"
    starts = list(_BOX_START.finditer(body))
    if starts:
        last = starts[-1]
        rest = body[last.end() :].lstrip(" \t")
        if rest.startswith("{") and not _closes(rest):
            return "the final \\boxed{ was never closed (an unfinished answer)"
    return None


def _closing_brace(s: str, i: int = 0) -> int | None:
    """Where the brace group opening at ``s[i]`` closes (escaped ``\\{ \\}`` skipped), or None."""
    depth, j, n = 0, i, len(s)
    while j < n:
        c = s[j]
        if c == "\\" and j + 1 < n:
            j += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return None


def _closes(s: str) -> bool:
    """Does the brace group opening ``s`` close?"""
    return _closing_brace(s) is not None


def find_boxes(text: str) -> list[tuple[int, int, str]]:
    """All ``\\boxed``/``\\fbox`` spans as (start, end, content), scanning without recursion."""
    out = []
    for m in _BOX_START.finditer(text):
        i = m.end()
        n = len(text)
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] == "{":
            j = _closing_brace(text, i)
            if j is not None:
                out.append((m.start(), j + 1, text[i + 1 : j]))
        elif m.end() < i < n:  # "\boxed 5": one token after whitespace
            tok = re.match(r"[-+]?[\w.]+", text[i:])
            if tok:
                out.append((m.start(), i + tok.end(), tok.group(0)))
    return out


# What may stand between two boxes that form one list: punctuation, math delimiters,
# spacing commands and a few connecting words ("and", "or", "for part (a) and").
_BETWEEN_NOISE = re.compile(
    r"\\text(?:bf|rm|normal)?\s*\{([^{}]*)\}|\\[()\[\]]|\\q?quad|\\[,;:! ]|\$|[\s,;.&*]|\\\\"
    r"|(?:(?<=\s)|^)(?:[Pp]art\s*)?\(?(?:[a-h]|i{1,3}|iv)\)\s*:?"  # a part's label: "(a) \boxed{3} (b) \boxed{5}"
)
_CONNECTORS = {"and", "or"}


def _joins(between: str) -> bool:
    if "\n\n" in between or len(between) > 80:
        return False
    rest = _BETWEEN_NOISE.sub(lambda m: f" {m.group(1) or ''} ", between)
    words = [w for w in rest.split() if any(c.isalpha() for c in w)]
    if not words:  # only symbols between the boxes ("\boxed{1}, \boxed{2}", "++")
        return True
    return len(words) <= 5 and any(w.lower() in _CONNECTORS for w in words)


def boxed_candidate(text: str, boxes: list[tuple[int, int, str]] | None = None) -> Candidate | None:
    """The last box, with the boxes before it that belong to the same final list (``boxes``: the
    text's :func:`find_boxes`, when the caller has them already)."""
    boxes = [b for b in (find_boxes(text) if boxes is None else boxes) if b[2].strip()]
    if not boxes:
        return None
    group = [boxes[-1]]
    for prev in reversed(boxes[:-1]):
        if prev[1] <= group[0][0] and _joins(text[prev[1] : group[0][0]]):
            group.insert(0, prev)
        else:
            break
    return Candidate("boxed", tuple(b[2].strip() for b in group))


_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\(([^\n]+?)\\\)|(?<![\\$])\$((?:\\\$|[^$\n])+?)\$", re.DOTALL)


def _leading_math(s: str) -> str | None:
    m = _MATH_SPAN.match(s)
    if m:
        return next(g for g in m.groups() if g is not None)
    return None


#: Quotation marks around a value given for emphasis (``The answer is "12".``, «12», “12”, 「12」), and inline code.
_EMPHASIS = {'"': '"', "“": "”", "«": "»", "„": "“", "「": "」", "『": "』", "‘": "’", "'": "'", "`": "`"}


def _unquote(span: str) -> str:
    """``span`` without the quotation marks around it, when one pair encloses it whole (the value
    is emphasised, not mentioned: a quotation holding an answer phrase is gone before this)."""
    while len(span) > 2 and _EMPHASIS.get(span[0]) == span[-1] and span[-1] not in span[1:-1]:
        span = span[1:-1].strip().strip("\\").strip()  # an escaped quotation: \"12\"
    if span[:1] == '"' and '"' not in span[1:]:  # 'The answer is "12' cut at the sentence's end
        span = span[1:].strip()
    return span.rstrip('"').strip() if span.count('"') == 1 and span.endswith('"') else span


_CLAUSE_BREAK = re.compile(r",\s+|，\s*")
# what starts a clause after the value: a word of prose (not a list's next item, "and 7", "y = 4")
_CLAUSE_WORD = re.compile(r"(?!(?:and|or|und|oder|y|et|o|ou|и|или)\b)[^\W\d_]{2,}\b(?!\s*[=<>])", re.IGNORECASE)
_CJK_CLAUSE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def _main_clause(span: str) -> str:
    """The value before a clause that explains it: "15, since 3 cases remain" is 15, not 3 (a list,
    "3, 5, 7", or a system, "x = 3, y = 4", stays whole)."""
    if is_bare_answer(span):
        return span
    for m in _CLAUSE_BREAK.finditer(span):  # the first break outside brackets: "(3, 4), as computed"
        head = span[: m.start()]
        if sum(head.count(c) for c in "([{") == sum(head.count(c) for c in ")]}"):
            break
    else:
        return span
    if not re.search(r"\d", head) or not is_bare_answer(head.strip()):
        return span
    rest = span[m.end() :]
    return head.strip() if _CLAUSE_WORD.match(rest) or _CJK_CLAUSE.match(rest) else span


_COPULA = re.compile(r"\s*(?:です|でした|である|だ|になります|となります|となる|になる)$")
_GOES_ON = re.compile(r"(\d\.\d+)\.\.\.")
# "the answer" as the object of a check ("We can check our answer: if n = 7, ..."): no statement of it
_CHECKED = re.compile(
    r"\b(?:check|verify|confirm|test|double-check|recheck)(?:s|ed|ing)?\s+(?:(?:our|the|my|this|that|your)\s+)?(?:final\s+)?$",
    re.IGNORECASE,
)
# a sentence's end after a value in words: a full stop, or "!" / "?" before the next sentence
# ("The answer is yes! To form such...": a factorial, "5! = 120", goes on)
_SENTENCE = re.compile(r"(.*?)(?:\.\s|\.$|[。！？；]|[!?](?=\s+[A-Z¿¡])|[!?]$|\?(?=\s)|\n|$)", re.DOTALL)


_STRAY_LEADING = re.compile(r"^(?:\\(?![a-zA-Z{}|,;!])\s*)+")


def _stray_backslashes(span: str) -> str:
    """``span`` without a backslash that ends it (a LaTeX line break, ``12\\\\``) or that starts it
    and begins no command (an escaped quotation, ``\\"12\\"``): ``\\langle 1, 2 \\rangle`` and
    ``\\frac{x^3}{3} + C``, LaTeX written without math delimiters, keep theirs."""
    return _STRAY_LEADING.sub("", span.rstrip("\\").strip())


def _weak(marker: str) -> bool:
    """An answer marker with no verb or colon ("the answer $x$", "ответ 12"): it names an answer, it need
    not state one."""
    return marker.rstrip().lower().endswith(("answer", "ответ"))


def answer_is_candidate(text: str, after: int = 0) -> Candidate | None:
    """Text after the last "the answer is" / "Final Answer:", up to the sentence's end.

    Only markers that start at or after ``after`` count (a box written later wins).
    """
    if (pattern := answer_pattern(text)) is None:  # the scan is 40x a casefold
        return None
    last = None
    for m in pattern.finditer(text):
        # after a box only a statement of the answer supersedes it: not "the answer" checked, nor the
        # answer named without "is" or a colon ("a calculator gives the answer $33.98$ for the cost")
        if _CHECKED.search(text, max(0, m.start() - 40), m.start()) or (after and _weak(m.group())):
            continue
        last = m
    if last is None or last.start() < after:
        return None
    rest = text[last.end() :].lstrip()
    # "Final Answer: The final answer is X": take the inner phrase.
    inner = ANSWER_IS.search(rest[:200])
    if inner:
        rest = rest[inner.end() :].lstrip()
    math = _leading_math(rest)
    if math is not None:
        return Candidate("answer_is", (math.strip(),))
    rest = _GOES_ON.sub("\\1…", rest)  # "0.333...": an ellipsis, not the sentence's end
    sentence = _SENTENCE.match(rest)
    if after and sentence and rest[sentence.end(1) : sentence.end(1) + 1] in ("?", "？"):
        return None  # a question after the box ("Is it a coincidence that the answer is 24?") claims nothing
    span = _stray_backslashes((sentence.group(1) if sentence else rest).strip())
    if span[-1:] in "すだるりま":  # Japanese copula after the value: "答えは十二です"
        span = _COPULA.sub("", span)
    span = _unquote(span)
    head, paren, aside = span.partition(" (")
    head = head.strip(" ,;:")
    # "12 cm (the side is 3 cm, ...)": an aside in words; "(-oo, 2) U (3, oo)" is the answer whole
    if paren and re.search(r"\d", head) and is_bare_answer(head) and not is_bare_answer("(" + aside):
        span = head
    span = _main_clause(span)
    # "The largest $n$ is 34": the value comes after the last " is " (not inside a parenthetical)
    if " is " in span and not is_bare_answer(span):
        span = _main_clause(span.rsplit(" is ", 1)[1])
    span = re.sub(r"\*\*(.+?)\*\*", r"\1", span)  # markdown bold
    span = re.sub(r"^(.+?)\s+\((?:since|because|as|from|i\.e\.|which)\b.*\)$", r"\1", span)  # "14 (since ...)"
    span = _CURRENCY_CODE.sub("", span.strip(" .*"))
    if not span or len(span) > 300:
        return None
    if not is_bare_answer(span):  # "Jane started growing Sphere 3 hours ago"
        tail = tail_value(span)
        if tail is None:
            return None
        span = tail
    return Candidate("answer_is", (span,))


# a currency written before an amount ("R$ 2.990,00", "US$ 5", "€12"): not part of the answer
_CURRENCY_CODE = re.compile(r"^(?:R\$|US\$|A\$|C\$|HK\$|\$|€|£|¥|₹|₽|CHF|EUR|USD|GBP)\s*(?=[\d.,]+$)")

_ASSIGNMENT = r"([a-zA-Z])\s*=\s*([-+]?(?:\\frac\{[^{}]*\}\{[^{}]*\}|\\sqrt\{[^{}]*\}|[\w.^/\\{}]+))"
_SOLUTIONS = re.compile(_ASSIGNMENT + r"(?:\s*(?:,\s*)?(?:or|and|,)\s*" + _ASSIGNMENT + r")+")
_PAIR = re.compile(_ASSIGNMENT)


def solutions_candidate(text: str) -> Candidate | None:
    """A solution list stated in the last sentence: "so x = 2 or x = 3" (one name, two or more values)."""
    tail = _DELIM_NOISE.sub(" ", text[-400:])
    last = None
    for m in _SOLUTIONS.finditer(tail):
        last = m
    if last is None or (tail[last.end() :].strip(" .!\n") and re.search(r"\d", tail[last.end() :])):
        return None  # values written after it: the list is not the final statement
    pairs = _PAIR.findall(last.group(0))
    if len({name for name, _ in pairs}) != 1 or len(pairs) < 2:
        return None
    return Candidate("solutions", tuple(f"{name} = {value}" for name, value in pairs))


_DELIM_NOISE = re.compile(r"\$|\\[()\[\]]")
_RELATION = r"[a-zA-Z]\s*(?:<=|>=|<|>|\\[lg]eq?(?![a-zA-Z]))\s*[-+]?(?:\\infty|[\w.]+)"
_RELATIONS = re.compile(_RELATION + r"(?:\s*,?\s*(?:or|\\text\{\s*or\s*\}|\\lor|\\vee)\s*" + _RELATION + r")+")


def relations_candidate(text: str) -> Candidate | None:
    """A solution set stated as inequalities joined by "or" in the last sentence ("so x < 0 or x > 5")."""
    tail = _DELIM_NOISE.sub(" ", text[-400:])
    last = None
    for m in _RELATIONS.finditer(tail):
        last = m
    if last is None or re.search(r"\d", tail[last.end() :]):
        return None
    names = set(re.findall(r"(?<![\\a-zA-Z])[a-zA-Z](?=\s*(?:<|>|\\[lg]e))", last.group(0)))
    return Candidate("solutions", (last.group(0).strip(),)) if len(names) == 1 else None


_TABLE_ANSWER = re.compile(
    r"^\s*\|?\s*(?:\*\*)?(?:final\s+answer|answer|result)(?:\*\*)?\s*\|\s*(?:\*\*)?([^|\n]+?)(?:\*\*)?\s*\|",
    re.IGNORECASE | re.MULTILINE,
)


def table_candidate(text: str) -> Candidate | None:
    """The value of a Markdown table row labelled "Final answer" (or "Answer"), wherever the row stands
    in the table: rows after it (checks, steps) do not override it."""
    rows = _TABLE_ANSWER.findall(text) if "|" in text else ()  # a row has its bars: most texts have none
    return Candidate("table", (rows[-1].strip(),)) if rows else None


_STATEMENT = re.compile(r"^[^.\n]{1,80}?\s(?:is|are|equals)\s+(.+?)[.\s]*$", re.DOTALL)


def statement_candidate(text: str) -> Candidate | None:
    """One sentence that states the value: "The interval is (-3, 5].", "The price is $4.50 per kg."."""
    m = _STATEMENT.match(text.strip())
    if m is None or "\n" in text.strip():
        return None
    value = m.group(1).strip()
    return Candidate("statement", (value,)) if re.search(r"\d", value) else None


def tail_value(text: str) -> str | None:
    """The last math span or the last number, whichever comes later in the text."""
    spans, nums = _spans_and_numbers(text)
    if nums and (not spans or nums[-1][0] > spans[-1][0]):
        return nums[-1][1]
    return spans[-1][1] if spans else None


# LaTeX written outside math delimiters: a command with brace arguments (``\frac{63}{400}``,
# ``3\sqrt{2}``, ``x^{2}``). Its numbers belong to it, never to the last-number rule.
_LATEX_ISLAND = re.compile(
    r"(?:[-+]?\d+(?:\.\d+)?\s*)?\\(?!(?:text|textbf|textit|mathrm|mbox|emph|boxed|fbox)\b)[a-zA-Z]+"
    r"(?:\[[^\]]{0,20}\])?(?:\s*\{(?:[^{}]|\{[^{}]*\})*\})+(?:\s*\^\s*\{[^{}]*\})?"
)


# a "$" before a digit, not after "\\" or "$" (checked by hand: a leading lookbehind makes the regex
# engine try every position, ten times slower than finding the "$"s)
_CURRENCY = re.compile(r"\$(?=\d)")
_CURRENCY_PROSE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}")


def mask_currency(text: str) -> str:
    """Blank the dollar signs that are prices, not maths delimiters (length kept).

    GSM8K prose ("costs $40 and is discounted by $6, so ... $34.") pairs two prices into one
    "math span"; a ``$`` before a number whose would-be span holds prose is a currency sign.

    Examples:
        >>> mask_currency("costs $40 and then $34.")
        'costs  40 and then  34.'
    """
    if "$" not in text:
        return text
    blank, pos = [], 0  # the prices' dollar signs; the text is rebuilt only when there is one
    for m in _CURRENCY.finditer(text):
        if m.start() < pos or (m.start() and text[m.start() - 1] in "\\$"):
            continue
        close = text.find("$", m.end())
        unclosed = close == -1 or text.find("\n", m.end(), close) != -1
        inside = "" if unclosed else text[m.end() : close]
        if unclosed or (_CURRENCY_PROSE.search(inside) and _CURRENCY_PROSE.search(_latex_free(inside))):
            blank.append(m.start())
            pos = m.end()
        else:  # a real span: kept, and skipped past
            pos = close + 1
    if not blank:
        return text
    out, pos = [], 0
    for at in blank:
        out.append(text[pos:at] + " ")
        pos = at + 1
    return "".join(out) + text[pos:]


# "2-3 hours", "about 2 - 3", "2 to 3", "2—3": a range of values, never one answer
_RANGE_HEAD = re.compile(r"([-+]?\d+(?:\.\d+)?)\s*(—|-|\bto\b)\s*$")
_APPROX = re.compile(
    r"\b(?:about|around|approximately|roughly|between|from|range|ranges|some|maybe)\s*$", re.IGNORECASE
)
RANGE_MARK = "—"  # how a range reads as a candidate: "2—3"


def _range(text: str, start: int, end: int) -> tuple[int, str] | None:
    """The range that the number at ``text[start:end]`` closes, as (its start, "a—b"), or None."""
    m = _RANGE_HEAD.search(text, max(0, start - 40), start)
    if m is None or m.end() != start:
        return None
    before, after = text[max(0, m.start() - 20) : m.start()], text[end : end + 30]
    if m.group(2) == "-" and not (_APPROX.search(before) or re.match(r"\s*[a-zA-Z]{2,}", after)):
        return None  # "5-3": arithmetic, unless prose says it is a range ("about 2-3", "2-3 hours")
    if re.search(r"[=+*/^]\s*$", before):
        return None
    return m.start(), f"{m.group(1)}{RANGE_MARK}{text[start:end].strip()}"


def _spans_and_numbers(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """Math spans as (end, content) and numbers outside them as (start, text); a number that
    closes a range comes as the range ("2—3")."""
    spans, starts, ends = [], [], []  # covered ranges, in text order (finditer yields them so)
    for m in _MATH_SPAN.finditer(text):
        g = next(x for x in m.groups() if x is not None).strip()
        starts.append(m.start())
        ends.append(m.end())
        if g:
            spans.append((m.end(), g))

    def covered(i: int) -> bool:
        k = bisect.bisect_right(starts, i) - 1
        return k >= 0 and i < ends[k]

    if "\\" in text:
        islands = [m for m in _LATEX_ISLAND.finditer(text) if not covered(m.start())]
        if islands:
            spans.extend((m.end(), m.group(0).strip()) for m in islands)
            spans.sort()
            ranges = sorted([*zip(starts, ends), *((m.start(), m.end()) for m in islands)])
            starts, ends = [a for a, _ in ranges], [b for _, b in ranges]
    nums = [(m.start(), m.group(0)) for m in _NUMBER.finditer(text) if not covered(m.start())]
    if nums:
        last = next(m for m in _NUMBER.finditer(text, nums[-1][0]))
        if (phrase := _number_phrase(text, last.start(), last.end())) is not None:
            nums = [n for n in nums if n[0] < phrase[0]] + [phrase]
    return spans, nums


_CHANCE_HEAD = re.compile(r"(?<![\d.])(\d+)\s+(out\s+of|in)\s+$", re.IGNORECASE)
_CHANCE_WORDS = re.compile(r"\b(?:probabilit|chance|odds|likel|risk)", re.IGNORECASE)
# a tuple or an interval of numbers in plain text that the last number closes: "(3, 4)", "(-1, 2.5, 0)",
# "[1, 4]", "(2, 5]", European "]2, 5[" and "[1; 4]", a named point "P(2, 5)" (not a call, "f(2, 5)")
_TUPLE_HEAD = re.compile(r"(?<![\w)\]])[A-Z]?[(\[\]]\s*(?:[-+]?\d+(?:\.\d+)?\s*[,;]\s*){1,7}[-+]?$")
_TUPLE_CLOSE = re.compile(r"\s*[)\]\[]")
_RATIO_WORD = re.compile(r"\b(?:ratio|odds)\b", re.IGNORECASE)


def _number_phrase(text: str, start: int, end: int) -> tuple[int, str] | None:
    """The phrase that the last number at ``text[start:end]`` closes, as (its start, the phrase as an
    answer span): a quantity in two units ("2 hours and 30 minutes"), a chance ("3 out of 8", "1 in 4"
    where the sentence speaks of chance), a ratio ("3 to 2" where it speaks of a ratio), a tuple ("(3, 4)"),
    a range."""
    window_start = max(0, start - 80)
    window = text[window_start : end + 16]
    if any(c.isalpha() for c in text[end : end + 16]):
        for q in COMPOUND.finditer(window):
            covers = q.start() + window_start <= start and q.end() + window_start > end
            if covers and compound_quantity(q.group(0)) is not None:
                return q.start() + window_start, q.group(0).strip()
    if "egree" in window and (a := DMS_WORDS.search(window)) is not None and a.end() + window_start >= end:
        return a.start() + window_start, a.group(0)  # "30 degrees 15 minutes"
    before = text[window_start:start]
    if (c := _CHANCE_HEAD.search(before)) is not None:  # the chance may be named after it: "a 1 in 6 chance"
        sentence = before[: c.start()].rsplit(".", 1)[-1] + text[end : end + 30].split(".", 1)[0]
        if c.group(2).lower() != "in" or _CHANCE_WORDS.search(sentence):
            return c.start() + window_start, f"{c.group(1)} out of {text[start:end]}"
    if (t := _TUPLE_HEAD.search(before)) is not None and (close := _TUPLE_CLOSE.match(text, end)) is not None:
        return t.start() + window_start, text[t.start() + window_start : close.end()]  # "the point is (3, 4)"
    r = _RANGE_HEAD.search(before)
    ratio = r is not None and r.end() == len(before) and r.group(2) == "to"
    if r is not None and ratio and _RATIO_WORD.search(before[: r.start()].rsplit(".", 1)[-1]):
        return r.start() + window_start, f"{r.group(1)}:{text[start:end]}"
    return _range(text, start, end)


# a number said right after it not to be the answer ("The total is 15, since 14 is not possible."): the
# last-number fallback reads the number before it (the commitment rules refuse a lone one anyway)
_RULED_OUT_AFTER = re.compile(
    r"\s*(?:is|was|would\s+be)\s+(?:not\s+(?:possible|allowed|valid|an\s+option|the\s+answer|correct|right)|impossible|"
    r"ruled\s+out|excluded|rejected|wrong|incorrect)\b|\s*(?:fails|doesn't\s+work|does\s+not\s+work)\b",
    re.IGNORECASE,
)


def _given_last(text: str, nums: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``nums`` with the numbers at its end that are ruled out right after them dropped (all kept
    when every one is)."""
    keep = len(nums)
    while keep > 1:
        at, num = nums[keep - 1]
        if not _RULED_OUT_AFTER.match(text, at + len(num), at + len(num) + 40):
            break
        keep -= 1
    return nums[:keep] if keep < len(nums) else nums


_GSM8K = re.compile(r"####\s*([^\n]+)")
# A number not glued to letters before it ("AZYUK2A" holds no answer); thousands groups,
# decimals, a decimal comma ("2,74"), fractions and a trailing percent sign.
_NUMBER = re.compile(
    r"(?<![A-Za-z\d])(?:[-+]?\d+ \d+/\d+(?![\d/])"  # a mixed number: "2 1/2"
    r"|\d+(?::\d+)+(?![\d:])|\d+(?: : \d+)+(?![\d:])"  # a ratio (or a time): "3:4", "9:30", "10 : 4"
    r"|[-+]?\d+\.\d+(?:\.\.\.|…)(?!\.)"  # a decimal that goes on: "0.333..."
    r"|[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+,\d{1,2}(?![\d,])|\d+)(?:\.\d+)?(?:[eE][-+]?\d+(?![\w.]))?(?:/\d+)?"
    r"|[-+]?\.\d+)"
    r"(?:\s?\\?%)?"
)
# a word of prose: two Latin letters, or a run of letters of a script maths is not written in
# ("所以答案是", "ответ": CJK, kana, hangul, Cyrillic, Arabic, Hebrew, Devanagari, Thai)
_PROSE_WORD = re.compile(
    r"(?<![\\a-zA-Z])[a-zA-Z]{2,}|[\u0400-\u04ff\u0590-\u06ff\u0900-\u097f\u0e00-\u0e7f"
    r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+"
)
#: The longest answer :func:`is_bare_answer` takes as written on its own.
BARE_MAX_CHARS = 300
_BARE_OK_WORDS = {"and", "or", "percent", "pct", "percentage", "the"}
# maths written as plain text ("2 +/- sqrt(3)", "(-oo, 0) U (1, oo)", "x = 3 mod 7"): not prose
_MATHS_WORDS = {"sqrt", "oo", "inf", "infinity", "mod", "complex", "cis", "pi", "sin", "cos", "tan", "log", "ln", "exp"}
_MATHS_WORDS |= {"part", "ii", "iii", "iv"}  # the labels of a multi-part answer: "(ii) 12"


# words after a number that judge it rather than measure it ("12 fails", "12 works", "12 maybe")
_NEVER_UNITS = {"fails", "fail", "failed", "works", "worked", "holds", "wrong", "incorrect", "right", "correct"}
_NEVER_UNITS |= {"valid", "invalid", "possible", "impossible", "maybe", "perhaps", "probably", "not", "no", "is"}


_TEXT_COMMAND = re.compile(r"\\(?:text|mathrm|mbox|textbf|textnormal|operatorname|begin|end)\s*\{[^{}]*\}")
_COMMAND = re.compile(r"\\[a-zA-Z]+")


def _latex_free(s: str) -> str:
    """Text with LaTeX commands and \\text{...} contents removed (for counting prose)."""
    return _COMMAND.sub(" ", _TEXT_COMMAND.sub(" ", s)) if "\\" in s else s


def is_bare_answer(text: str, *, gold: bool = False) -> bool:
    """A short answer written on its own, not prose that contains one.

    Golds get more room ("\\frac{NO}{BO} = ..." names things with letters); a model's
    output with two or more words of prose is prose.
    """
    t = text.strip()
    if not t or len(t) > BARE_MAX_CHARS or "\n\n" in t:
        return False
    free = _latex_free(t)
    words = [w for w in _PROSE_WORD.findall(free) if w.lower() not in _BARE_OK_WORDS]
    if words and parse_number_words(free) is not None:  # "forty-two", "one hundred and five"
        return True
    if gold:
        return sum(len(w) >= 3 for w in words) <= 2
    words = [w for w in words if w.lower() not in _MATHS_WORDS]
    # A word is allowed only as a unit after a number ("125 miles", "5 feet 2 inches"), not
    # "Therefore, x = 5".
    units = [u for u in re.findall(r"\d[\s$]*([a-zA-Z]{2,})", free) if u.lower() not in _NEVER_UNITS]
    return len(words) == 0 or (len(words) <= 3 and all(w in units for w in words))


# A check or an aside that follows the answer: its numbers are not the answer ("x = 4. Substituting
# back: 3(4) - 2 = 10", "So x = 4. Other values such as 6 also appear").
_CHECK = re.compile(
    r"(?:^|(?<=[.!?:\n]))[ \t*#>-]*(?:check(?:ing)?|verif(?:y|ying|ication)|substitut\w*|plugging|sanity\s+check"
    r"|double[- ]check(?:ing)?|as\s+a\s+check|to\s+(?:check|verify|confirm)|let(?:'s|\s+us)\s+(?:check|verify|confirm)"
    r"|(?:other|further|more|additional|larger|the\s+next)\s+(?:values|solutions|examples|terms|numbers)|for\s+comparison)\b",
    re.IGNORECASE,
)
_CHECK_MARK = re.compile(r"[✓✔]")
_CONCLUDES = re.compile(r"\b(?:so|therefore|thus|hence|answer|final|conclude)\b", re.IGNORECASE)


# a closing parenthetical in words after the text's last number outside it: "The total is 15 (we
# rejected 3)." is 15
_CLOSING_ASIDE = re.compile(r"(\d[^\d()]{0,40}?)\s*\(([^()\n]{3,200})\)[\s.!]*$")


def _without_closing_aside(text: str) -> str:
    tail_at = max(0, len(text) - 300)
    m = _CLOSING_ASIDE.search(text, tail_at)
    if m is None or is_bare_answer(m.group(2)):  # "(3, 4)", "(in cm)": the answer's own
        return text
    return text[: m.end(1)]


def before_check(text: str) -> str:
    """``text`` cut before a check or aside that follows its answer, or ``text`` when it has none.

    A closing parenthetical in words after a number is an aside ("The total is 15 (we rejected 3).").
    A check counts only when a number stands before it and nothing after it concludes ("so",
    "therefore", "answer": "Checking n = 5: it works. So n = 5." states its answer last).

    Examples:
        >>> before_check("x = 4. Substituting back: 3(4) - 2 = 10.")
        'x = 4.'
        >>> before_check("Let us check n = 3: fails. Checking n = 5: works. So n = 5.")
        'Let us check n = 3: fails. Checking n = 5: works. So n = 5.'
        >>> before_check("The total is 15 (we rejected 3).")
        'The total is 15'
    """
    if ")" in text[-8:]:
        text = _without_closing_aside(text)
    tail_at = max(0, len(text) - 2000)
    tail = text[tail_at:]
    folded = tail.casefold()
    if not any(
        w in folded
        for w in (
            "check",
            "verif",
            "substitut",
            "plugging",
            "values",
            "solutions",
            "✓",
            "✔",
            "examples",
            "terms",
            "numbers",
            "comparison",
            "confirm",
        )
    ):
        return text
    # a check begins at its marker word, and just after a tick: "x = 6 ✓ since 2·6 + 1 = 13"
    starts = [m.start() for m in _CHECK.finditer(tail)] + [m.end() for m in _CHECK_MARK.finditer(tail)]
    for at in sorted(starts):
        head, rest = tail[:at], tail[at:]
        if re.search(r"\d", text[:tail_at] + head) and not _CONCLUDES.search(rest):
            return text[: tail_at + at]
    return text


def text_answer_candidate(text: str) -> Candidate | None:
    """A text answer that names a set or a verdict, stated last: the whole text ("All real numbers."),
    or a phrase of the last sentences with no number after it ("x = 2 fails, so the equation has no
    solution", "the limit does not exist")."""
    stripped = text.strip()
    if len(stripped) <= 120 and is_text_answer(stripped):
        return Candidate("text_answer", (stripped.rstrip("."),))
    tail = text[-300:]
    last = None
    for m in PHRASE.finditer(tail):
        last = m
    if last is None or re.search(r"\d", tail[last.end() :]):
        return None
    return Candidate("text_answer", ((last.group("phrase") or last.group("dne")).strip(),))


def final_claims(text: str, *, bold_last_line: bool = False) -> list[Candidate]:
    """What each format of final answer in the completion commits to: the last ``<answer>`` tag (its
    first reading), the last group of boxes outside it, GSM8K's last ``####`` and a final line that
    states an answer ("Answer: 12") or, written all in bold (``bold_last_line``: the caller saw it
    before :func:`~rlvr.verify.model_text.answer_text` dropped the bold), is one ("**12**"); a
    displayed equation on the last line is not. A completion commits to one answer only if these agree
    (:func:`rlvr.verify.math.compare.compare` checks them against the gold). A phrase counts only on
    the final line, or after the last answer tag: an "answer is" guess in the reasoning that a later
    box corrects is no claim."""
    if len(text) > MAX_SCAN_CHARS:
        text = text[-MAX_SCAN_CHARS:]
    body = strip_reasoning(text)
    if body is None:
        return []
    body = mask_currency(body)
    claims: list[Candidate] = []
    outside = body
    if "<" in body and (tags := list(_ANSWER_TAG.finditer(body))):
        if (first := next(iter_candidates(f"<answer>{tags[-1].group(1)}</answer>"), None)) is not None:
            claims.append(first)
        # an answer phrase after the last tag claims too ("<answer>12</answer> The answer is 14.")
        said = answer_is_candidate(body[tags[-1].end() :])
        if said is not None and re.search(r"[\d$\\]", said.text):
            claims.append(said)
        outside = _ANSWER_TAG.sub(" ", body)
    if "\\boxed" in outside or "\\fbox" in outside:
        boxes = find_boxes(outside)
        said = answer_is_candidate(outside, after=boxes[-1][1]) if boxes else None
        superseded = said is not None and re.search(r"[\d$\\]", said.text)  # "Final Answer: ..." after the box
        if not superseded and (box := boxed_candidate(outside, boxes)) is not None:
            claims.append(box)
    if "####" in outside and (gsm := _GSM8K.findall(outside)):
        claims.append(Candidate("gsm8k", (gsm[-1].strip(),)))
    lines = outside.rstrip().rsplit("\n", 1)
    last = lines[-1].strip(" .:*\t") if len(lines) > 1 else ""
    if last and not find_boxes(last):
        said = answer_is_candidate(last)
        if said is not None and ANSWER_IS.match(last):
            claims.append(Candidate("final_line", said.parts))
        elif bold_last_line and re.search(r"\d", last) and is_bare_answer(last):
            claims.append(Candidate("final_line", (last,)))
    return claims


def iter_candidates(text: str, *, strict: bool = False, gold: bool = False) -> Iterator[Candidate]:
    """Yield answer candidates in priority order (see the module docstring).

    ``gold`` reads a reference answer: bare answers may name things with letters.
    """
    if len(text) > MAX_SCAN_CHARS:
        text = text[-MAX_SCAN_CHARS:]
    body = strip_reasoning(text)
    if body is None:
        return
    body = mask_currency(body)
    tags = _ANSWER_TAG.findall(body)
    if tags:
        inner = tags[-1].strip()
        box = boxed_candidate(inner)
        if box is not None:
            yield Candidate("answer_tag", box.parts)
        elif inner and not is_bare_answer(inner, gold=gold) and len(inner) <= 600:
            # a sentence inside the tag ("The answer is 12 apples."): read it like a short output
            if not ANSWER_IS.search(inner) and (stated := statement_candidate(inner)) is not None:
                yield Candidate("answer_tag", stated.parts)
            for c in iter_candidates(inner, gold=gold):
                yield Candidate("answer_tag", c.parts)
            yield Candidate("answer_tag", (inner,))
        elif inner:
            yield Candidate("answer_tag", (inner,))
        return  # an answer tag is a promise: do not go looking elsewhere
    if (row := table_candidate(body)) is not None:  # "| Final answer | 35 |", before any check rows
        yield row
    boxes = find_boxes(body)
    said = answer_is_candidate(body, after=boxes[-1][1] if boxes else 0)
    if said is not None and boxes and not re.search(r"[\d$\\]", said.text):
        said = None  # "... so our answer is correct": words after a box do not override it
    if said is not None:  # "The final answer is X" written after the last box wins
        yield said
    box = boxed_candidate(body, boxes)
    if box is not None:
        yield box
    if said is None and (said := answer_is_candidate(body)) is not None:
        yield said
    gsm = _GSM8K.findall(body)
    if gsm:
        yield Candidate("gsm8k", (gsm[-1].strip(),))
    if not gold:
        body = before_check(body)  # the fallbacks read the answer, not a check or an aside after it
        if (named := text_answer_candidate(body)) is not None:
            yield named
    if not gold and (listed := solutions_candidate(body) or relations_candidate(body)) is not None:
        yield listed
    if is_bare_answer(body, gold=gold):
        yield Candidate("bare", (body.strip(),))
    spans, nums = _spans_and_numbers(body)
    if strict:
        nums = []
    elif len(nums) > 1:
        nums = _given_last(body, nums)
    # Prose that ends "... so there are 12 sequences": a number after the last math span wins.
    if nums and (not spans or nums[-1][0] > spans[-1][0]):
        yield Candidate("last_number", (nums[-1][1],))
    if spans:
        yield Candidate("math_span", (spans[-1][1],))
    if nums:
        yield Candidate("last_number", (nums[-1][1],))
