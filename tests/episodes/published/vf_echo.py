"""A verifiers ``MultiTurnEnv`` that converses, written in verifiers' own API (as a hub environment
is): it asks the policy to say numbers back one at a time, each request its ``env_response`` to the
policy's last turn; a stop condition ends the episode once every number was asked (or, with
``final=true``, a ``final_env_response`` does); the rubric scores the share said back right.
``fail_rate`` makes ``env_response`` raise on purpose (seeded per call): an environment that fails
on its own."""

from __future__ import annotations

import random

import verifiers as vf
from datasets import Dataset

NUMBERS = [[12, 345, 6], [78, 9, 401], [5, 63, 720], [88, 14, 3]]


class EchoEnv(vf.MultiTurnEnv):
    def __init__(self, fail_rate: float = 0.0, final: bool = False, seed: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.fail_rate, self.final, self.rng = fail_rate, final, random.Random(seed)

    async def setup_state(self, state, **kwargs):
        state["heard"] = []
        return state

    @vf.stop
    async def all_asked(self, state) -> bool:
        return not self.final and len(state["trajectory"]) >= len(state["info"]["numbers"])

    async def env_response(self, messages, state, **kwargs):
        state["heard"].append(str(messages[-1]["content"]).strip())
        if self.rng.random() < self.fail_rate:
            raise ConnectionError("the echo service is down")
        numbers, k = state["info"]["numbers"], len(state["trajectory"])
        if k >= len(numbers):  # only with final=true: the last word is the environment's
            state["final_env_response"] = [vf.UserMessage(content="thanks")]
            return []
        return [vf.UserMessage(content=f"say {numbers[k]}")]


def said_back(completion, info, **kwargs) -> float:
    said = [str(m["content"]).strip() for m in completion if m["role"] == "assistant"]
    return sum(a == str(b) for a, b in zip(said, info["numbers"])) / len(info["numbers"])


def load_environment(fail_rate: float = 0.0, final: bool = False, seed: int = 0, repeat: int = 2) -> vf.MultiTurnEnv:
    rows = [{"question": f"say {ns[0]}", "answer": " ".join(map(str, ns)), "info": {"numbers": ns}} for ns in NUMBERS]
    rubric = vf.Rubric(funcs=[said_back], weights=[1.0])
    return EchoEnv(
        fail_rate=fail_rate,
        final=final,
        seed=seed,
        dataset=Dataset.from_list(rows * repeat),
        rubric=rubric,
        max_turns=6,
    )
