"""A grammar inside the decode loop: each row's logits masked by its constrainer state, the masks kept
(training applies them again), and jump-forward: the tokens the masks force (one allowed token) are
taken without sampling and fed with the next forward, one forward for the run instead of one per token.

The constrainer (:class:`rlvr.decoding.constrain.Constrainer`) owns the grammar; this module owns
where the decode loop calls it and where its masks go.
"""

from __future__ import annotations

from typing import Any

import torch


class GrammarRows:
    """The constrainer's state for the ``n`` rows of one decode, and the mask bits recorded per row and
    position (``bits [N, T, words]``, on the CPU)."""

    def __init__(self, constrain: Any, n: int, max_new_tokens: int) -> None:
        self.state = constrain.begin(n, max_new_tokens)
        self.lead: list[int] = constrain.lead(max_new_tokens)[: max_new_tokens - 1]  # forced for every row
        self.bits = torch.full((n, max_new_tokens, constrain.words), -1, dtype=torch.int32)
        self.n = n

    def prime(self, out_tok: torch.Tensor, done: torch.Tensor) -> None:
        """The lead every row starts with (prefilled with the prompt), written as the rows' first tokens."""
        if self.lead:
            out_tok[:, : len(self.lead)] = torch.tensor(self.lead, device=out_tok.device)
            self.bits[:, : len(self.lead)] = torch.stack(self.state.prime(self.lead, done), 1)

    def mask(self, logits: torch.Tensor, done: torch.Tensor, active: torch.Tensor, pos: torch.Tensor) -> None:
        """Mask ``logits`` (the ``active`` rows') in place and record each live row's mask at its position."""
        step_bits = self.state.mask(logits, done, rows=active.cpu() if len(active) < self.n else None)
        live = active[~done[active]]
        self.bits[live.cpu(), pos[live].cpu()] = step_bits[live.cpu()]

    def take(self, rows: torch.Tensor, toks: torch.Tensor) -> None:
        """Tell the grammar the tokens ``rows`` sampled."""
        self.state.take(rows.tolist(), toks.tolist())

    def jump(
        self,
        rows: torch.Tensor,
        done: torch.Tensor,
        pos: torch.Tensor,
        out_tok: torch.Tensor,
        stop_t: torch.Tensor,
        limit: int,
        on_forced: Any = None,
    ) -> bool:
        """Take the tokens the masks force next for the still-going ``rows`` (written at their positions,
        each ending a row on a stop or the budget; ``on_forced(rows, toks)`` told of each run). True
        when some row took one."""
        nxt = rows[~done[rows]]
        run = self.state.jump(nxt.tolist(), (limit - pos[nxt]).tolist()) if len(nxt) else []
        device = out_tok.device
        for rows_k, toks_k, bits_k in run:  # one position further for each of rows_k
            r, tk = torch.tensor(rows_k, device=device), torch.tensor(toks_k, device=device)
            out_tok[r, pos[r]] = tk
            self.bits[torch.tensor(rows_k), pos[r].cpu()] = bits_k
            pos[r] += 1
            done[r] = torch.isin(tk, stop_t) | (pos[r] >= limit)
            if on_forced is not None:
                on_forced(r, tk)
        return bool(run)
