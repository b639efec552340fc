"""Conversations on TRL: episodes of an environment that answers the policy's turns.

An environment that converses (rlvr's ``respond``; a ``verifiers`` ``MultiTurnEnv``'s
``env_response``, :mod:`rlvr.episodes.from_verifiers`) has no place in TRL's tool loop, where a
turn without a call ends the episode. Its episodes are sampled by rlvr's own loop
(:func:`rlvr.sampling.generate` with :class:`~rlvr.sampling.turns.Turns`) on TRL's model, through the
contract TRL keeps for such rollouts, ``rollout_func(prompts, trainer)``: each prompt rendered as
TRL renders it (its chat template and arguments), each reply as that template writes it after the
policy's stop, the replies out of TRL's loss (``env_mask``), the sampling log-probs the policy's.
:class:`~rlvr.integrations.trl.FailureAwareGRPOTrainer` (``conversation=``) sets it, hands it each
call's data rows, reads back its episodes and redraws the failed ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from rlvr.config import DecodingConfig
from rlvr.diagnostics.causes import Cause
from rlvr.episodes.episode import ENVIRONMENT_FAULTS, Episode
from rlvr.errors import ConfigError
from rlvr.integrations.trl.constrained import _unwrapped, lean_sampling
from rlvr.integrations.trl.rows import padded
from rlvr.integrations.trl.tool_loop import episode_rows, put_back
from rlvr.integrations.trl.views import prompt_key
from rlvr.rewards.base import prompt_text
from rlvr.sampling.decode import generate
from rlvr.sampling.replies import reply_ids
from rlvr.sampling.turns import Turns


def conversation_rollout(
    env_cls: type | None,
    kwargs: dict[str, Any],
    constrain: Any,
    max_turns: int,
    timeout_s: float,
    max_result_chars: int,
    faults: Any,
) -> ConversationRollout | None:
    """The :class:`ConversationRollout` of ``env_cls``, set as TRL's ``rollout_func`` in ``kwargs``
    (the trainer's); a rollout function of the user's, or a grammar, refused (no turn is the answer's).
    None without an environment."""
    if env_cls is None:
        return None
    if kwargs.get("rollout_func") is not None:
        raise ConfigError("conversation and rollout_func: a conversation's episodes are rlvr's rollout_func")
    if constrain is not None and (not isinstance(constrain, DecodingConfig) or constrain.constrain != "none"):
        raise ConfigError(
            "decoding.constrain with a conversation: any turn may be the last, so none is the answer's to "
            "constrain; constrain: none"
        )
    rollout = ConversationRollout(
        env_cls, max_turns=max_turns, timeout_s=timeout_s, max_result_chars=max_result_chars, faults=faults
    )
    kwargs["rollout_func"] = rollout
    return rollout


def check_conversation(trainer: Any) -> None:
    """What a conversation cannot run with on TRL, refused before the first step: TRL's own tools
    (the episode's other party is the environment), vLLM (rlvr's loop samples TRL's model itself),
    sampling settings rlvr's loop does not have."""
    if trainer.tools:
        raise ConfigError(
            "conversation with tools or environment_factory on TRL: a conversing environment's episodes "
            "run in rlvr's loop, which takes the environment's own tools"
        )
    if trainer.use_vllm:
        raise ConfigError("conversation with use_vllm: rlvr's sampling loop samples TRL's model itself; use_vllm=False")
    if not lean_sampling(trainer):
        raise ConfigError(
            "conversation on TRL samples with temperature and top_p only (rlvr's loop): leave top_k, min_p, "
            "repetition_penalty and generation_kwargs unset and temperature above 0"
        )


class ConversationRollout:
    """TRL's ``rollout_func`` for an environment that answers the policy's turns (see the module
    docstring). One call samples one episode per prompt, a fresh environment each.

    Args:
        env_cls: the rlvr environment class (``reset(row)``, ``respond(text)``, optional ``reward``).
        max_turns: the policy's turns per episode (``turn_limit`` past them).
        timeout_s: seconds a reply may take (``env_timeout`` past it).
        max_result_chars: a reply's message longer than this is cut.
        faults: injected environment faults (tests, benchmarks).
        env_faults: the causes that are the environment's.

    Attributes:
        rows: the data rows of the next call, one per prompt (set by the trainer; a call without them
            resets each environment from its prompt alone).
        attempt: the redraw round of the next call (the seeded faults' key).
        episodes: the last call's episodes, one per prompt.
    """

    def __init__(
        self,
        env_cls: type,
        *,
        max_turns: int = 4,
        timeout_s: float = 10.0,
        max_result_chars: int = 2000,
        faults: Any = None,
        env_faults: Iterable[Cause] = ENVIRONMENT_FAULTS,
    ) -> None:
        self.env_cls, self.max_turns, self.timeout_s, self.max_result_chars = (
            env_cls,
            max_turns,
            timeout_s,
            max_result_chars,
        )
        self.faults, self.env_faults = faults, frozenset(env_faults)
        self.rows: list[dict[str, Any]] | None = None
        self.attempt = 0
        self.episodes: list[Episode] = []

    def attach(self, trainer: Any) -> None:
        """The trainer is built: its settings checked (:func:`check_conversation`), its failure step's
        environment causes taken."""
        check_conversation(trainer)
        self.env_faults = trainer.fa.env_faults

    def render(self, trainer: Any, prompt: Any) -> list[int]:
        """A prompt's tokens as TRL renders it (its chat template and arguments)."""
        if isinstance(prompt, str):
            return list(trainer._tokenizer(prompt, add_special_tokens=False)["input_ids"])
        got = trainer.processing_class.apply_chat_template(
            prompt,
            tokenize=True,
            add_generation_prompt=True,
            return_dict=True,
            chat_template=trainer.chat_template,
            **cast(dict[str, Any], trainer.chat_template_kwargs),
        )
        return list(got["input_ids"])

    def _turns(
        self, trainer: Any, data: list[dict[str, Any]], keys: list[str], prompts: Sequence[Any], faults: Any, step: Any
    ) -> Turns:
        """The episodes of one call, each reply rendered by TRL's chat template."""
        tok, template = trainer._tokenizer, cast(dict[str, Any], trainer.chat_template_kwargs)

        def render_reply(messages: list[dict[str, str]], stop: str) -> list[int]:
            return reply_ids(tok, messages, stop, trainer.chat_template, **template)

        return Turns(
            tok,
            self.env_cls,
            data,
            keys,
            [prompt_text(p) for p in prompts],
            max_turns=self.max_turns,
            timeout_s=self.timeout_s,
            max_result_chars=self.max_result_chars,
            faults=faults,
            env_faults=self.env_faults,
            step=step,
            render_reply=render_reply,
        )

    def eval_turns(self, trainer: Any, chunk: list[Any]) -> tuple[Turns, list[list[int]]]:
        """Held-out conversations for rlvr's greedy evaluation (``turns_for`` of
        :func:`rlvr.sampling.evaluate.greedy_eval`): each sample with a fresh environment and no
        injected fault, rendered as the training episodes are."""
        rows = [{"prompt": s.prompt, "gold": s.gold, "task": s.task, "id": s.id, **s.extra} for s in chunk]
        keys = [f"eval:{s.id}" for s in chunk]
        return self._turns(trainer, rows, keys, [s.prompt for s in chunk], None, None), [
            self.render(trainer, s.prompt) for s in chunk
        ]

    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, Any]:
        tok = trainer._tokenizer
        rows = self.rows if self.rows is not None and len(self.rows) == len(prompts) else None
        data = (
            [{**r, "id": r.get("id", r.get("prompt_id"))} for r in rows] if rows else [{"prompt": p} for p in prompts]
        )
        step = trainer.state.global_step + 1
        keys = [f"{prompt_key(r)}:{step}:{i}:{self.attempt}" for i, r in enumerate(data)]
        turns = self._turns(trainer, data, keys, prompts, self.faults, step)
        ids = [self.render(trainer, p) for p in prompts]
        with _unwrapped(trainer) as unwrapped:
            # the global RNG, as TRL's generate draws from: TRL's seeding makes it reproducible
            b = generate(
                unwrapped,
                tok,
                ids,
                group_size=1,
                max_new_tokens=trainer.max_completion_length,
                temperature=trainer.temperature,
                top_p=trainer.top_p,
                turns=turns,
                stop_ids=list(trainer.eos_token_ids),
            )
        self.episodes = list(b.episodes or [])
        self.rows, self.attempt = None, 0  # each call's rows and round are its own
        lengths = b.completion_mask.sum(1).tolist()
        assert b.tool_mask is not None
        return {
            "prompt_ids": ids,
            "completion_ids": [b.completion_ids[i, :n].tolist() for i, n in enumerate(lengths)],
            "logprobs": [b.logprobs[i, :n].tolist() for i, n in enumerate(lengths)],
            "env_mask": [(1 - b.tool_mask[i, :n]).tolist() for i, n in enumerate(lengths)],
        }


def messages_of(episode: Episode) -> list[dict[str, str]]:
    """An episode's completion as chat messages (the policy's turns and the environment's), what TRL's
    reward functions and logs read as the completion."""
    return [{"role": t.role, "content": t.content} for t in episode.turns]


def converse(
    trainer: Any, gen: Any, prompts: list[Any], generate_rows: Callable[[list[Any]], Sequence[Any]]
) -> tuple[Any, ...]:
    """TRL's ``_generate`` of a training batch through the conversation's ``rollout_func``
    (``generate_rows``: TRL's own ``_generate`` of some prompts), its data rows handed to it, each row
    read back as its episode, the failed episodes redrawn whole with fresh environments by the redraw
    loop every engine shares, every process joining every round."""
    conv = trainer.conversation
    step = trainer.state.global_step + 1
    first: list[Any] = []  # the first call's whole tuple (TRL's extra fields, images)

    def drawn(sub: list[int], attempt: int) -> Any:
        rows = [gen.rows[i] for i in sub]
        conv.rows, conv.attempt = rows, attempt
        got = list(generate_rows([prompts[i] for i in sub]))
        eps = conv.episodes
        got[3] = [messages_of(e) for e in eps]  # the whole conversation, both parties
        got[7] = [[] for _ in eps]  # no tool images: one (empty) entry per row, as the tool loop has
        first[:] = first or got
        return episode_rows(trainer, rows, got, eps, [None] * len(sub), step)

    kept = trainer._redraw(
        gen, drawn(list(range(len(prompts))), 0), lambda bad, attempt, width: drawn(padded(bad, width), attempt)
    )
    put_back(first, kept)
    gen.episodes = kept.episodes
    return tuple(first)
