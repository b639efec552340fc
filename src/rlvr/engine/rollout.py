"""Rollouts: G sampled completions per prompt with everything the trainer needs to keep.

Each rollout records its token ids, the log-prob of every sampled token under the
sampling policy (the full tempered distribution, as the training forward computes
it, so ``num_iterations = 1`` needs no extra forward pass for the old log-probs),
why it ended (``eos``, or ``length``: truncated) and the policy version that
produced it.

The sampling loop is ours (later features hook decoding per token): Llama-family
models run through :class:`rlvr.models.fast_decode.FastDecoder`; any other causal
LM through its own forward with a KV cache. Sampling stops as soon as every
sequence has ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import torch

FinishReason = Literal["eos", "length"]

COMPACT_AT = 0.5  # drop ended rows from decoding once they are this share of the rows decoded


@dataclass
class RolloutBatch:
    """``N = prompts x G`` rollouts, grouped: rows ``g*G ... g*G + G-1`` share prompt ``g``.

    Attributes:
        prompt_ids: ``[N, Tp]`` left-padded prompt tokens.
        prompt_mask: ``[N, Tp]`` 1 for real prompt tokens.
        completion_ids: ``[N, Tc]`` sampled tokens, right-padded with the pad id.
        completion_mask: ``[N, Tc]`` 1 for sampled tokens (the eos included).
        logprobs: ``[N, Tc]`` sampling log-probs (0 where masked).
        finish: per rollout, ``eos`` or ``length``.
        texts: decoded completions (special tokens removed).
        policy_version: the optimizer step whose weights sampled this batch.
        group_size: G.
        versions: per rollout, the policy version that sampled it (batches merged across steps,
            e.g. groups generated ahead by dynamic sampling, mix versions).
        bitmask: ``[N, Tc, W]`` packed sampling masks of constrained decoding (-1: unmasked);
            ``None`` when nothing was constrained. The training forward applies them again.
        decode_stats: what the masks did (:class:`rlvr.decoding.constrain.DecodeStats`), if any.
        tool_mask: ``[N, Tc]`` 1 for tool-result tokens appended to a multi-turn episode (attended
            to, never in the loss); ``None`` for single-turn rollouts.
        episodes: per rollout, its :class:`rlvr.episodes.Episode` (turns, events with their causes),
            for multi-turn rollouts; ``texts`` then hold each episode's final answer.
        stop_ids: the token ids a completion ends on (every stop the model and tokenizer declare).
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    logprobs: torch.Tensor
    finish: list[FinishReason]
    texts: list[str]
    policy_version: int
    group_size: int
    versions: list[int] = field(default_factory=list)
    bitmask: torch.Tensor | None = None
    decode_stats: Any = None
    tool_mask: torch.Tensor | None = None
    episodes: list[Any] | None = None
    stop_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.versions:
            self.versions = [self.policy_version] * self.completion_ids.shape[0]

    @property
    def truncated(self) -> torch.Tensor:
        """``[N]`` bool: the rollout hit the length limit before its eos."""
        return torch.tensor([f == "length" for f in self.finish])

    @property
    def loss_mask(self) -> torch.Tensor:
        """``[N, Tc]`` the tokens the policy sampled (tool results left out)."""
        if self.tool_mask is None:
            return self.completion_mask
        return self.completion_mask * (1 - self.tool_mask.to(self.completion_mask.dtype))

    @property
    def lengths(self) -> torch.Tensor:
        """``[N]`` completion lengths in tokens."""
        return self.completion_mask.sum(1)

    def cut(self, truncation: Any, tokenizer: Any) -> RolloutBatch:
        """A copy with the rows an injected :class:`rlvr.decoding.truncation.Truncation` hits cut
        short, as a smaller token budget would have ended them: tokens after the cut padded and
        masked (their log-probs with them), ``finish`` ``length``, the text decoded again.
        Single-turn rollouts only (an episode has its own budget, ``env.max_tokens``)."""
        assert self.episodes is None, "episodes are not cut (env.max_tokens is their budget)"
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        ids, mask, lp = self.completion_ids.clone(), self.completion_mask.clone(), self.logprobs.clone()
        finish, texts = list(self.finish), list(self.texts)
        # where each row ends (a pad the policy sampled mid-row is masked, so this is not the mask's sum)
        pos = torch.arange(1, mask.shape[1] + 1, device=mask.device)
        ends = (mask.bool() * pos).amax(1).tolist() if mask.shape[1] else [0] * mask.shape[0]
        for i in range(ids.shape[0]):
            prompt = self.prompt_ids[i][self.prompt_mask[i].bool()].tolist()
            keep = truncation.length(prompt, ids[i, : ends[i]].tolist(), set(self.stop_ids) or {tokenizer.eos_token_id})
            if keep is None:
                continue
            ids[i, keep:], mask[i, keep:], lp[i, keep:] = pad, 0, 0.0
            finish[i] = "length"
            texts[i] = tokenizer.decode(ids[i, :keep].tolist(), skip_special_tokens=True)
        return RolloutBatch(
            self.prompt_ids,
            self.prompt_mask,
            ids,
            mask,
            lp,
            finish,
            texts,
            self.policy_version,
            self.group_size,
            list(self.versions),
            self.bitmask,
            self.decode_stats,
            self.tool_mask,
            None,
            self.stop_ids,
        )

    def select_groups(self, groups: list[int]) -> RolloutBatch:
        """The batch restricted to the given groups (in that order)."""
        g = self.group_size
        return self._take([k * g + j for k in groups for j in range(g)], g)

    def select_rows(self, rows: list[int]) -> RolloutBatch:
        """These rows alone (in that order), each a group of its own; widths unchanged."""
        return self._take(rows, 1)

    def _take(self, rows: list[int], group_size: int) -> RolloutBatch:
        idx = torch.tensor(rows, dtype=torch.long)
        return RolloutBatch(
            self.prompt_ids[idx],
            self.prompt_mask[idx],
            self.completion_ids[idx],
            self.completion_mask[idx],
            self.logprobs[idx],
            [self.finish[i] for i in rows],
            [self.texts[i] for i in rows],
            self.policy_version,
            group_size,
            [self.versions[i] for i in rows],
            self.bitmask[idx] if self.bitmask is not None else None,
            self.decode_stats,
            self.tool_mask[idx] if self.tool_mask is not None else None,
            [self.episodes[i] for i in rows] if self.episodes is not None else None,
            self.stop_ids,
        )

    def concat(self, other: RolloutBatch, pad_id: int) -> RolloutBatch:
        """This batch's groups followed by ``other``'s (prompts re-padded on the left, completions on
        the right)."""
        tp = max(self.prompt_ids.shape[1], other.prompt_ids.shape[1])
        tc = max(self.completion_ids.shape[1], other.completion_ids.shape[1])

        def left(t: torch.Tensor, fill: float) -> torch.Tensor:
            out = torch.full((t.shape[0], tp), fill, dtype=t.dtype, device=t.device)
            out[:, tp - t.shape[1] :] = t
            return out

        def right(t: torch.Tensor, fill: float) -> torch.Tensor:
            out = torch.full((t.shape[0], tc), fill, dtype=t.dtype, device=t.device)
            out[:, : t.shape[1]] = t
            return out

        return RolloutBatch(
            torch.cat([left(self.prompt_ids, pad_id), left(other.prompt_ids, pad_id)]),
            torch.cat([left(self.prompt_mask, 0), left(other.prompt_mask, 0)]),
            torch.cat([right(self.completion_ids, pad_id), right(other.completion_ids, pad_id)]),
            torch.cat([right(self.completion_mask, 0), right(other.completion_mask, 0)]),
            torch.cat([right(self.logprobs, 0.0), right(other.logprobs, 0.0)]),
            self.finish + other.finish,
            self.texts + other.texts,
            max(self.policy_version, other.policy_version),
            self.group_size,
            self.versions + other.versions,
            _cat_bits(self, other, tc),
            self.decode_stats,
            _cat_tools(self, other, tc),
            _cat_episodes(self, other),
            self.stop_ids or other.stop_ids,
        )

    def replace_rows(self, rows: list[int], new: RolloutBatch, pad_id: int) -> RolloutBatch:
        """A copy with ``rows`` taken from ``new`` (resampled rollouts of the same prompts, in order);
        completions are re-padded to the longer of the two."""
        tc = max(self.completion_ids.shape[1], new.completion_ids.shape[1])

        def widen(t: torch.Tensor, fill: float) -> torch.Tensor:
            out = torch.full((t.shape[0], tc), fill, dtype=t.dtype, device=t.device)
            out[:, : t.shape[1]] = t
            return out

        ids, mask, lp = widen(self.completion_ids, pad_id), widen(self.completion_mask, 0), widen(self.logprobs, 0.0)
        n_ids, n_mask, n_lp = widen(new.completion_ids, pad_id), widen(new.completion_mask, 0), widen(new.logprobs, 0.0)
        finish, texts, versions = list(self.finish), list(self.texts), list(self.versions)
        tools = n_tools = None
        if self.tool_mask is not None or new.tool_mask is not None:
            tools, n_tools = _widen_tools(self, tc), _widen_tools(new, tc)
        episodes = _episodes_of(self) if self.episodes is not None or new.episodes is not None else None
        new_episodes = _episodes_of(new)
        bits = n_bits = None
        if self.bitmask is not None or new.bitmask is not None:  # one side may be unconstrained: all -1
            w = (self.bitmask if self.bitmask is not None else new.bitmask).shape[-1]  # type: ignore[union-attr]
            bits, n_bits = _widen_bits(self, tc, w), _widen_bits(new, tc, w)
        for j, i in enumerate(rows):
            ids[i], mask[i], lp[i] = n_ids[j], n_mask[j], n_lp[j]
            finish[i], texts[i], versions[i] = new.finish[j], new.texts[j], new.versions[j]
            if bits is not None and n_bits is not None:
                bits[i] = n_bits[j]
            if tools is not None and n_tools is not None:
                tools[i] = n_tools[j]
            if episodes is not None:
                episodes[i] = new_episodes[j]
        return RolloutBatch(
            self.prompt_ids,
            self.prompt_mask,
            ids,
            mask,
            lp,
            finish,
            texts,
            self.policy_version,
            self.group_size,
            versions,
            bits,
            self.decode_stats,
            tools,
            episodes,
            self.stop_ids or new.stop_ids,
        )


