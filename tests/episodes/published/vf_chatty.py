"""A MultiTurnEnv that answers with its own env_response (rlvr refuses it: its turns are not tool calls)."""

from __future__ import annotations

import verifiers as vf
from datasets import Dataset


class Chatty(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        return [{"role": "user", "content": "go on"}]


def load_environment() -> vf.MultiTurnEnv:
    return Chatty(dataset=Dataset.from_list([{"question": "hi", "answer": "x"}]))
