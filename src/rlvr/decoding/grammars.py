"""Grammars for the answer segment (xgrammar EBNF / JSON Schema) and for the whole output shape.

=========== ===================================================================
answer kind what the answer segment may contain
=========== ===================================================================
``math``    a number (integer, decimal, negative, ``a/b``), a LaTeX maths subset
            (``\\frac``, ``\\sqrt``, ``\\pi``, ``^``, ``\\cdot``, a variable), a tuple
            ``(a, b)``, a set ``\\{a, b\\}``, an interval ``[a, b)``, or ``x = 2``
``integer`` an integer, optionally negative (GSM8K, countless word problems, the
            synthetic tasks): a policy with no prior still guesses a right one
``json``    a JSON value valid against a JSON Schema (any JSON value without one)
``text``    free text without ``<``, at most ``max_chars`` characters
=========== ===================================================================

Each answer grammar ends with the closing tag, so once the segment starts the tag
is guaranteed; what comes after it is the end of the sequence (the matcher then
allows only the stop token).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

AnswerKind = Literal["math", "integer", "json", "text"]

MATH_EBNF = r"""
answer ::= sp (equation | tuple | set | interval | expr) sp
equation ::= var sp "=" sp expr
tuple ::= "(" sp expr (sp "," sp expr)+ sp ")"
set ::= "\\{" sp expr (sp "," sp expr)* sp "\\}"
interval ::= ("(" | "[") sp expr sp "," sp expr sp (")" | "]")
expr ::= "-"? product (sp op sp product)*
product ::= term factor?
op ::= "+" | "-" | "*" | "/" | "^" | "\\cdot" | "\\times"
term ::= number | factor
factor ::= frac | sqrt | "\\pi" | var | "(" sp expr sp ")" | "{" sp expr sp "}"
number ::= [0-9]+ ("." [0-9]+)? "\\%"?
frac ::= ("\\frac" | "\\dfrac") "{" sp expr sp "}" "{" sp expr sp "}"
sqrt ::= "\\sqrt" "{" sp expr sp "}"
var ::= [a-z]
sp ::= " "?
"""


def ebnf_literal(s: str) -> str:
    return json.dumps(s)  # an EBNF string literal (JSON escaping is what both engines read)


@dataclass(frozen=True)
class GrammarSpec:
    """An engine-neutral grammar: GBNF-style EBNF, with a JSON value by schema where one is needed.

    Attributes:
        head: EBNF rules for what comes before the answer's content (``root ::= ...``; ``""``: none).
        body: EBNF rules of the answer's content and closing tag (``None`` for JSON answers).
        json_schema: for JSON answers: the value's schema (``{}``: any JSON value).
        close: for JSON answers: the closing tag after the value.
    """

    head: str = ""
    body: str | None = None
    json_schema: dict[str, Any] | None = None
    close: str = ""

    def ebnf(self) -> str:
        """The whole grammar as one EBNF text (not for JSON answers)."""
        assert self.body is not None
        if not self.head:
            return self.body
        # the head's root continues into the body's root, renamed
        body = self.body.replace("root ::=", "answer_root ::=", 1)
        return self.head.replace("<ANSWER>", "answer_root") + "\n" + body


def answer_spec(
    kind: AnswerKind, close: str, *, schema: dict[str, Any] | None = None, max_chars: int = 200, head: str = ""
) -> GrammarSpec:
    """The answer segment of ``kind`` followed by the closing tag ``close`` (after ``head``, if any)."""
    if kind == "math":
        return GrammarSpec(head, f"root ::= answer {ebnf_literal(close)}\n{MATH_EBNF}")
    if kind == "integer":
        return GrammarSpec(head, f'root ::= "-"? [0-9]{{1,18}} {ebnf_literal(close)}')
    if kind == "text":
        return GrammarSpec(head, f"root ::= [^<]{{0,{max_chars}}} {ebnf_literal(close)}")
    if kind == "json":
        return GrammarSpec(head, None, schema if schema is not None else {}, close)
    raise ValueError(f"unknown answer kind {kind!r}; choose math, integer, json or text")


def full_spec(
    kind: AnswerKind,
    *,
    answer_tag: str = "answer",
    think_tag: str | None = "think",
    schema: dict[str, Any] | None = None,
    max_chars: int = 200,
) -> GrammarSpec:
    """The whole output: ``<think>...</think>`` (when ``think_tag``) then ``<answer>...</answer>``.

    The reasoning is free except that it cannot contain ``</`` (so it cannot close a tag early).
    """
    head = f"{ebnf_literal(f'<{think_tag}>')} think {ebnf_literal(f'</{think_tag}>')} [ \\n]* " if think_tag else ""
    rules = f"root ::= {head}{ebnf_literal(f'<{answer_tag}>')} <ANSWER>"
    if think_tag:
        rules += '\nthink ::= ([^<] | "<" [^/])*'
    return answer_spec(kind, f"</{answer_tag}>", schema=schema, max_chars=max_chars, head=rules)


#: The math answer as a regex (the grammar above, flattened to what a regex can say: no nesting).
MATH_REGEX = r" ?-?[0-9a-z\\{}()\[\],.^/*+=% -]{1,80}"


def output_regex(
    kind: AnswerKind, *, think_tag: str | None = "think", answer_tag: str = "answer", max_chars: int = 200
) -> str:
    """The whole output as one regular expression, for engines whose structured output takes a regex
    (vLLM through TRL's ``vllm_structured_outputs_regex``): reasoning free of ``<``, then the answer.

    Examples:
        >>> output_regex("text", think_tag=None)
        '<answer>[^<]{0,200}</answer>'
    """

    answer = {
        "math": MATH_REGEX,
        "integer": "-?[0-9]{1,18}",
        "text": f"[^<]{{0,{max_chars}}}",
        "json": f"[^<]{{1,{max_chars}}}",
    }[kind]
    head = f"{re.escape(f'<{think_tag}>')}[^<]*{re.escape(f'</{think_tag}>')}\\s*" if think_tag else ""
    return f"{head}{re.escape(f'<{answer_tag}>')}{answer}{re.escape(f'</{answer_tag}>')}"
