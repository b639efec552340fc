"""A single-turn verifiers environment: the answer in <answer> tags (an XMLParser), a format reward."""

from __future__ import annotations

import verifiers as vf
from datasets import Dataset


def load_environment(n: int = 6) -> vf.SingleTurnEnv:
    rows = [{"question": f"What is {i} + {i + 1}?", "answer": str(2 * i + 1)} for i in range(n)]
    evals = [{"question": "What is 40 + 2?", "answer": "42"}]
    parser = vf.XMLParser(["answer"], answer_field="answer")

    def correct_answer(completion, answer, **kwargs) -> float:
        return 1.0 if (parser.parse_answer(completion) or "").strip() == answer else 0.0

    rubric = vf.Rubric(funcs=[correct_answer, parser.get_format_reward_func()], weights=[1.0, 0.2], parser=parser)
    return vf.SingleTurnEnv(
        dataset=Dataset.from_list(rows),
        eval_dataset=Dataset.from_list(evals),
        system_prompt="Answer in <answer></answer>.",
        parser=parser,
        rubric=rubric,
    )
