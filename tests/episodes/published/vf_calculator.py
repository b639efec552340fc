"""A verifiers tool environment written in verifiers' own API (as a hub environment is): products
to compute with a ``calculator`` tool, judged by a rubric. ``fail_rate`` makes the tool raise on
purpose (seeded per call); ``reward_fails`` makes a reward function raise. With ``VF_RUBRIC_LOG`` set,
each call of the rubric's correctness function appends a line to that file naming its caller: ``episode``
(the environment judging its episode) or ``verifier`` (rlvr's single-turn verifier scoring a text)."""

from __future__ import annotations

import inspect
import os
import random

import verifiers as vf
from datasets import Dataset

PAIRS = [(12, 34), (56, 78), (91, 23), (45, 67)]


def load_environment(fail_rate: float = 0.0, reward_fails: bool = False, seed: int = 0, repeat: int = 4) -> vf.ToolEnv:
    rng = random.Random(seed)

    async def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression exactly.

        Args:
            expression: numbers with + - * / and parentheses, e.g. "12*34".
        """
        if rng.random() < fail_rate:
            raise RuntimeError("the calculator service is down")
        from rlvr.episodes import evaluate

        try:
            return str(evaluate(expression))
        except ValueError as e:
            return f"error: {e}"

    rows = [{"question": f"{a}*{b}", "answer": str(a * b), "info": {"a": a, "b": b}} for a, b in PAIRS] * repeat
    parser = vf.Parser()

    def correct_answer(completion, answer, **kwargs) -> float:
        if log := os.environ.get("VF_RUBRIC_LOG"):
            caller = "verifier" if any(f.function == "verify_verifiers" for f in inspect.stack()) else "episode"
            with open(log, "a") as f:
                f.write(caller + "\n")
        if reward_fails:
            raise ValueError("the grader lost its key")
        return 1.0 if answer in (parser.parse_answer(completion) or "") else 0.0

    async def used_the_tool(completion) -> float:
        return 1.0 if any(getattr(m, "tool_calls", None) for m in completion) else 0.0

    rubric = vf.Rubric(funcs=[correct_answer, used_the_tool], weights=[1.0, 0.1], parser=parser)
    return vf.ToolEnv(dataset=Dataset.from_list(rows), tools=[calculator], rubric=rubric, parser=parser, max_turns=2)
