"""Multi-turn episodes inside rlvr's sampling loop: one episode per rollout row, one KV cache each.

:func:`rlvr.sampling.decode.generate` decodes every row of the batch together; with a :class:`Turns`
it asks, whenever a row samples a token that can close a tool call (``</tool_call>``), whether
the row's current turn is a complete call. When it is, the call runs through the episode's
:class:`~rlvr.episodes.guard.Guard` (parsed, checked, timed, its cause recorded where it
happens) and its result is *appended* to the row's sequence, as
``<tool_response>RESULT</tool_response>`` tokens that are fed to the model in the next forward
together with the other rows' sampled tokens: the cache carries over, nothing is prefilled again
(the tool-integrated reasoning of ToRL / SimpleTIR, whose interpreter output is inlined the same
way). Those tokens are marked in the batch's ``tool_mask`` and never carry loss; their
log-probs are not the policy's and stay 0.

An environment that responds (``respond``: a game, a simulated user) answers a turn that ends
without a call: when the row samples its stop, the environment's messages are appended the same way,
as the chat template writes them after the policy's turn (:func:`rlvr.sampling.replies.reply_ids`,
out of the loss as a tool's result is), and the row decodes on; the policy's stop token stays in its
sequence and in the loss (it chose to end its turn there).

Each row's episode ends where :mod:`rlvr.episodes.loop` says: a turn without a call is the final
answer (``eos``, or ``length`` when the budget cut it: judged, truncated), or, with an environment
that responds, the turn after which it says the episode is over; an environment fault
(a call's event, or ``reset`` raising: ``env_crash``) ends it as ``fault``, to be redrawn; the
``max_turns``-th call ends it as ``turn_limit``; a tool result that leaves no room to answer ends
it as ``context_overflow``. The finished :class:`~rlvr.episodes.episode.Episode` objects are the
batch's ``episodes``; engines and the failure step read their causes, never the text.

A tool result is tokenized with ``split_special_tokens``: whatever it prints, it cannot write the
tokenizer's end-of-sequence or any other special token into the policy's sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from rlvr.diagnostics.causes import Cause
from rlvr.episodes.env import release, responds
from rlvr.episodes.episode import ENVIRONMENT_FAULTS, Episode
from rlvr.episodes.guard import CALL_END, Faults, Guard, find_call, result_markup
from rlvr.sampling.replies import reply_ids


def closing_tokens(tokenizer: Any, vocab: int) -> torch.Tensor:
    """``[vocab]`` bool: the token ids whose text can end ``</tool_call>`` (they contain ``>``)."""
    pieces = tokenizer.convert_ids_to_tokens(list(range(min(vocab, len(tokenizer)))))
    out = torch.zeros(vocab, dtype=torch.bool)
    out[: len(pieces)] = torch.tensor([p is not None and ">" in p for p in pieces])
    return out


class Turns:
    """The episodes of one :func:`~rlvr.sampling.decode.generate` call, one per row (prompt-major, as
    the batch's rows are: ``rows[i]`` the data row, ``keys[i]`` its seeded fault key).

    Args:
        tokenizer: the policy's tokenizer (segments decoded, tool results encoded).
        make_env: a fresh environment per episode (``reset(row)``, tools as methods).
        rows: each episode's data row (what ``reset`` reads).
        keys: each episode's name for the seeded fault injection (prompt id, step, draw, row).
        prompts: each episode's prompt text (kept in the episode).
        max_turns: assistant turns per episode (the ``max_turns``-th call ends it: ``turn_limit``).
        timeout_s: seconds a tool call may run (``env_timeout`` past it).
        max_result_chars: a longer tool result is cut to it (and says so).
        faults: injected environment faults (None: none).
        step: the training step the episodes belong to (1-based: injected outages are step ranges).
        env_faults: the causes that are the environment's (they end the episode as ``fault``).
        render_result: ``(result, tool name) -> token ids`` appended after a call (default: the
            ``<tool_response>`` markup, special tokens split); an engine whose turns go through a chat
            template passes what the template writes there (TRL's held-out episodes).
        render_reply: ``(messages, the stop's text) -> token ids`` appended when an environment that
            responds answers a turn (default: :func:`~rlvr.sampling.replies.reply_ids` with the
            tokenizer's chat template).
    """

    def __init__(
        self,
        tokenizer: Any,
        make_env: Callable[[], object],
        rows: Sequence[dict[str, Any]],
        keys: Sequence[str],
        prompts: Sequence[str],
        *,
        max_turns: int = 4,
        timeout_s: float = 10.0,
        max_result_chars: int = 2000,
        faults: Faults | None = None,
        env_faults: Iterable[Cause] = ENVIRONMENT_FAULTS,
        render_result: Callable[[str, str], list[int]] | None = None,
        step: int | None = None,
        render_reply: Callable[[list[dict[str, str]], str], list[int]] | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError("env.max_turns must be at least 1")
        if not len(rows) == len(keys) == len(prompts):
            raise ValueError(f"{len(rows)} rows, {len(keys)} keys and {len(prompts)} prompts: one each per episode")
        self.tok, self.max_turns, self.owned = tokenizer, max_turns, frozenset(env_faults)
        self.render_result = render_result
        self.render_reply = render_reply or (lambda msgs, stop: reply_ids(tokenizer, msgs, stop))
        self.rows = list(rows)
        self.episodes = [Episode(prompt=p) for p in prompts]
        self.envs: list[object | None] = [None] * len(rows)
        self.guards: list[Guard | None] = [None] * len(rows)
        self.observations: list[str | None] = [None] * len(rows)
        self.seg_start = [0] * len(rows)  # where each row's current assistant turn starts in its completion
        self.turn = [0] * len(rows)
        self.replied = [False] * len(rows)  # rows whose environment answered a turn (a stop mid-sequence)
        self.special = set(getattr(tokenizer, "all_special_ids", []) or [])
        self._closers: torch.Tensor | None = None
        for i, key in enumerate(keys):  # reset every environment before any token: its observation joins the prompt
            try:
                env = make_env()
                obs = env.reset(self.rows[i])  # type: ignore[attr-defined]
                self.guards[i] = Guard(
                    env, key=key, timeout_s=timeout_s, max_result_chars=max_result_chars, faults=faults, step=step
                )
                self.envs[i], self.observations[i] = env, obs or None
            except Exception as e:  # the session could not be created: the environment's fault
                self.episodes[i].stopped(
                    Cause.ENV_CRASH, 0, f"the environment could not start: {type(e).__name__}: {e}"
                )
                self.guards[i] = None

    # ------------------------------------------------------------------ what generate asks
    @property
    def responding(self) -> bool:
        """Whether some episode's environment answers the policy's turns (``respond``)."""
        return any(g is not None and responds(g.env) for g in self.guards)

    def ended_at_start(self) -> list[int]:
        """Rows whose environment could not start (they sample nothing)."""
        return [i for i, g in enumerate(self.guards) if g is None]

    def closers(self, vocab: int, device: torch.device) -> torch.Tensor:
        if self._closers is None or self._closers.shape[0] != vocab:
            self._closers = closing_tokens(self.tok, vocab)
        return self._closers.to(device)

    def _text(self, ids: Sequence[int]) -> str:
        return self.tok.decode([t for t in ids if t not in self.special])

    def on_close(self, row: int, ids: Sequence[int], room: int) -> tuple[list[int], bool]:
        """Row ``row`` sampled a token that may close a call (``ids``: its completion so far; ``room``:
        tokens left in its budget). Returns ``(tokens to append, the episode ended)``: the call's
        result when the turn is a complete call, nothing when it is not (decoding goes on)."""
        return self.on_closes([(row, ids, room)])[0]

    def on_closes(self, closing: Sequence[tuple[int, Sequence[int], int]]) -> list[tuple[list[int], bool]]:
        """:meth:`on_close` for several rows of one decoding step, ``(row, ids, room)`` each: their
        calls run at the same time (each under its own guard and time limit), so a slow or hanging
        tool holds the batch for its own limit, not for the sum of every call's."""
        calls: list[tuple[int, Sequence[int], int, str, int, str]] = []
        for row, ids, room in closing:
            guard = self.guards[row]
            if guard is None or not guard.tools:  # an environment without tools: no text is a call
                continue
            seg = ids[self.seg_start[row] :]
            text = self._text(seg)
            if text.endswith(CALL_END):  # a closing tag without its opening: the guard records malformed_tool_call
                calls.append((row, ids, room, text, len(seg), find_call(text) or text))
        outcomes = self._run_calls([(row, markup) for row, _, _, _, _, markup in calls])
        done = {
            row: self._after_call(row, ids, room, text, n, out)
            for (row, ids, room, text, n, _), out in zip(calls, outcomes)
        }
        return [done.get(row, ([], False)) for row, _, _ in closing]

    def _run_calls(self, calls: Sequence[tuple[int, str]]) -> list[Any]:
        """Each ``(row, markup)`` through its row's guard; several at once on threads (the guards are
        per episode, and each times its own call)."""

        def one(row: int, markup: str) -> Any:
            guard = self.guards[row]
            assert guard is not None
            return guard.call(markup, self.turn[row])

        if len(calls) <= 1:
            return [one(r, m) for r, m in calls]

        with ThreadPoolExecutor(min(len(calls), 16), thread_name_prefix="rlvr-calls") as pool:
            return list(pool.map(lambda c: one(*c), calls))

    def _after_call(
        self, row: int, ids: Sequence[int], room: int, text: str, seg_len: int, out: Any
    ) -> tuple[list[int], bool]:
        """What a call's outcome does to its episode: recorded; the episode ends (a fault, the turn
        limit, no room for the result) or the result's tokens are appended."""
        ep, turn = self.episodes[row], self.turn[row]
        if out.record(ep, text, seg_len, self.owned):
            return [], True
        self.turn[row] = turn + 1
        if self.turn[row] >= self.max_turns:
            ep.stopped(Cause.TURN_LIMIT, turn, f"{self.max_turns} turns without a final answer")
            self._judge(row)
            return [], True
        if self.render_result is not None:
            result = self.render_result(out.result, out.call.name if out.call is not None else "")
        else:
            result = self.tok(result_markup(out.result), add_special_tokens=False, split_special_tokens=True)[
                "input_ids"
            ]
        if len(result) >= room:  # no token would be left to answer with
            ep.stopped(
                Cause.CONTEXT_OVERFLOW,
                turn,
                f"the tool result ({len(result)} tokens) leaves no room in the episode's budget ({room} tokens left)",
            )
            self._judge(row)
            return [], True
        self.seg_start[row] = len(ids) + len(result)
        return list(result), False

    def on_end(self, row: int, ids: Sequence[int], finish: str, room: int = 0) -> list[int]:
        """Row ``row`` ended its turn with its eos, or ran out of budget (``length``): its final answer,
        unless its environment responds and the episode goes on. Returns the tokens to append (the
        environment's messages and the opening of the policy's next turn; ``room``: tokens left in
        the row's budget), [] when the episode is over."""
        ep = self.episodes[row]
        if ep.finish in ("fault", "turn_limit", "context_overflow"):
            return []
        seg = ids[self.seg_start[row] :]
        text = self._text(seg)
        guard = self.guards[row]
        if finish == "length" or guard is None or not responds(guard.env):
            ep.answered(text, finish, len(seg))
            self._judge(row)
            return []
        turn = self.turn[row]
        out = guard.respond(text, turn)
        if out.event is None and out.reply is None:  # the environment says the episode is over
            ep.replies += 1
            ep.answered(text, finish, len(seg))
            self._judge(row)
            return []
        if out.record(ep, text, len(seg), self.owned):
            return []
        assert out.reply is not None
        self.turn[row] = turn + 1
        if self.turn[row] >= self.max_turns:
            ep.answer = text  # what the environment judges the conversation by ends with this turn
            ep.stopped(Cause.TURN_LIMIT, turn, f"{self.max_turns} turns and the environment still answers")
            self._judge(row)
            return []
        stop = self.tok.convert_ids_to_tokens(ids[-1]) if ids and ids[-1] in self.special else ""
        reply = self.render_reply(out.reply, stop or "")
        if len(reply) >= room:
            ep.stopped(
                Cause.CONTEXT_OVERFLOW,
                turn,
                f"the environment's reply ({len(reply)} tokens) leaves no room in the episode's budget "
                f"({room} tokens left)",
            )
            self._judge(row)
            return []
        self.seg_start[row] = len(ids) + len(reply)
        self.replied[row] = True
        return list(reply)

    def close(self) -> None:
        """End every episode's environment that has a ``close`` (a server session, a sandbox): called
        when decoding ends, the episodes judged. A close that fails is the environment's own affair."""
        for i, env in enumerate(self.envs):
            release(env)
            self.envs[i] = None

    def _judge(self, row: int) -> None:
        """An environment with its own ``reward`` judges every episode it did not fail: answered, or
        ended by the policy (turn limit, no room: judged with no answer, as TRL's loop has it)."""
        fn = getattr(self.envs[row], "reward", None)
        if callable(fn):
            self.episodes[row].judge(fn, self.rows[row], self.turn[row])
