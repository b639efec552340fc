"""The agentic benchmark's task as an OpenEnv environment, written in OpenEnv's own API and served over
HTTP by this file (``python openenv_products.py --port N``): each episode is one 3-digit product (its
target read from the episode id rlvr resets it with, ``arith-A*B``, the benchmark's row id); the
action is an expression (described as rlvr's calculator describes it); a step's reward is 1 when the
expression's value is the target, and the episode is then done.

    env: {environment: "openenv?tool=calculator", server: "python benchmarks/envs/openenv_products.py --port {port}"}
"""

from __future__ import annotations

import argparse
import re

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class CalculatorAction(Action):
    """Evaluate an arithmetic expression exactly."""

    expression: str = Field(description='numbers with + - * / // % ** and parentheses, e.g. "(1234 * 5678) + 9".')


class CalculatorObservation(Observation):
    result: str = ""


class ProductsEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id="", step_count=0)
        self.target: int | None = None

    def reset(self, seed=None, episode_id=None, **kwargs) -> CalculatorObservation:
        self._state = State(episode_id=episode_id or "", step_count=0)
        m = re.fullmatch(r"arith-(\d+)\*(\d+)", episode_id or "")
        self.target = int(m.group(1)) * int(m.group(2)) if m else None
        return CalculatorObservation(result="", done=False, reward=None)

    def step(self, action: CalculatorAction, **kwargs) -> CalculatorObservation:
        from rlvr.episodes import evaluate

        self._state.step_count += 1
        try:
            value = evaluate(action.expression)
        except ValueError as e:
            return CalculatorObservation(result=f"error: {e}", done=False, reward=0.0)
        hit = self.target is not None and value == self.target
        text = str(int(value)) if value == int(value) else str(value)
        return CalculatorObservation(result=text, done=hit, reward=1.0 if hit else 0.0)

    @property
    def state(self) -> State:
        return self._state


app = create_app(ProductsEnv, CalculatorAction, CalculatorObservation, env_name="products", max_concurrent_envs=256)

if __name__ == "__main__":
    import uvicorn

    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    uvicorn.run(app, host="127.0.0.1", port=p.parse_args().port, log_level="warning")