def _widen_bits(b: RolloutBatch, tc: int, words: int | None = None) -> torch.Tensor:
    """``b``'s masks padded to ``tc`` tokens with -1 (all allowed); all -1 when it has none."""
    n = b.completion_ids.shape[0]
    w = b.bitmask.shape[-1] if b.bitmask is not None else words
    out = torch.full((n, tc, w or 1), -1, dtype=torch.int32)
    if b.bitmask is not None:
        out[:, : b.bitmask.shape[1]] = b.bitmask
    return out


def _widen_tools(b: RolloutBatch, tc: int) -> torch.Tensor:
    """``b``'s tool mask padded to ``tc`` tokens (all 0 when it has none)."""
    out = torch.zeros((b.completion_ids.shape[0], tc), dtype=torch.long)
    if b.tool_mask is not None:
        out[:, : b.tool_mask.shape[1]] = b.tool_mask
    return out


def _cat_tools(a: RolloutBatch, b: RolloutBatch, tc: int) -> torch.Tensor | None:
    if a.tool_mask is None and b.tool_mask is None:
        return None
    return torch.cat([_widen_tools(a, tc), _widen_tools(b, tc)])


def _episodes_of(b: RolloutBatch) -> list[Any]:
    return list(b.episodes) if b.episodes is not None else [None] * b.completion_ids.shape[0]


