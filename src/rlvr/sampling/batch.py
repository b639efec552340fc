"""The rollout batch: G sampled completions per prompt with everything training needs to keep.

Each rollout records its token ids, the log-prob of every sampled token under the sampling policy
(the full tempered distribution, as the training forward computes it, so ``num_iterations = 1``
needs no extra forward pass for the old log-probs), why it ended (``eos``, or ``length``:
truncated) and the policy version that produced it; with a grammar, the masks it was sampled
under; with tools, which tokens were the tools' and the episodes. Rows are selected, joined and
replaced whole (a redraw replaces rows), never edited in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import torch

FinishReason = Literal["eos", "length"]


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

    def copied(self) -> RolloutBatch:
        """The batch with its tensors copied (made under ``torch.inference_mode``, they could not be
        used by training as they are)."""

        def copy(t: torch.Tensor | None) -> torch.Tensor | None:
            return t.clone() if t is not None else None

        return replace(
            self,
            prompt_ids=self.prompt_ids.clone(),
            prompt_mask=self.prompt_mask.clone(),
            completion_ids=self.completion_ids.clone(),
            completion_mask=self.completion_mask.clone(),
            logprobs=self.logprobs.clone(),
            bitmask=copy(self.bitmask),
            tool_mask=copy(self.tool_mask),
        )

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
