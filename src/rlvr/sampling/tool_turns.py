"""Tool turns inside the decode loop: a row that samples a token closing a tool call gets the call's
result appended to its sequence (fed with the next forward, marked in ``tool_mask``) or ends its
episode; a row that ends gives its episode's final answer (:class:`rlvr.sampling.turns.Turns` runs
the calls)."""

from __future__ import annotations

from typing import Any, cast

import torch


def start_turns(turns: Any, rows: Any, vocab: int) -> torch.Tensor:
    """Decoding's record of its rows (``rows``: tokens, positions, ended) made ready for episodes:
    a mask of the tokens not the policy's, the rows whose environment could not start ended.
    Returns the token ids that may close a call (``[vocab]`` bool)."""
    rows.tools = torch.zeros_like(rows.out_tok)
    for r in turns.ended_at_start():
        rows.done[r] = True
    return cast(torch.Tensor, turns.closers(vocab, rows.out_tok.device))


def turns_step(
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
        if end:
            done[r] = True
        elif add:
            _append(r, add, pos, out_tok, tools)
            moved = True
            if state is not None:
                state.skip(r, len(add))
    return end_turns(turns, rows, toks, done, pos, out_tok, stops, tools, limit - reserve) or moved


def _append(r: int, add: list[int], pos: torch.Tensor, out_tok: torch.Tensor, tools: torch.Tensor) -> None:
    """Row ``r`` takes ``add`` (not the policy's tokens: a tool's result, an environment's reply)."""
    at, k = int(pos[r]), len(add)
    out_tok[r, at : at + k] = torch.tensor(add, device=out_tok.device)
    tools[r, at : at + k] = 1
    pos[r] = at + k


def end_turns(
    turns: Any,
    rows: torch.Tensor,
    toks: torch.Tensor,
    done: torch.Tensor,
    pos: torch.Tensor,
    out_tok: torch.Tensor,
    stops: torch.Tensor,
    tools: torch.Tensor | None,
    limit: int,
) -> bool:
    """The rows of ``rows`` that ended on their last token (``toks``) give their episode's final
    answer, or, where the environment answers the turn (``respond``), take its reply and go on
    (``limit``: the budget a reply may use). True when some row took reply tokens."""
    ended = set(stops.tolist())
    moved = False
    for r, t in zip(rows[done[rows]].tolist(), toks[done[rows]].tolist()):
        at = int(pos[r])
        add = turns.on_end(r, out_tok[r, :at].tolist(), "eos" if t in ended else "length", limit - at)
        if add:
            assert tools is not None, "decoding episodes marks their tokens"
            _append(r, add, pos, out_tok, tools)
            done[r] = False
            moved = True
    return moved