def _cat_episodes(a: RolloutBatch, b: RolloutBatch) -> list[Any] | None:
    if a.episodes is None and b.episodes is None:
        return None
    return _episodes_of(a) + _episodes_of(b)


def _cat_bits(a: RolloutBatch, b: RolloutBatch, tc: int) -> torch.Tensor | None:
    if a.bitmask is None and b.bitmask is None:
        return None
    w = (a.bitmask if a.bitmask is not None else b.bitmask).shape[-1]  # type: ignore[union-attr]
    return torch.cat([_widen_bits(a, tc, w), _widen_bits(b, tc, w)])


def sample_tokens(
    logits: torch.Tensor, temperature: float, top_p: float, u: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample one token per row; return it and its log-prob under the tempered distribution.

    ``u``: one uniform draw per row (``[B, 1]``); unused when greedy (``temperature <= 0``).
    """
    if temperature <= 0:  # greedy
        logp = torch.log_softmax(logits.float(), -1)
        tok = logp.argmax(-1)
        return tok, logp.gather(-1, tok[:, None]).squeeze(-1)
    logp = torch.log_softmax(logits.float() / temperature if temperature != 1.0 else logits.float(), -1)
    probs = logp.exp()
    idx = None
    if top_p < 1.0:
        probs, idx = probs.sort(-1, descending=True)
        drop = probs.cumsum(-1) - probs > top_p  # keep the smallest prefix reaching top_p
        probs = probs.masked_fill(drop, 0.0)
    # inverse-CDF sampling: one uniform per row (multinomial's exponential draws cost more here)
    cdf = probs.cumsum(-1)
    assert u is not None
    tok = torch.searchsorted(cdf, u * cdf[:, -1:], right=True).squeeze(-1).clamp(max=cdf.shape[-1] - 1)
    if idx is not None:
        tok = idx.gather(-1, tok[:, None]).squeeze(-1)
    return tok, logp.gather(-1, tok[:, None]).squeeze(-1)


class _HFStepper:
    """The model's own forward with its KV cache (any causal LM); under autocast for a ``dtype``
    other than the weights'."""

    def __init__(self, model: Any, dtype: torch.dtype | None = None) -> None:
        import contextlib

        self.model = model
        p = next(model.parameters())
        self.precision = (
            torch.autocast(p.device.type, dtype=dtype)
            if dtype is not None and dtype != p.dtype
            else contextlib.nullcontext()
        )
        self.cache: Any = None
        self.mask: torch.Tensor | None = None
        self.next_pos: torch.Tensor | None = None
        self.key = "cache"

    @torch.no_grad()
    def prefill(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        import inspect

        from transformers import DynamicCache

        self.cache = DynamicCache()
        # transformers 5 renamed past_key_values to cache; accept either spelling of the model's forward
        self.key = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
        with self.precision:
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, **{self.key: self.cache}
            )
        self.mask, self.next_pos = mask, pos[:, -1:] + 1
        return out.logits[:, -1].float()

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, counts: torch.Tensor | None = None) -> torch.Tensor:
        """As :meth:`rlvr.models.fast_decode.FastDecoder.step`: ``tokens [B]``, or ``[B, K]`` with
        ``counts`` (each row's first ``counts[b]`` are real, the rest masked out for good)."""
        assert self.mask is not None and self.next_pos is not None
        if tokens.dim() == 1:
            tokens = tokens[:, None]
        k = tokens.shape[1]
        counts = counts if counts is not None else torch.full_like(tokens[:, 0], k)
        ahead = torch.arange(k, device=tokens.device)
        self.mask = torch.cat([self.mask, (ahead[None] < counts[:, None]).to(self.mask.dtype)], 1)
        with self.precision:
            out = self.model(
                input_ids=tokens,
                attention_mask=self.mask,
                position_ids=self.next_pos + ahead,
                use_cache=True,
                **{self.key: self.cache},
            )
        self.next_pos = self.next_pos + counts[:, None]
        return out.logits[torch.arange(len(tokens), device=tokens.device), counts - 1].float()


