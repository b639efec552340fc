"""The decode loop for plain rows (no grammar, no tool turns), asking the device for nothing but
every few steps.

Without a grammar's forced tokens or a tool's result, every row still going samples at the same
position each step: the loop knows that position on the host (the step's), draws there, and writes
each step's token for every row it runs (rows that ended take the pad, which their rows already
hold). Nothing waits for the device except one check every :data:`CHECK_EVERY` steps, whether every
row has ended and whether enough have to drop them from the decoder; on a GPU the host queues the
next steps while the device runs the last, where the general loop (:func:`rlvr.sampling.decode._decode`)
waits on it several times a token. The samples, masks and log-probs are the general loop's, and the
generator ends where decoding token by token leaves it (the draws made past the end are undone:
:meth:`~rlvr.sampling.draws.PositionDraws.back`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from rlvr.sampling.draws import PositionDraws, sample_tokens

#: Steps between the loop's checks of the device (every row ended? enough to drop them?).
CHECK_EVERY = 8


def decode_plain(
    stepper: Any,
    logits: torch.Tensor,
    rows: Any,
    draws: PositionDraws,
    temperature: float,
    top_p: float,
    stops: torch.Tensor,
    pad: int,
    compact: Callable[[Any, torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
) -> None:
    """Decode ``rows`` (the general loop's record of what each row wrote: tokens, log-probs,
    positions, ended) from the logits after their prompts, in place. ``compact(stepper, done,
    active, tok)``: the decoder's rows, some dropped once enough ended."""
    out_tok, out_lp, pos, done = rows.out_tok, rows.out_lp, rows.pos, rows.done
    limit = out_tok.shape[1]
    active = torch.arange(len(out_tok), device=out_tok.device)  # the rows the decoder still runs
    for p in range(limit):
        draws.ahead(p + 1, CHECK_EVERY)
        u = draws.u[p, active][:, None] if draws.on else None
        tok, lp = sample_tokens(logits, temperature, top_p, u)
        ended = done[active]
        tok = tok.masked_fill(ended, pad)
        out_tok[active, p] = tok
        out_lp[active, p] = lp.masked_fill(ended, 0.0)
        pos[active] += (~ended).long()
        done[active] = ended | torch.isin(tok, stops) | (p + 1 >= limit)
        if (p + 1) % CHECK_EVERY == 0 or p + 1 >= limit:
            if bool(done.all()):
                break
            tok, active = compact(stepper, done, active, tok)
        logits = stepper.step(tok)
    draws.back(int(pos.max()))  # as many draws as decoding token by token makes
