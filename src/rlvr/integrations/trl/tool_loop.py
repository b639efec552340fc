"""TRL's tool loop under rlvr's guards: each row's tools (TRL's standalone ones and its environment's
methods) guarded, each row's :class:`rlvr.episodes.Episode` read back from what TRL's loop returned,
fresh environments for redrawn episodes, tool results tokenized as ordinary text, held-out episodes
rendered as TRL renders them, and TRL's ``tools`` / ``environment_factory`` checked before TRL builds
anything. Called by :class:`FailureAwareGRPOTrainer`."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any, cast

from trl import GRPOTrainer
from trl.chat_template_utils import supports_tool_calling

from rlvr.config import DecodingConfig
from rlvr.errors import ConfigError
from rlvr.integrations.trl.episodes import (
    EvalEnvironment,
    GuardedTools,
    check_tools,
    dead_reason,
    episode_of,
    guard_factories,
    row_tools,
    trl_methods,
)
from rlvr.integrations.trl.rows import TRLRows
from rlvr.integrations.trl.views import call_rewards, prompt_key, row_views
from rlvr.rewards.base import prompt_text
from rlvr.sampling.turns import Turns

#: The per-row entries of TRL's ``_generate`` tuple a redraw replaces: prompt ids, completion ids, tool
#: mask, messages, log-probs, tool images.
PER_ROW = (0, 1, 2, 3, 4, 7)


def episode_rows(
    trainer: Any, rows: list[dict[str, Any]], got: Sequence[Any], eps: list[Any], envs: list[Any], step: int
) -> TRLRows:
    """Episodes as the redraw loop reads them: TRL's ``_generate`` tuple ``got`` for the data ``rows``,
    each row scored by TRL's rewards and seen with its episode, its environment (``envs``) kept."""
    values = call_rewards(trainer, rows, got[3], got[1])
    views = row_views(trainer, rows, got[1], [e.answer for e in eps], got[3], values, eps)
    columns = tuple(got[k] for k in PER_ROW) + (envs,)
    return TRLRows(columns, views, trainer.fa.causes(views, step), eps)


def put_back(out: list[Any], rows: TRLRows) -> None:
    """The redrawn ``rows``' columns into TRL's ``_generate`` tuple ``out`` (a list)."""
    for k, column in zip(PER_ROW, rows.columns):
        out[k] = column


def guard_rows(trainer: Any, rows: list[int], envs: list[Any], step: int, attempt: int) -> list[Any]:
    """Each row's tools (TRL's standalone ones and its environment's methods) under a fresh guard."""

    guards = []
    for j, i in enumerate(rows):
        env = envs[j]
        pid = prompt_key(trainer._gen.rows[i]) if trainer._gen is not None else str(i)
        guards.append(
            GuardedTools(
                row_tools(trainer._standalone_tools, env),
                key=f"{pid}:{step}:{i}:{attempt}",
                timeout_s=trainer.tool_timeout_s,
                max_result_chars=trainer.max_result_chars,
                faults=trainer.env_faults,
                loop=getattr(trainer, "async_loop", None),
                dead=dead_reason(env) if env is not None else None,
                step=step,
            )
        )
    return guards


@contextlib.contextmanager
def tool_batch(trainer: Any, guards: list[Any], envs: list[Any], sub: list[int]) -> Iterator[None]:
    """TRL's per-batch tool state set for a redraw of the rows ``sub`` (their guards, their fresh
    environments, one generation each: each redrawn row is its own prompt, as vLLM groups them),
    the batch's own restored after."""
    t = trainer
    saved = (t._sync_tool_dicts, t._async_tool_dicts, t.environments, getattr(t, "_batch_environments", None))
    num_generations = t.num_generations
    try:
        t._sync_tool_dicts, t._async_tool_dicts = list(guards), [{} for _ in sub]
        if t.environments is not None:
            t.environments = list(envs)
            t._batch_environments = [cast(list[Any], saved[3])[i] for i in sub]
        t.num_generations = 1
        yield
    finally:
        t._sync_tool_dicts, t._async_tool_dicts, t.environments, batch_envs = saved
        t.num_generations = num_generations
        if batch_envs is not None:
            t._batch_environments = batch_envs


