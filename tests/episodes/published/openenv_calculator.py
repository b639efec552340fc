"""An OpenEnv environment written in OpenEnv's own API, served over HTTP by this file:
``python openenv_calculator.py --port N [--fail-rate R]``. The action is an expression; a step's
reward is 1 when its value is the episode's target (reset's ``target``). ``--fail-rate`` makes a step
raise on purpose (seeded per episode and step); ``--die-after N`` ends the server after N steps."""

from __future__ import annotations

import argparse
import os
import random

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class CalculatorAction(Action):
    """Evaluate an arithmetic expression."""

    expression: str = Field(description='numbers with + - * / and parentheses, e.g. "12*34"')


class CalculatorObservation(Observation):
    result: str = ""


FAIL_RATE = float(os.environ.get("CALC_FAIL_RATE", "0"))
GREETING = os.environ.get("CALC_GREETING", "Use the calculator.")
DIE_AFTER = int(os.environ.get("CALC_DIE_AFTER", "0"))
STEPS = {"n": 0}


class CalculatorEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id="", step_count=0)
        self.target: int | None = None
        self.rng = random.Random(0)

    def reset(self, seed=None, episode_id=None, target=None, **kwargs) -> CalculatorObservation:
        self._state = State(episode_id=episode_id or "", step_count=0)
        self.target = target
        self.rng = random.Random(f"{seed}:{episode_id}")
        self.greeting = GREETING
        return CalculatorObservation(result=self.greeting, done=False, reward=None)

    def step(self, action: CalculatorAction, **kwargs) -> CalculatorObservation:
        STEPS["n"] += 1
        if DIE_AFTER and STEPS["n"] >= DIE_AFTER:
            os._exit(1)
        self._state.step_count += 1
        if self.rng.random() < FAIL_RATE:
            raise RuntimeError("the calculator backend failed")
        from rlvr.episodes import evaluate

        try:
            value = evaluate(action.expression)
        except ValueError as e:
            return CalculatorObservation(result=f"error: {e}", done=False, reward=0.0)
        hit = self.target is not None and value == self.target
        return CalculatorObservation(result=str(value), done=hit, reward=1.0 if hit else 0.0)

    @property
    def state(self) -> State:
        return self._state


app = create_app(CalculatorEnv, CalculatorAction, CalculatorObservation, env_name="calculator", max_concurrent_envs=64)

if __name__ == "__main__":
    import uvicorn

    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
