"""One token per row from the model's logits: greedy, or inverse-CDF sampling from one uniform draw
per row (tempered, optionally top-p), with its log-prob under the distribution it was drawn from."""

from __future__ import annotations

import torch


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


class PositionDraws:
    """One uniform per (token position, row), drawn position by position as decoding reaches it: the
    same draws as one ``torch.rand(n)`` per step, whichever step a row's token is sampled at (so the
    samples never depend on when rows are dropped from the batch or jump ahead). Greedy decoding
    (``temperature <= 0``) draws nothing."""

    def __init__(
        self, n: int, positions: int, temperature: float, generator: torch.Generator | None, device: torch.device
    ) -> None:
        self.u = torch.zeros((positions, n), device=device)
        self.drawn, self.n, self.on = 0, n, temperature > 0
        self.generator, self.device = generator, device
        self.kept: dict[int, torch.Tensor] = {}  # the generator's state before each recent position (ahead)

    def upto(self, position: int) -> None:
        """Draw every position before ``position`` not drawn yet."""
        while self.drawn < position and self.on:
            self.u[self.drawn] = torch.rand(self.n, generator=self.generator, device=self.device)
            self.drawn += 1

    def ahead(self, position: int, keep: int) -> None:
        """:meth:`upto` for a loop that draws before it knows whether any row is left to sample (it
        checks every few steps): the generator's state before each of the last ``keep`` positions
        is kept, so :meth:`back` can return it to where decoding token by token leaves it."""
        if self.on and self.drawn < position:
            self.kept[self.drawn] = self._state()
            self.kept.pop(self.drawn - keep, None)
        self.upto(position)

    def back(self, position: int) -> None:
        """Undo the draws from ``position`` on (kept by :meth:`ahead`): the generator as if they were
        never made."""
        if self.on and self.drawn > position:
            state = self.kept[position]
            if self.generator is not None:
                self.generator.set_state(state)
            elif self.device.type == "cuda":
                torch.cuda.set_rng_state(state, self.device)
            else:
                torch.set_rng_state(state)
            self.drawn = position

    def _state(self) -> torch.Tensor:
        if self.generator is not None:
            return self.generator.get_state()
        return torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else torch.get_rng_state()

    def at(self, positions: torch.Tensor, rows: torch.Tensor) -> torch.Tensor | None:
        """The draws of ``rows`` at their ``positions`` (``[B, 1]``), None when greedy."""
        if not self.on:
            return None
        return self.u[positions.clamp(max=self.u.shape[0] - 1), rows][:, None]
