"""The decode loop: G sampled completions per prompt, every row of the batch decoded together.

One step samples a token for each row still going (:mod:`rlvr.sampling.draws`) and feeds it back
through the model's cache (:mod:`rlvr.sampling.steppers`); with a grammar each row's logits are
masked first and forced tokens jump ahead (:mod:`rlvr.sampling.grammar`); with tools a row whose
token closes a call gets the result appended (:mod:`rlvr.sampling.tool_turns`); rows that ended are
dropped from the lean decoder once they are :data:`COMPACT_AT` of it (:func:`_compact`). Sampling
stops as soon as every row has ended; the result is a :class:`~rlvr.sampling.batch.RolloutBatch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from rlvr.models.fast_decode import FastDecoder, supports
from rlvr.models.graphed import GraphedDecoder, bucket
from rlvr.sampling.batch import FinishReason, RolloutBatch
from rlvr.sampling.draws import PositionDraws, sample_tokens
from rlvr.sampling.grammar import GrammarRows
from rlvr.sampling.plain import decode_plain
from rlvr.sampling.steppers import HFStepper, stop_ids_of
from rlvr.sampling.tool_turns import end_turns, start_turns, turns_step

COMPACT_AT = 0.5  # drop ended rows from decoding once they are this share of the rows decoded


@dataclass
class _Rows:
    """What decoding has written for each of the ``n`` rows: tokens and their log-probs by position,
    how many each has (``pos``), which have ended, and (with tools) which tokens were the tools'."""

    out_tok: torch.Tensor
    out_lp: torch.Tensor
    pos: torch.Tensor
    done: torch.Tensor
    tools: torch.Tensor | None = None


