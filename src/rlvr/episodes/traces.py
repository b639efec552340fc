"""Tool-use traces to warm a policy up on before agentic RL (SFT on the calls it should learn to make).

A trace is the completion of one episode written out: the call, the tool's result as the engine
appends it, and the final answer. :func:`calculator_trace` writes one for an arithmetic row::

    <tool_call>{"name":"calculator","arguments":{"expression":"12*34"}}</tool_call><tool_response>408</tool_response><answer>408</answer>
"""

from __future__ import annotations

from typing import Any

from rlvr.episodes.guard import call_markup, result_markup
from rlvr.episodes.tools import evaluate
from rlvr.rewards.base import prompt_text


def calculator_trace(expression: str, answer_tag: str = "answer", after_call: str = "") -> str:
    """The episode that asks the calculator for ``expression`` and answers with its result.

    ``after_call``: what the chat template writes between a call and its result, where the engine
    renders turns through it (``"<eos>"`` for the tiny model on TRL, whose call turn ends there);
    "" for rlvr's engine, which appends the result right after the call.
    """
    value = evaluate(expression)
    result = str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    return (
        call_markup("calculator", {"expression": expression})
        + after_call
        + result_markup(result)
        + f"<{answer_tag}>{result}</{answer_tag}>"
    )


def trace_of(sample: Any, after_call: str = "") -> str:
    """:func:`calculator_trace` of a row whose prompt is the expression (the built-in arithmetic task)."""

    return calculator_trace(prompt_text(sample.prompt).strip(), after_call=after_call)
