"""Tool-use traces to warm a policy up on before agentic RL (SFT on the calls it should learn to make).

A trace is the completion of one episode written out: the call, the tool's result as the engine
appends it, and the final answer. :func:`calculator_trace` writes one for an arithmetic row::

    <tool_call>{"name":"calculator","arguments":{"expression":"12*34"}}</tool_call><tool_response>408</tool_response><answer>408</answer>
"""

from __future__ import annotations

from typing import Any

from rlvr.episodes.guard import call_markup, result_markup
from rlvr.episodes.tools import evaluate


def calculator_trace(expression: str, answer_tag: str = "answer") -> str:
    """The episode that asks the calculator for ``expression`` and answers with its result."""
    value = evaluate(expression)
    result = str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    return (call_markup("calculator", {"expression": expression}) + result_markup(result)
            + f"<{answer_tag}>{result}</{answer_tag}>")


def trace_of(sample: Any) -> str:
    """:func:`calculator_trace` of a row whose prompt is the expression (the built-in arithmetic task)."""
    from rlvr.rewards.base import prompt_text

    return calculator_trace(prompt_text(sample.prompt).strip())
