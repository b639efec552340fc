"""``verifiers`` environments as rlvr rows, episodes and rewards (``pip install 'rlvr[envs]'``).

A ``verifiers`` environment (the classic API hub environments are written in: ``import verifiers
as vf``; ``vf.SingleTurnEnv``, ``vf.ToolEnv``, ``vf.StatefulToolEnv`` with a dataset and a
``vf.Rubric``) is named ``verifiers:<module or file.py>[?<argument>=<value>&...]``: the module's
``load_environment(**arguments)`` builds it, once per process. What maps to what:

* its dataset (``prompt``, ``answer``, ``info``) -> rlvr's rows (:func:`load_rows`), its eval
  dataset -> the held-out rows;
* its rubric -> reward components: each weighted function a component under its own name (the
  parser's format function is ``format``), the weights kept, async functions awaited; weight-0
  functions (metrics) are left out; the episode *passes* at the environment's ``pass_threshold``;
* its tools -> the episode's tools (:func:`environment_class`), each described to the policy from
  its own signature and docstring; a ``StatefulToolEnv``'s hidden arguments filled by its own
  ``update_tool_args`` from the episode's state, which its ``setup_state`` prepared;
* a ``MultiTurnEnv``'s ``env_response`` -> the environment's answer to each turn of the policy
  (rlvr's ``respond``): its messages join the conversation and the policy takes another turn, until
  one of its stop conditions (``@vf.stop`` methods, ``max_turns``) holds or it sets
  ``final_env_response``; each turn is a step of ``state["trajectory"]``, as its own rollout makes.

What rlvr adds is who failed. ``verifiers`` turns a tool's exception into the tool message the
policy reads and a reward function's exception into a 0, and an exception in ``env_response`` ends
the rollout as an error scored like any other: all are the *environment's* faults here
(``tool_error``: out of the baseline and the loss, redrawn), while a malformed call, an unknown tool
or arguments outside the schema stay the policy's. A completion whose answer the parser cannot find
is ``no_answer`` (the format's death), one it finds and the rubric fails ``wrong``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from rlvr.data.specs import split_spec
from rlvr.data.tasks import Sample
from rlvr.errors import ConfigError, DataError

SCHEME = "verifiers:"
#: The task name of a verifiers environment's rows (their verifier runs the rubric).
TASK = "verifiers"


def verifiers_module() -> Any:
    """The ``verifiers`` package (its classic API), or a ConfigError saying how to install it."""
    try:
        import verifiers as vf

        return vf
    except ImportError as e:
        raise ConfigError(
            f"verifiers environments need the verifiers package: pip install 'rlvr[envs]' ({e})"
        ) from None


def _module(name: str) -> Any:
    """A module by import name or a ``.py`` file's path."""
    if name.endswith(".py"):
        path = Path(name)
        if not path.is_file():
            raise ConfigError(f"{SCHEME}{name}: no such file")
        spec = importlib.util.spec_from_file_location(f"rlvr_vf_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod
    return importlib.import_module(name.replace("-", "_"))


@lru_cache(maxsize=16)
def load(spec: str) -> Any:
    """The environment ``spec`` names, built once per process.

    Raises:
        ConfigError: not importable, no ``load_environment``, arguments it refuses, not a
            ``verifiers`` environment, or one rlvr cannot run (group reward functions), naming
            which and why.
    """
    vf = verifiers_module()
    name, kwargs = split_spec(spec, SCHEME)
    if not name:
        raise ConfigError(f"{spec!r}: expected verifiers:<module or file.py>[?argument=value&...]")
    try:
        mod = _module(name)
    except ImportError as e:
        raise ConfigError(f"{spec}: cannot import {name!r}: {e}") from None
    loader = getattr(mod, "load_environment", None)
    if not callable(loader):
        raise ConfigError(f"{spec}: {name!r} has no load_environment()")
    try:
        env = loader(**kwargs)
    except Exception as e:
        raise ConfigError(f"{spec}: load_environment({kwargs}) raised {type(e).__name__}: {e}") from None
    if not isinstance(env, vf.Environment):
        raise ConfigError(f"{spec}: load_environment() returned {type(env).__name__}, not a verifiers Environment")
    group = [getattr(f, "__name__", repr(f)) for f, _ in reward_functions(env) if env.rubric._is_group_func(f)]
    if group:
        raise ConfigError(f"{spec}: group reward functions ({', '.join(group)}) are not supported")
    return env


def has_tools(spec: str) -> bool:
    """Whether the environment ``spec`` names runs tool episodes."""
    return isinstance(load(spec), verifiers_module().ToolEnv)


def converses(spec: str) -> bool:
    """Whether the environment ``spec`` names answers the policy's turns itself (a ``MultiTurnEnv``
    with its own ``env_response``, neither single-turn nor a tool environment)."""
    vf, env = verifiers_module(), load(spec)
    return isinstance(env, vf.MultiTurnEnv) and not isinstance(env, vf.ToolEnv | vf.SingleTurnEnv)


def plain(value: Any) -> Any:
    """Messages (pydantic or dicts) as plain JSON-able values."""
    if hasattr(value, "model_dump"):
        return {k: v for k, v in value.model_dump().items() if v is not None}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def load_rows(spec: str, split: str = "train") -> list[Any]:
    """The environment's rows as rlvr :class:`~rlvr.data.tasks.Sample` objects (``split``: ``train``
    or ``test``, its eval dataset; an environment without one has no ``test`` rows). A row's gold is
    the JSON its verifier and its episodes read (:func:`gold_fields`): the environment's spec, the
    row's ``answer``, ``info``, ``example_id``, ``task`` and prompt."""

    env = load(spec)
    if split not in ("train", "test"):
        raise DataError(f"{spec}: split must be train or test, got {split!r}")
    if split == "test" and env.eval_dataset is None and getattr(env, "eval_dataset_source", None) is None:
        return []
    ds = env.get_dataset() if split == "train" else env.get_eval_dataset()
    stem = Path(split_spec(spec, SCHEME)[0]).stem
    rows = []
    for i, r in enumerate(ds):
        prompt = plain(r["prompt"])
        fields = {
            "env": spec,
            "answer": r.get("answer", ""),
            "info": r.get("info") or {},
            "example_id": r.get("example_id", i),
            "task": r.get("task"),
            "prompt": prompt,
        }
        gold = json.dumps(fields, default=str, ensure_ascii=False)
        rows.append(Sample(prompt=prompt, gold=gold, task=TASK, id=f"{stem}-{split}-{fields['example_id']}"))
    if not rows:
        raise DataError(f"{spec}: the environment's {split} dataset is empty")
    return rows


def train_and_held(spec: str, eval_size: int) -> tuple[list[Any], list[Any]]:
    """``(training rows, held-out rows)`` of the environment: its eval dataset held out (the first
    ``eval_size`` rows), or, without one, the first ``eval_size`` rows of its dataset.

    Raises:
        DataError: no training rows are left.
    """
    rows = load_rows(spec, "train")
    held = load_rows(spec, "test")[:eval_size]
    if not held:
        held, rows = rows[:eval_size], rows[eval_size:]
    if not rows:
        raise DataError(
            f"{spec}: no training rows left after holding out {eval_size} (the environment has no eval "
            "dataset; lower data.eval_size)"
        )
    return rows, held


def gold_fields(gold: Any) -> dict[str, Any]:
    """A verifiers row's fields from its gold (what :func:`load_rows` wrote).

    Raises:
        DataError: the gold is not a verifiers row's.
    """
    try:
        fields = json.loads(gold) if isinstance(gold, str) else dict(gold)
        fields["env"]
    except (ValueError, TypeError, KeyError):
        raise DataError(f"not a verifiers environment's gold: {str(gold)[:120]!r}") from None
    return fields


def reward_functions(env: Any) -> list[tuple[Callable[..., Any], float]]:
    """Every reward function of the environment's rubric (a RubricGroup's flattened), with its weight."""
    rubrics = getattr(env.rubric, "rubrics", None) or [env.rubric]
    return [(f, w) for r in rubrics for f, w in zip(r.funcs, r.weights, strict=True)]