def fresh(trainer: Any, rows: list[dict[str, Any]], sub: list[int]) -> tuple[list[Any], list[Any]]:
    """Fresh environments for the rows ``sub`` (reset from their data rows, as TRL resets them) and
    their prompts with the new observations."""
    prompts, envs = [], []
    for i in sub:
        x = rows[i]
        prompt = x.get("prompt", [{"role": "user", "content": ""}])
        env = None
        if trainer.environment_factories is not None:
            name = trainer._batch_environments[i]
            env = cast(dict[Any, Any], trainer.environment_factories)[name]()
            kw = {k: v for k, v in x.items() if k != "environment"} if trainer._multi_environment else x
            obs = env.reset(**kw)
            last = prompt[-1] if isinstance(prompt, list) and prompt else {}
            if isinstance(obs, str) and obs and isinstance(last.get("content"), str):
                prompt = prompt[:-1] + [{**last, "content": last["content"] + obs}]
        prompts.append(prompt)
        envs.append(env)
    return prompts, envs


def read_episodes(
    trainer: Any, out: list[Any], guards: list[Any], prompts: list[Any], rows: list[int], envs: list[Any]
) -> list[Any]:
    """Each row's :class:`rlvr.episodes.Episode` from what TRL's loop returned (``out``: its
    ``_generate`` tuple) and the guards' outcomes; an rlvr environment (``envs``: each row's, the
    one its episode ran in) judges its own answer."""
    stop = {*trainer.eos_token_ids, trainer._tokenizer.pad_token_id}
    eps = []
    for j, g in enumerate(guards):
        ep = episode_of(
            out[3][j],
            out[1][j],
            out[2][j] if out[2] is not None else None,
            g.outcomes,
            prompt=prompt_text(prompts[j]),
            tokenizer=trainer._tokenizer,
            stop_ids=stop,
            max_iterations=trainer.max_iterations,
            dead=g.dead,
            env_faults=trainer.fa.env_faults,
        )
        judge = getattr(getattr(envs[j], "_rlvr_env", None), "reward", None)
        if callable(judge) and ep.fault(trainer.fa.env_faults) is None and trainer._gen is not None:
            ep.judge(judge, trainer._gen.rows[rows[j]], len(ep.turns))
        eps.append(ep)
    return eps


def tool_suffix_ids(trainer: Any, tool_messages: list[dict[str, Any]]) -> list[int]:
    """TRL's tokens of the tool results, except that a result's text never becomes special tokens:
    a tool that prints ``<eos>`` or ``<|im_end|>`` gives those characters as ordinary tokens (as
    rlvr's engine tokenizes tool results), not a stop or a turn boundary the policy never wrote.
    Results without a special token's text go through TRL unchanged."""
    tok = trainer._tokenizer
    specials = [s for s in getattr(tok, "all_special_tokens", []) if s]
    texts = [m.get("content") for m in tool_messages]
    if trainer._is_vlm or not any(isinstance(c, str) and any(s in c for s in specials) for c in texts):
        return cast(list[int], GRPOTrainer._get_tool_suffix_ids(trainer, tool_messages))
    marks = [f"\x00rlvr-result-{k}\x00" for k in range(len(tool_messages))]
    dummy = [
        {"role": "user", "content": "dummy"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}],
        },
    ]
    render = partial(
        tok.apply_chat_template,
        tokenize=False,
        chat_template=trainer.chat_template,
        **cast(dict[str, Any], trainer.chat_template_kwargs),
    )
    prefix = render(dummy, add_generation_prompt=False)
    full = render(dummy + [dict(m, content=mk) for m, mk in zip(tool_messages, marks)], add_generation_prompt=True)
    suffix = full[len(prefix) :] if full.startswith(prefix) else full
    ids: list[int] = []
    for k, mark in enumerate(marks):  # the template's own text as TRL tokenizes it, each result split
        head, _, suffix = suffix.partition(mark)
        ids += tok(head, add_special_tokens=False)["input_ids"]
        content = texts[k] if isinstance(texts[k], str) else json.dumps(texts[k])
        ids += tok(content, add_special_tokens=False, split_special_tokens=True)["input_ids"]
    return ids + list(tok(suffix, add_special_tokens=False)["input_ids"])


