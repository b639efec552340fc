"""Grammars for the answer segment (xgrammar EBNF / JSON Schema) and for the whole output shape.

=========== ===================================================================
answer kind what the answer segment may contain
=========== ===================================================================
``math``    a number (integer, decimal, negative, ``a/b``), a LaTeX maths subset
            (``\\frac``, ``\\sqrt``, ``\\pi``, ``^``, ``\\cdot``, a variable), a tuple
            ``(a, b)``, a set ``\\{a, b\\}``, an interval ``[a, b)``, or ``x = 2``
``json``    a JSON value valid against a JSON Schema (any JSON value without one)
``text``    free text without ``<``, at most ``max_chars`` characters
=========== ===================================================================

Each answer grammar ends with the closing tag, so once the segment starts the tag
is guaranteed; what comes after it is the end of the sequence (the matcher then
allows only the stop token).
"""

from __future__ import annotations

import json
from typing import Any, Literal

AnswerKind = Literal["math", "json", "text"]

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


def _lit(s: str) -> str:
    return json.dumps(s)  # an EBNF string literal (JSON escaping is what xgrammar reads)


def answer_grammar(kind: AnswerKind, close: str, *, schema: dict[str, Any] | None = None,
                   max_chars: int = 200) -> Any:
    """The xgrammar ``Grammar`` of an answer segment of ``kind`` followed by the closing tag ``close``."""
    import xgrammar as xgr

    if kind == "math":
        return xgr.Grammar.from_ebnf(f"root ::= answer {_lit(close)}\n{MATH_EBNF}")
    if kind == "text":
        return xgr.Grammar.from_ebnf(f"root ::= [^<]{{0,{max_chars}}} {_lit(close)}")
    if kind == "json":
        body = (xgr.Grammar.from_json_schema(json.dumps(schema)) if schema is not None
                else xgr.Grammar.builtin_json_grammar())
        return xgr.Grammar.concat(body, xgr.Grammar.from_ebnf(f"root ::= {_lit(close)}"))
    raise ValueError(f"unknown answer kind {kind!r}; choose math, json or text")


def full_grammar(kind: AnswerKind, *, answer_tag: str = "answer", think_tag: str | None = "think",
                 schema: dict[str, Any] | None = None, max_chars: int = 200) -> Any:
    """The whole output: ``<think>...</think>`` (when ``think_tag``) then ``<answer>...</answer>``.

    The reasoning is free except that it cannot contain ``</`` (so it cannot close a tag early).
    """
    import xgrammar as xgr

    head = ""
    if think_tag:
        head = (f"{_lit(f'<{think_tag}>')} think {_lit(f'</{think_tag}>')} [ \\n]* ")
    prefix = xgr.Grammar.from_ebnf(f"root ::= {head}{_lit(f'<{answer_tag}>')}\n"
                                   "think ::= ([^<] | \"<\" [^/])*")
    return xgr.Grammar.concat(prefix, answer_grammar(kind, f"</{answer_tag}>", schema=schema, max_chars=max_chars))
