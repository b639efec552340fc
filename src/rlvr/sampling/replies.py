"""An environment's messages as the tokens that follow the policy's turn in its sequence.

An environment that answers the policy (a game, a simulated user: ``respond``, :mod:`rlvr.episodes.env`)
replies with chat messages. The policy's turn ended on a stop token it sampled (``<|im_end|>``,
``<eos>``); what the chat template writes next is appended to the row's sequence and fed to the model
with the other rows' tokens (the cache carries over, as a tool's result does): the rest of the
template's end of that turn (Qwen's newline after ``<|im_end|>``), each message as the template renders
it, and the opening of the policy's next turn (the generation prompt). The messages' own text is
tokenized with ``split_special_tokens``: an environment that echoes ``<|im_end|>`` cannot end the
policy's turn or forge a role; the template's own text is tokenized as the template means it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_USER = "\x00rlvr-turn\x00"  # a stand-in assistant turn, found again in the rendered text


def _mark(k: int) -> str:
    return f"\x00rlvr-reply-{k}\x00"


def reply_ids(
    tokenizer: Any,
    messages: Sequence[Mapping[str, str]],
    stop_text: str = "",
    chat_template: str | None = None,
    **template_kwargs: Any,
) -> list[int]:
    """The tokens after a policy turn that ended on ``stop_text`` (the text of the stop token it
    sampled) when the environment answers with ``messages`` (see the module docstring).

    A tokenizer without a chat template gets each message's text on a line of its own.

    Examples:
        >>> from rlvr.models.tiny import build_tokenizer
        >>> tok = build_tokenizer()   # its template: Q:<user>=<assistant><eos>
        >>> tok.decode(reply_ids(tok, [{"role": "user", "content": "higher"}], "<eos>"))
        'Q:higher='
    """
    marks = [_mark(k) for k in range(len(messages))]
    if not getattr(tokenizer, "chat_template", None) and chat_template is None:
        pieces: list[tuple[str, bool]] = [("\n", False)]
        for m in messages:
            pieces += [(m["content"], True), ("\n", False)]
        return _tokens(tokenizer, pieces)
    convo = [{"role": "user", "content": "q"}, {"role": "assistant", "content": _USER}]
    full = tokenizer.apply_chat_template(
        convo + [{"role": m["role"], "content": mk} for m, mk in zip(messages, marks)],
        tokenize=False,
        add_generation_prompt=True,
        chat_template=chat_template,
        **template_kwargs,
    )
    at = full.rfind(_USER)
    tail = full[at + len(_USER) :] if at >= 0 else full
    if stop_text and tail.startswith(stop_text):  # the stop the policy sampled is already in its sequence
        tail = tail[len(stop_text) :]
    pieces = []
    for k, mark in enumerate(marks):
        head, _, tail = tail.partition(mark)
        pieces += [(head, False), (messages[k]["content"], True)]
    return _tokens(tokenizer, [*pieces, (tail, False)])


def _tokens(tokenizer: Any, pieces: Sequence[tuple[str, bool]]) -> list[int]:
    """Each ``(text, is the environment's)`` piece tokenized on its own: the environment's text with
    its special tokens split, the template's as written."""
    ids: list[int] = []
    for text, theirs in pieces:
        if text:
            ids += tokenizer(text, add_special_tokens=False, split_special_tokens=theirs)["input_ids"]
    return ids