def stop_ids_of(model: Any, tokenizer: Any) -> tuple[int, ...]:
    """Every token id a completion ends on: the tokenizer's eos and each id the model's generation
    config lists (Qwen2.5-Instruct ends on ``<|im_end|>`` and also ``<|endoftext|>``), as TRL and
    ``generate`` stop on them.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> stop_ids_of(NS(generation_config=NS(eos_token_id=[7, 3])), NS(eos_token_id=3))
        (3, 7)
    """
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    declared = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(declared, int):
        ids.add(declared)
    elif declared:
        ids.update(int(i) for i in declared)
    return tuple(sorted(ids))


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
        turns: a :class:`rlvr.engine.turns.Turns`: every row is a multi-turn episode; a tool call's
            result is appended to the row's sequence and fed in the next forward (the cache carries
            over), marked in ``tool_mask``. ``max_new_tokens`` is then the episode's whole budget.
        stop_ids: the ids a completion ends on (default :func:`stop_ids_of`): the first one sampled
            ends the row; it is the last token in the mask, nothing after it is.

    Sampling runs under ``torch.inference_mode`` (less per-op bookkeeping than ``no_grad``); the
    returned tensors are copied out of it so training can use them.
    """
    from rlvr.models.fast_decode import FastDecoder, supports

    if turns is not None and constrain is not None and constrain.mode != "answer":
        raise ValueError(
            "constrained decoding of multi-turn episodes constrains the final answer segment only "
            "(decoding.constrain: answer); full would have to admit tool calls from the first token"
        )
    with torch.inference_mode():
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        pad = tokenizer.pad_token_id
        stops = tuple(stop_ids) if stop_ids is not None else stop_ids_of(model, tokenizer)
        stop_t = torch.tensor(stops, dtype=torch.long, device=device)
        rows = [p for p in prompts for _ in range(group_size)]
        n, tp = len(rows), max(len(p) for p in rows)
        prompt_ids = torch.full((n, tp), pad, dtype=torch.long)
        prompt_mask = torch.zeros((n, tp), dtype=torch.long)
        for i, p in enumerate(rows):
            prompt_ids[i, tp - len(p) :] = torch.tensor(p)
            prompt_mask[i, tp - len(p) :] = 1
        prompt_ids, prompt_mask = prompt_ids.to(device), prompt_mask.to(device)
        state: Any = None  # the constrainer's per-row grammar state
        lead: list[int] = []
        if constrain is not None:  # per-row grammar state: masks the logits, told each row's tokens
            state = constrain.begin(n, max_new_tokens)
            lead = constrain.lead(max_new_tokens)[: max_new_tokens - 1]  # forced for every row: prefilled
        pre_ids, pre_mask = prompt_ids, prompt_mask
        if lead:
            lead_t = torch.tensor(lead, device=device).expand(n, -1)
            pre_ids, pre_mask = torch.cat([prompt_ids, lead_t], 1), torch.cat([prompt_mask, torch.ones_like(lead_t)], 1)
        stepper: Any
        if fast and supports(model, lora=True):  # each group's prompt prefilled once, its cache written to G rows
            stepper = FastDecoder(model, n, tp + max_new_tokens, dtype=dtype)
            logits = stepper.prefill(pre_ids[::group_size], pre_mask[::group_size], repeat=group_size)
            logits = logits.repeat_interleave(group_size, 0) if group_size > 1 else logits
        else:
            stepper = _HFStepper(model, dtype)
            logits = stepper.prefill(pre_ids, pre_mask)
        out_tok = torch.full((n, max_new_tokens), pad, dtype=torch.long, device=device)
        out_lp = torch.zeros((n, max_new_tokens), device=device)
        bits: Any = None  # [N, T, words] mask bits, with a grammar
        done = torch.zeros(n, dtype=torch.bool, device=device)
        pos = torch.full((n,), len(lead), dtype=torch.long, device=device)  # tokens each row has so far
        if state is not None:
            bits = torch.full((n, max_new_tokens, constrain.words), -1, dtype=torch.int32)
            if lead:
                out_tok[:, : len(lead)] = torch.tensor(lead, device=device)
                bits[:, : len(lead)] = torch.stack(state.prime(lead, done), 1)
        # One uniform per (token position, row), drawn position by position as decoding reaches it:
        # the same draws as one torch.rand(n) per step, whichever step a row's token is sampled at.
        draws = torch.zeros((max_new_tokens, n), device=device)
        drawn = 0

        def draw(upto: int) -> None:
            nonlocal drawn
            while drawn < upto and temperature > 0:
                draws[drawn] = torch.rand(n, generator=generator, device=device)
                drawn += 1

        tools: Any = None  # [N, T] 1 for appended tool-result tokens, with turns
        closers: Any = None
        if turns is not None:
            tools = torch.zeros((n, max_new_tokens), dtype=torch.long, device=device)
            closers = turns.closers(logits.shape[-1], device)
            for r in turns.ended_at_start():
                done[r] = True
        draw(len(lead))  # the draws the prefilled steps would have made
        jumping = state is not None and jump
        # Rows that have ended are dropped from the lean decoder once they are at least COMPACT_AT of
        # the rows it still runs (one straggler then no longer costs a full batch per token). Draws are
        # per position, so the samples do not depend on when rows are dropped or jumped.
        compact = isinstance(stepper, FastDecoder)
        active = torch.arange(n, device=device)  # the rows the decoder still runs
        while not bool(done.all()):
            at = pos[active]
            if state is not None:  # told which rows the logits are, once ended ones were dropped
                step_bits = state.mask(logits, done, rows=active.cpu() if len(active) < n else None)
                live = active[~done[active]]
                bits[live.cpu(), pos[live].cpu()] = step_bits[live.cpu()]  # the masks stay on the CPU
            draw(int(at[~done[active]].max()) + 1)  # the positions rows still going sample at
            u = draws[at.clamp(max=max_new_tokens - 1), active][:, None] if temperature > 0 else None
            tok, lp = sample_tokens(logits, temperature, top_p, u)
            ended = done[active]  # rows still decoded after their end get the pad
            tok = tok.masked_fill(ended, pad)
            go = (~ended).nonzero().squeeze(1)
            rows_go = active[go]
            out_tok[rows_go, at[go]] = tok[go]
            out_lp[rows_go, at[go]] = lp[go]
            if state is not None:
                state.take(rows_go.tolist(), tok[go].tolist())
            pos[rows_go] += 1
            done[rows_go] = torch.isin(tok[go], stop_t) | (pos[rows_go] >= max_new_tokens)
            run: list[Any] = []
            start = pos.clone() if turns is not None or jumping else pos  # read only when rows moved ahead
            moved = False  # some row took tokens beyond its sampled one (forced, or a tool's result)
            if turns is not None:
                moved = _turns_step(
                    turns, rows_go, tok[go], done, pos, out_tok, tools, closers, stop_t, max_new_tokens, state
                )
            if jumping:  # tokens the masks force next are taken now and fed in the same forward
                nxt = rows_go[~done[rows_go]]
                run = state.jump(nxt.tolist(), (max_new_tokens - pos[nxt]).tolist()) if len(nxt) else []
                for rows_k, toks_k, bits_k in run:  # one position further for each of rows_k
                    r, tk = torch.tensor(rows_k, device=device), torch.tensor(toks_k, device=device)
                    out_tok[r, pos[r]] = tk
                    bits[torch.tensor(rows_k), pos[r].cpu()] = bits_k
                    pos[r] += 1
                    done[r] = torch.isin(tk, stop_t) | (pos[r] >= max_new_tokens)
                    if turns is not None:  # an episode the forced tokens ended (its closed answer's stop)
                        _end_turns(turns, r, tk, done, pos, out_tok, stop_t)
                moved = moved or bool(run)
            if bool(done.all()):
                break
            ended = done[active]
            if compact and int(ended.sum()) >= COMPACT_AT * len(active):
                keep = (~ended).nonzero().squeeze(1)
                stepper.keep(keep)
                tok, active = tok[keep], active[keep]
            # the sampled token, then the row's forced ones; a row that has ended needs no more (its forced
            # closing tag and stop are never read)
            extra = torch.where(done[active], 0, pos[active] - start[active]) if moved else None
            k = 1 + int(extra.max()) if extra is not None else 1
            if k == 1:
                logits = stepper.step(tok)
            else:
                at = (start[active][:, None] + torch.arange(k - 1, device=device)).clamp(max=max_new_tokens - 1)
                feed = torch.cat([tok[:, None], out_tok[active].gather(1, at)], 1)
                logits = stepper.step(feed, 1 + cast(torch.Tensor, extra))
        steps = int(pos.max())
        draw(steps)  # as many draws as decoding token by token makes: the generator ends in the same state
        out_tok, out_lp = out_tok[:, :steps].clone(), out_lp[:, :steps]
        # the mask covers each row's tokens up to and including its first stop, nothing after it
        # (positions, not ids: a stop id may also be the pad id, as Qwen's <|endoftext|> is)
        at = torch.arange(out_tok.shape[1], device=device)
        stopped = torch.isin(out_tok, stop_t) & (at[None] < pos[:, None])
        first = torch.where(stopped.any(1), stopped.float().argmax(1), pos)  # [N] the first stop, else the end
        mask = (at[None] <= first[:, None]) & (at[None] < pos[:, None])
        mask = mask.long()
        finish: list[Any] = ["eos" if e else "length" for e in stopped.any(1).tolist()]
        if turns is not None:  # an episode's finish and text are its own: how it ended, its final answer
            finish = [ep.finish for ep in turns.episodes]
            texts = [ep.answer for ep in turns.episodes]
        else:
            texts = tokenizer.batch_decode(out_tok.masked_fill(mask == 0, pad), skip_special_tokens=True)
        if was_training:
            model.train()
        b = RolloutBatch(
            prompt_ids,
            prompt_mask,
            out_tok,
            mask,
            out_lp * mask,
            finish,
            texts,
            policy_version,
            group_size,
            bitmask=bits[:, :steps] if bits is not None else None,
            decode_stats=state.stats if state is not None else None,
            tool_mask=tools[:, :steps] * mask if tools is not None else None,
            episodes=list(turns.episodes) if turns is not None else None,
            stop_ids=stops,
        )
    return RolloutBatch(
        b.prompt_ids.clone(),
        b.prompt_mask.clone(),
        b.completion_ids.clone(),
        b.completion_mask.clone(),
        b.logprobs.clone(),
        b.finish,
        b.texts,
        b.policy_version,
        b.group_size,
        b.versions,
        b.bitmask.clone() if b.bitmask is not None else None,
        b.decode_stats,
        b.tool_mask.clone() if b.tool_mask is not None else None,
        b.episodes,
        b.stop_ids,
    )


def _turns_step(
    turns: Any,
    rows: torch.Tensor,
    toks: torch.Tensor,
    done: torch.Tensor,
    pos: torch.Tensor,
    out_tok: torch.Tensor,
    tools: torch.Tensor,
    closers: torch.Tensor,
    stops: torch.Tensor,
    limit: int,
    state: Any = None,
) -> bool:
    """After ``rows`` sampled ``toks``: rows whose turn is now a complete tool call get its result
    appended (or end their episode); rows that ended give their final answer. True when some row
    took result tokens (they are fed with the next forward). ``state``: the constrainer's, told
    of the result tokens (its budget counts them; its grammar never sees them); a result that would
    leave less than the answer's reserve ends the episode ``context_overflow``, so a constrained
    episode is never truncated inside its answer."""
    moved = False
    # under a constraint the answer's reserve is not the tool's to use (the answer must still fit)
    reserve = state.c.reserve if state is not None else 0
    closing = rows[~done[rows] & closers[toks]].tolist()
    outcomes = (
        turns.on_closes([(r, out_tok[r, : int(pos[r])].tolist(), limit - int(pos[r]) - reserve) for r in closing])
        if closing
        else []
    )
    for r, (add, end) in zip(closing, outcomes):  # the rows' calls ran together
        at = int(pos[r])
        if end:
            done[r] = True
        elif add:
            k = len(add)
            out_tok[r, at : at + k] = torch.tensor(add, device=out_tok.device)
            tools[r, at : at + k] = 1
            pos[r] = at + k
            moved = True
            if state is not None:
                state.skip(r, k)
    _end_turns(turns, rows, toks, done, pos, out_tok, stops)
    return moved


def _end_turns(
    turns: Any,
    rows: torch.Tensor,
    toks: torch.Tensor,
    done: torch.Tensor,
    pos: torch.Tensor,
    out_tok: torch.Tensor,
    stops: torch.Tensor,
) -> None:
    """The rows of ``rows`` that ended on their last token (``toks``) give their episode's final answer."""
    ended = set(stops.tolist())
    for r, t in zip(rows[done[rows]].tolist(), toks[done[rows]].tolist()):
        turns.on_end(r, out_tok[r, : int(pos[r])].tolist(), "eos" if t in ended else "length")
