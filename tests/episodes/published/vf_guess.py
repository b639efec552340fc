"""A stateful multi-turn game in verifiers' StatefulToolEnv: guess a secret number; the ``guess``
tool's ``secret`` argument is hidden from the policy and filled from the episode's state."""

from __future__ import annotations

import verifiers as vf
from datasets import Dataset


def guess(number: int, secret: int) -> str:
    """Guess the secret number.

    Args:
        number: your guess.
        secret: the secret (filled in by the game).
    """
    if number == secret:
        return "right"
    return "higher" if number < secret else "lower"


class GuessEnv(vf.StatefulToolEnv):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_tool(guess, args_to_skip=["secret"])

    async def setup_state(self, state, **kwargs):
        state["secret"] = int(state["info"]["secret"])
        state["guesses"] = 0
        return state

    def update_tool_args(self, tool_name, tool_args, messages, state, **kwargs):
        state["guesses"] += 1
        return {**tool_args, "secret": state["secret"]}


def load_environment() -> vf.StatefulToolEnv:
    rows = [
        {"question": "Find the secret number from 1 to 9.", "answer": str(s), "info": {"secret": s}} for s in (3, 7)
    ]

    def found(completion, state, answer, **kwargs) -> float:
        return 1.0 if answer in str(completion[-1].content or "") and state["guesses"] > 0 else 0.0

    rubric = vf.Rubric(funcs=[found], weights=[1.0])
    return GuessEnv(dataset=Dataset.from_list(rows), rubric=rubric, max_turns=6)