def eval_turns(trainer: Any, chunk: list[Any]) -> tuple[Any, list[list[int]]]:
    """Held-out episodes for rlvr's greedy evaluation (``turns_for`` of
    :func:`rlvr.sampling.evaluate.greedy_eval`): each sample with a fresh environment and no injected
    fault, its turns rendered exactly as TRL's tool loop renders them (the chat template's text
    after a call, then TRL's tool suffix), so the policy is measured in the format it trains in; a
    conversation's as its rollout renders them."""
    if trainer.conversation is not None:
        return cast(tuple[Any, list[list[int]]], trainer.conversation.eval_turns(trainer, chunk))
    tok = trainer._tokenizer
    rows = [{"prompt": s.prompt, "gold": s.gold, "task": s.task, "prompt_id": s.id, **s.extra} for s in chunk]
    if trainer._after_call is None:
        trainer._after_call = after_call_ids(trainer.processing_class, trainer.chat_template)

    def render(result: str, name: str) -> list[int]:
        assert trainer._after_call is not None
        return trainer._after_call + list(
            trainer._get_tool_suffix_ids([{"role": "tool", "name": name or "tool", "content": result}])
        )

    turns = Turns(
        tok,
        lambda: EvalEnvironment(trainer),
        rows,
        [f"eval:{s.id}" for s in chunk],
        [prompt_text(s.prompt) for s in chunk],
        max_turns=min(trainer.max_iterations, 15) + 1,
        timeout_s=trainer.tool_timeout_s,
        max_result_chars=trainer.max_result_chars,
        env_faults=trainer.fa.env_faults,
        render_result=render,
    )
    prompts = []
    for s, obs in zip(chunk, turns.observations):
        msgs = [dict(m) for m in s.prompt] if isinstance(s.prompt, list) else [{"role": "user", "content": s.prompt}]
        if obs:  # joined as TRL joins an observation: appended to the last message
            msgs[-1]["content"] = f"{msgs[-1]['content']}{obs}"
        ids = trainer.processing_class.apply_chat_template(
            msgs,
            tools=trainer.tools or None,
            tokenize=True,
            add_generation_prompt=True,
            return_dict=True,
            chat_template=trainer.chat_template,
            **cast(dict[str, Any], trainer.chat_template_kwargs),
        )
        prompts.append(list(ids["input_ids"]))
    return turns, prompts


def check_episodes(kwargs: dict[str, Any], constrain: Any) -> Any:
    """TRL's ``tools`` / ``environment_factory`` checked before TRL builds anything (every tool can be
    described; one environment can be built; the chat template can render a tool call); returns the
    factory guarded (:func:`rlvr.integrations.trl.episodes.guard_factories`)."""

    if (isinstance(constrain, DecodingConfig) and constrain.constrain != "none") or (
        constrain is not None and not isinstance(constrain, DecodingConfig)
    ):
        raise ConfigError(
            "decoding.constrain with tools: the answer grammar would have to admit tool calls, which "
            "it does not; constrain: none for episodes with tools"
        )
    check_tools(kwargs.get("tools") or [], "tools")
    factory = kwargs.get("environment_factory")
    factories = factory if isinstance(factory, dict) else ({None: factory} if factory is not None else {})
    for name, f in factories.items():
        where = f"environment_factory[{name!r}]" if name is not None else "environment_factory"
        try:
            env = f()
        except Exception as e:
            raise ConfigError(f"{where}: the environment cannot be built: {type(e).__name__}: {e}") from None
        if not callable(getattr(env, "reset", None)):
            raise ConfigError(f"{where}: {type(env).__name__} has no reset(**row) method")
        check_tools(trl_methods(env), where)
    tok = kwargs.get("processing_class")
    if tok is not None and not supports_tool_calling(tok):
        raise ConfigError(
            "tools on TRL: the tokenizer's chat template cannot render a tool call and its result "
            "(TRL renders every turn through it); use a model whose template does (Qwen2.5/3, "
            "Llama 3.1, rlvr's tiny model), or set tokenizer.chat_template to one that does"
        )
    return guard_factories(factory)


def after_call_ids(tok: Any, chat_template: str | None) -> list[int]:
    """The tokens the chat template writes after a tool call, to the end of the assistant's turn (what
    the policy emits before TRL appends the result: ``<eos>`` for the tiny model, ``<|im_end|>`` and
    a newline for Qwen)."""
    call = [{"type": "function", "function": {"name": "f", "arguments": {}}}]
    text = tok.apply_chat_template(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": call}],
        tokenize=False,
        chat_template=chat_template,
    )
    at = text.rfind("</tool_call>")
    tail = text[at + len("</tool_call>") :] if at >= 0 else ""
    return list(tok(tail, add_special_tokens=False)["input_ids"]) if tail else []