def _left_padded(rows: list[list[int]], pad: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The prompts as one left-padded ``[N, Tp]`` tensor and its attention mask."""
    n, tp = len(rows), max(len(p) for p in rows)
    ids = torch.full((n, tp), pad, dtype=torch.long)
    mask = torch.zeros((n, tp), dtype=torch.long)
    for i, p in enumerate(rows):
        ids[i, tp - len(p) :] = torch.tensor(p)
        mask[i, tp - len(p) :] = 1
    return ids.to(device), mask.to(device)


def _prefill(
    model: Any, ids: torch.Tensor, mask: torch.Tensor, group_size: int, capacity: int, decoder: str, dtype: Any
) -> tuple[Any, torch.Tensor]:
    """The stepper for ``model`` and the logits after the prompts: the lean decoder (``decoder``:
    ``lean``; ``static`` for its static one-token step; ``graph`` for that step replayed from a CUDA
    graph, :mod:`rlvr.models.graphed`) prefills each group's prompt once and writes its cache to the
    G rows; any other model (or ``decoder: model``) runs its own forward."""

    stepper: Any
    if decoder != "model" and supports(model, lora=True):
        stepper = FastDecoder(model, len(ids), capacity, dtype=dtype, static=decoder in ("static", "graph"))
        if decoder == "graph":
            stepper = GraphedDecoder(stepper)
        logits = stepper.prefill(ids[::group_size], mask[::group_size], repeat=group_size)
        return stepper, logits.repeat_interleave(group_size, 0) if group_size > 1 else logits
    stepper = HFStepper(model, dtype)
    return stepper, stepper.prefill(ids, mask)


def _compact(
    stepper: Any, done: torch.Tensor, active: torch.Tensor, tok: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop the rows that ended from the lean decoder once they are :data:`COMPACT_AT` of the rows it
    runs (one straggler then no longer costs a full batch per token): ``(tok, active)`` of the rest.
    A decoder that replays recorded steps keeps a batch-size bucket (:func:`~rlvr.models.graphed.bucket`),
    ended rows filling it, so it records a few graphs, not one a row."""
    ended = done[active]
    gone = int(ended.sum()) if hasattr(stepper, "keep") else 0
    if gone < COMPACT_AT * len(active):
        return tok, active
    size = bucket(len(active) - gone) if getattr(stepper, "buckets", False) else len(active) - gone
    if size >= len(active):
        return tok, active
    keep = torch.argsort(ended.to(torch.int8), stable=True)[:size]  # the rows going first, in order
    stepper.keep(keep)
    return tok[keep], active[keep]


def _feed(
    stepper: Any, tok: torch.Tensor, rows: _Rows, active: torch.Tensor, start: torch.Tensor | None, limit: int
) -> torch.Tensor:
    """One forward: each active row's sampled token, then the tokens it took beyond it since ``start``
    (forced by the grammar, or a tool's result; None: none took any). A row that ended needs no more."""
    extra = torch.where(rows.done[active], 0, rows.pos[active] - start[active]) if start is not None else None
    k = 1 + int(extra.max()) if extra is not None else 1
    if extra is None or k == 1:
        return stepper.step(tok)
    at = (start[active][:, None] + torch.arange(k - 1, device=tok.device)).clamp(max=limit - 1)  # type: ignore[index]
    feed = torch.cat([tok[:, None], rows.out_tok[active].gather(1, at)], 1)
    return stepper.step(feed, 1 + extra)


def generate(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    *,
    group_size: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    policy_version: int = 0,
    fast: bool = True,
    constrain: Any = None,
    dtype: torch.dtype | None = None,
    jump: bool = True,
    turns: Any = None,
    stop_ids: Sequence[int] | None = None,
    static_cache: bool = False,
    cuda_graphs: bool = False,
) -> RolloutBatch:
    """Sample ``group_size`` completions for each tokenised prompt.

    Args:
        prompts: token ids per prompt (each repeated ``group_size`` times, in order).
        temperature: 0 for greedy decoding.
        generator: the RNG for sampling (seed it per step for reproducible runs).
        fast: use the lean decoder when the architecture allows it.
        constrain: a :class:`rlvr.decoding.constrain.Constrainer` to mask tokens with (the masks are
            kept in the batch so training can apply them again).
        dtype: decode in this precision (``torch.bfloat16``: the lean decoder's bfloat16 weight copy,
            or the model's own forward under autocast); default the model's.
        jump: under ``constrain``, jump forward: the tokens the masks force (one allowed token: an
            opening or closing the budget makes, a grammar's fixed text, the final stop) are taken
            without sampling and fed to the model together with the sampled token before them, one
            forward for the run instead of one per token. The samples and masks are those of decoding
            token by token (same draws); only the forced tokens' logits are never computed.
        turns: a :class:`rlvr.sampling.turns.Turns`: every row is a multi-turn episode; a tool call's
            result is appended to the row's sequence and fed in the next forward (the cache carries
            over), marked in ``tool_mask``. ``max_new_tokens`` is then the episode's whole budget.
            Its environments are closed when decoding ends (:meth:`~rlvr.sampling.turns.Turns.close`).
        stop_ids: the ids a completion ends on (default :func:`stop_ids_of`): the first one sampled
            ends the row; it is the last token in the mask, nothing after it is.
        static_cache: the lean decoder's one-token steps keep the same shapes at every position
            (:class:`~rlvr.models.fast_decode.FastDecoder`'s ``static``), the form a captured CUDA
            graph needs; the same samples as the dynamic steps for a fixed seed.
        cuda_graphs: the static step recorded once per batch size and replayed as a CUDA graph
            (:class:`~rlvr.models.graphed.GraphedDecoder`; rows that end are dropped by batch-size
            buckets); off CUDA the step is replayed eagerly through the same buffers, said once.
            The same samples as the dynamic steps for a fixed seed.

    Sampling runs under ``torch.inference_mode`` (less per-op bookkeeping than ``no_grad``); the
    returned tensors are copied out of it so training can use them.
    """
    if turns is not None and constrain is not None and constrain.mode != "answer":
        raise ValueError(
            "constrained decoding of multi-turn episodes constrains the final answer segment only "
            "(decoding.constrain: answer); full would have to admit tool calls from the first token"
        )
    if turns is not None and constrain is not None and turns.responding:
        raise ValueError(
            "constrained decoding with an environment that answers the policy's turns (respond): every "
            "turn may be the last, so no segment is the answer's; decoding.constrain: none"
        )
    was_training = model.training
    model.eval()
    decoder = "graph" if cuda_graphs else "static" if static_cache else "lean" if fast else "model"
    try:
        with torch.inference_mode():
            b = _decode(
                model, tokenizer, prompts, group_size, max_new_tokens, temperature, top_p, generator,
                policy_version, decoder, constrain, dtype, jump, turns, stop_ids,
            )  # fmt: skip
    finally:
        if was_training:
            model.train()
        if turns is not None:  # the episodes are over (judged): their environments' sessions end
            turns.close()
    return b.copied()


def _decode(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    group_size: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    generator: torch.Generator | None,
    policy_version: int,
    decoder: str,
    constrain: Any,
    dtype: Any,
    jump: bool,
    turns: Any,
    stop_ids: Sequence[int] | None,
) -> RolloutBatch:
    """:func:`generate`'s loop, under inference mode."""
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id
    stops = tuple(stop_ids) if stop_ids is not None else stop_ids_of(model, tokenizer)
    stop_t = torch.tensor(stops, dtype=torch.long, device=device)
    prompt_ids, prompt_mask = _left_padded([p for p in prompts for _ in range(group_size)], pad, device)
    n, limit = len(prompt_ids), max_new_tokens
    grammar = GrammarRows(constrain, n, limit) if constrain is not None else None
    lead = grammar.lead if grammar is not None else []
    pre_ids, pre_mask = prompt_ids, prompt_mask
    if lead:  # tokens every row is forced to start with: prefilled with the prompt
        lead_t = torch.tensor(lead, device=device).expand(n, -1)
        pre_ids, pre_mask = torch.cat([prompt_ids, lead_t], 1), torch.cat([prompt_mask, torch.ones_like(lead_t)], 1)
    stepper, logits = _prefill(model, pre_ids, pre_mask, group_size, prompt_ids.shape[1] + limit, decoder, dtype)
    rows = _Rows(
        out_tok=torch.full((n, limit), pad, dtype=torch.long, device=device),
        out_lp=torch.zeros((n, limit), device=device),
        pos=torch.full((n,), len(lead), dtype=torch.long, device=device),
        done=torch.zeros(n, dtype=torch.bool, device=device),
    )
    if grammar is not None:
        grammar.prime(rows.out_tok, rows.done)
    draws = PositionDraws(n, limit, temperature, generator, device)
    if grammar is None and turns is None:  # each row at the same position a step: few waits on the device
        decode_plain(stepper, logits, rows, draws, temperature, top_p, stop_t, pad, _compact)
    closers = start_turns(turns, rows, logits.shape[-1]) if turns is not None else None
    draws.upto(len(lead))  # the draws the prefilled steps would have made
    jumping = grammar is not None and jump
    active = torch.arange(n, device=device)  # the rows the decoder still runs
    out_tok, pos, done = rows.out_tok, rows.pos, rows.done
    while not bool(done.all()):
        at = pos[active]
        if grammar is not None:  # told which rows the logits are, once ended ones were dropped
            grammar.mask(logits, done, active, pos)
        draws.upto(int(at[~done[active]].max()) + 1)  # the positions rows still going sample at
        tok, lp = sample_tokens(logits, temperature, top_p, draws.at(at, active))
        ended = done[active]  # rows still decoded after their end get the pad
        tok = tok.masked_fill(ended, pad)
        go = (~ended).nonzero().squeeze(1)
        rows_go = active[go]
        out_tok[rows_go, at[go]] = tok[go]
        rows.out_lp[rows_go, at[go]] = lp[go]
        if grammar is not None:
            grammar.take(rows_go, tok[go])
        pos[rows_go] += 1
        done[rows_go] = torch.isin(tok[go], stop_t) | (pos[rows_go] >= limit)
        start = pos.clone() if turns is not None or jumping else pos  # read only when rows moved ahead
        moved = False  # some row took tokens beyond its sampled one (forced, or a tool's result)
        if turns is not None:
            assert rows.tools is not None and closers is not None
            moved = turns_step(
                turns,
                rows_go,
                tok[go],
                done,
                pos,
                out_tok,
                rows.tools,
                closers,
                stop_t,
                limit,
                grammar and grammar.state,
            )
        if jumping:  # tokens the masks force next are taken now and fed in the same forward
            assert grammar is not None
            on_forced = None
            if turns is not None:  # an episode the forced tokens ended (its closed answer's stop)

                def on_forced(r: torch.Tensor, tk: torch.Tensor) -> None:
                    end_turns(turns, r, tk, done, pos, out_tok, stop_t, rows.tools, limit)

            moved = grammar.jump(rows_go, done, pos, out_tok, stop_t, limit, on_forced) or moved
        if bool(done.all()):
            break
        tok, active = _compact(stepper, done, active, tok)
        logits = _feed(stepper, tok, rows, active, start if moved else None, limit)
    return _batch(
        rows, draws, grammar, turns, tokenizer, prompt_ids, prompt_mask, stops, stop_t, pad, policy_version, group_size
    )


def _batch(
    rows: _Rows,
    draws: PositionDraws,
    grammar: GrammarRows | None,
    turns: Any,
    tokenizer: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    stops: tuple[int, ...],
    stop_t: torch.Tensor,
    pad: int,
    policy_version: int,
    group_size: int,
) -> RolloutBatch:
    """The rollout batch of what decoding wrote: each row's tokens up to and including its first stop."""
    steps = int(rows.pos.max())
    draws.upto(steps)  # as many draws as decoding token by token makes: the generator ends in the same state
    out_tok, out_lp = rows.out_tok[:, :steps].clone(), rows.out_lp[:, :steps]
    # the mask covers each row's tokens up to and including its first stop, nothing after it
    # (positions, not ids: a stop id may also be the pad id, as Qwen's <|endoftext|> is)
    at = torch.arange(out_tok.shape[1], device=out_tok.device)
    stopped = torch.isin(out_tok, stop_t) & (at[None] < rows.pos[:, None])
    # [N] the first stop, else the end (no column at all when no row sampled: every episode ended at reset)
    first = torch.where(stopped.any(1), stopped.float().argmax(1), rows.pos) if steps else rows.pos.clone()
    if turns is not None and any(turns.replied):  # a turn the environment answered: its stop is not the row's end
        replied = torch.tensor(turns.replied, device=first.device)
        first = torch.where(replied, rows.pos, first)
    mask = ((at[None] <= first[:, None]) & (at[None] < rows.pos[:, None])).long()
    finish: list[FinishReason] = ["eos" if e else "length" for e in stopped.any(1).tolist()]
    if turns is not None:  # an episode's finish and text are its own: how it ended, its final answer
        finish = [ep.finish for ep in turns.episodes]
        texts = [ep.answer for ep in turns.episodes]
    else:
        texts = tokenizer.batch_decode(out_tok.masked_fill(mask == 0, pad), skip_special_tokens=True)
    return RolloutBatch(
        prompt_ids,
        prompt_mask,
        out_tok,
        mask,
        out_lp * mask,
        finish,
        texts,
        policy_version,
        group_size,
        bitmask=grammar.bits[:, :steps] if grammar is not None else None,
        decode_stats=grammar.state.stats if grammar is not None else None,
        tool_mask=rows.tools[:, :steps] * mask if rows.tools is not None else None,
        episodes=list(turns.episodes) if turns is not None else None,
        stop_ids=stops,
    )
