"""The agentic benchmark's task as a ``verifiers`` tool environment, written in verifiers' own API as a
published environment is: 3-digit products to compute with a ``calculator`` tool (the same tool, the
same description, the same prompts as rlvr's built-in calculator episodes, so the one warm-up serves
both), judged by the environment's rubric (the ``<answer>`` equal to the product).

    env.environment: verifiers:benchmarks/envs/vf_products.py?size=4000&eval_size=200
"""

from __future__ import annotations

import verifiers as vf
from datasets import Dataset


def _rows(seed: int, n: int) -> list[dict]:
    from rlvr.data import arithmetic  # the benchmark's own task: the same prompts and golds

    rows = []
    for _, s in zip(range(n), arithmetic(seed, digits=3, ops="*")):
        rows.append({"question": s.prompt[-1]["content"], "answer": str(s.gold), "info": {"id": str(s.id)}})
    return rows


def load_environment(size: int = 4000, eval_size: int = 200, seed: int = 11) -> vf.ToolEnv:
    async def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression exactly.

        Args:
            expression: numbers with + - * / // % ** and parentheses, e.g. "(1234 * 5678) + 9".
        """
        from rlvr.episodes import evaluate

        try:
            value = evaluate(expression)
        except ValueError as e:
            return f"error: {e}"
        return str(int(value)) if value == int(value) else str(value)

    parser = vf.XMLParser(fields=["answer"], answer_field="answer")

    def correct_answer(completion, answer, **kwargs) -> float:
        return 1.0 if (parser.parse_answer(completion) or "").strip() == answer else 0.0

    rubric = vf.Rubric(funcs=[correct_answer], weights=[1.0], parser=parser)
    return vf.ToolEnv(
        dataset=Dataset.from_list(_rows(seed, size)),
        eval_dataset=Dataset.from_list(_rows(1234, eval_size)),
        tools=[calculator],
        rubric=rubric,
        parser=parser,
        max_turns=2,
    )
