"""Constrained decoding of the answer segment (xgrammar, or llguidance as the fallback), inside
rlvr's own sampling loop.

Modes (``decoding.constrain``):

``none``    nothing is masked.
``answer``  reasoning stays free; the stop token is masked until an answer was given
            (a rollout cannot end without one); once the model writes ``<answer>``
            (the lazy trigger) the answer grammar masks every token until the closing
            tag, then only the stop token is allowed. Episodes with tools run under it
            too: tool calls are free reasoning, a tool's result is never fed to the
            grammar (:meth:`ConstrainedBatch.skip`) but counts against the budget, and
            the final answer segment is constrained.
``full``    the whole output follows ``<think>...</think><answer>...</answer>`` from the
            first token (answer-only when there is no think tag).

A budget closes the reasoning in time: when a row has not opened its answer by
``reasoning_budget`` tokens, or by the point where only the answer's reserve of
tokens is left, the closing ``</think>`` (if open) and ``<answer>`` are forced (queued: each
mask then allows one token). Near the limit an open answer is finished in time: in the last
``2 x closing_tokens + len(</answer>) + 1`` tokens the shortest way to end it is searched
each step on a copy of its matcher (the grammar's forced continuation, then the single
characters it allows, closers first, then the closing tag or the rest of a half-written
one); meanwhile the answer may only take tokens that cannot lengthen that ending
(digits, spaces, closers, the tag), and once the ending needs all but ``closing_tokens``
of the tokens left it is forced. So no rollout is truncated inside its reasoning or
inside its answer: under ``full`` a format death can only happen when no ending of at
most ``2 x closing_tokens`` characters exists when the window opens (an answer nested
deeper than that), counted as ``decoding/unclosable``.

**Jump-forward.** A token whose mask allows exactly one token is not sampled: :meth:`ConstrainedBatch.jump`
takes such tokens as soon as the row's previous token is known (the queued opening and closing, the
grammar's fixed text, the final stop), and rlvr's sampling loop feeds them to the model with that
token in one forward. The masks are computed exactly as token by token, so nothing else changes.

**The gradient.** A mask changes the sampling distribution, so the sampled log-probs
are those of the *masked* policy (renormalised over the allowed tokens). rlvr
treats that consistently: the masks are kept with the rollout (packed bits, one row
per token) and the training forward applies the same mask before its log-softmax,
so old and new log-probs are of the same distribution and the ratio on the first
update is 1 for every kept token (``tests/decoding``). A token the grammar forced
(one allowed token) has log-prob 0 under its mask: no gradient, whatever the advantage.
How much the masks changed the policy's choices is logged (``decoding/*``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import torch
from torch.utils.checkpoint import checkpoint
from transformers import LogitsProcessor

from rlvr.decoding.backends import make_backend
from rlvr.decoding.grammars import AnswerKind, answer_spec, full_spec
from rlvr.rewards.schedule import Schedule

Mode = Literal["none", "answer", "full"]

FREE, ANSWER, END, BROKEN = 0, 1, 2, 3
_CLOSERS = '})]"'
#: Characters an open answer may still take near the limit: none of them can lengthen its ending.
_WINDOW_SAFE = set('0123456789 })]"')


def _rank(ch: str) -> int:
    """The ending search's order: closers, a separator (an interval or a pair needs its second part),
    a digit (one completes any expression), then the rest."""
    if ch in _CLOSERS:
        return _CLOSERS.index(ch)
    return {",": 5, "1": 6}.get(ch, 10 if ch.isdigit() else 20)


@dataclass
class DecodeStats:
    """What the masks did in one generation (token counts over rows that were still going)."""

    tokens: int = 0
    masked: int = 0  # tokens sampled under an answer-segment mask (grammar, forced token, final stop)
    forced: int = 0  # exactly one token was allowed
    argmax_masked: int = 0  # the policy's most likely token was masked out (answer-segment masks)
    masked_mass: float = 0.0  # probability the answer-segment masks removed (summed over their tokens)
    stop_blocked: int = 0  # the policy's most likely token was the stop token before any answer
    budget_forced: int = 0  # rows whose answer was opened by the budget
    closed_forced: int = 0  # rows whose open answer was completed and closed before the limit
    unclosable: int = 0  # rows whose answer no short completion could close (truncated inside it)
    broken: int = 0  # rows the grammar could not follow (left unconstrained)
    rows: int = 0
    jumped: int = 0  # forced tokens taken without a forward of their own (jump-forward: no logits seen)

    def metrics(self) -> dict[str, float]:
        """``decoding/...`` metrics for the step's log. What the masks changed in the policy's choices
        (``mask_changed_argmax``, ``masked_mass``) is measured where the logits were computed: jumped
        tokens (forced, taken without a forward of their own) are left out of those two."""
        seen = self.tokens - self.jumped
        seen_masked = self.masked - self.jumped
        return {
            "decoding/masked_frac": self.masked / self.tokens if self.tokens else 0.0,
            "decoding/forced_frac": self.forced / self.tokens if self.tokens else 0.0,
            "decoding/jumped_frac": self.jumped / self.tokens if self.tokens else 0.0,
            "decoding/mask_changed_argmax": (self.argmax_masked + self.stop_blocked) / seen if seen else 0.0,
            "decoding/stop_blocked_frac": self.stop_blocked / seen if seen else 0.0,
            "decoding/masked_mass": self.masked_mass / seen_masked if seen_masked else 0.0,
            "decoding/budget_forced_frac": self.budget_forced / self.rows if self.rows else 0.0,
            "decoding/closed_forced_frac": self.closed_forced / self.rows if self.rows else 0.0,
            "decoding/unclosable": float(self.unclosable),
            "decoding/broken_frac": self.broken / self.rows if self.rows else 0.0,
        }


@dataclass
class Constrainer:
    """Compiled grammars for one tokenizer; :meth:`begin` makes the per-generation state.

    Args:
        tokenizer: the policy's tokenizer.
        vocab_size: the model's output size (may exceed the tokenizer's).
        mode: ``answer`` or ``full`` (see the module docstring).
        answer: the answer grammar kind (``math``, ``json``, ``text``).
        schema: the JSON Schema for ``json`` answers.
        think_tag / answer_tag: the tags (``think_tag=None``: answer-only output).
        reasoning_budget: tokens of reasoning after which the answer is opened (``None``: only
            the length limit's reserve).
        answer_tokens: tokens reserved for the answer's content before the length limit.
        closing_tokens: slack kept for finishing an open answer before the length limit (its
            ending is forced once it needs all but this many of the tokens left).
        max_chars: the ``text`` answer's length limit.
        backend: ``auto`` (xgrammar when installed, else llguidance), ``xgrammar`` or ``llguidance``.
    """

    tokenizer: Any
    vocab_size: int
    mode: Mode = "answer"
    answer: AnswerKind = "math"
    schema: dict[str, Any] | None = None
    think_tag: str | None = None
    answer_tag: str = "answer"
    reasoning_budget: int | None = None
    answer_tokens: int = 4
    closing_tokens: int = 4
    max_chars: int = 200
    backend: str = "auto"
    _engine: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in ("answer", "full"):
            raise ValueError(f"constrain mode must be answer or full, got {self.mode!r}")
        self.open, self.close = f"<{self.answer_tag}>", f"</{self.answer_tag}>"
        if self.mode == "full":
            spec = full_spec(
                self.answer,
                answer_tag=self.answer_tag,
                think_tag=self.think_tag,
                schema=self.schema,
                max_chars=self.max_chars,
            )
        else:
            spec = answer_spec(self.answer, self.close, schema=self.schema, max_chars=self.max_chars)
        self._engine = make_backend(self.backend, self.tokenizer, self.vocab_size, spec)
        self.stop_ids = list(self._engine.stop_ids)
        # each token's text, for the lazy trigger (decoding whole tails every step would cost more)
        self.pieces = [self.tokenizer.decode([i]) if i < len(self.tokenizer) else "" for i in range(self.vocab_size)]
        enc = lambda s: self.tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
        self.open_ids = enc(self.open)
        self.close_ids = enc(self.close)
        self.think_close_ids = enc(f"</{self.think_tag}>") if self.think_tag else []
        self.words = (self.vocab_size + 31) // 32
        # an open answer's ending is looked for once this few tokens are left
        self.horizon = 2 * self.closing_tokens + len(self.close_ids) + 1
        self.reserve = (
            len(self.think_close_ids)
            + len(self.open_ids)
            + self.answer_tokens
            + self.closing_tokens
            + len(self.close_ids)
            + 1
        )
        special = set(getattr(self.tokenizer, "all_special_ids", []) or [])
        # single-character tokens (the ending search moves one of them at a time), closers first
        singles = [(p, i) for i, p in enumerate(self.pieces) if len(p) == 1 and i not in special]
        self.single = dict(sorted(singles, key=lambda pi: (_rank(pi[0]), pi[1])))
        self.char_ids = dict(self.single.items())
        # near the limit an open answer may only take these (they cannot lengthen its ending)
        safe = [
            i
            for i, p in enumerate(self.pieces)
            if p and i not in special and (set(p) <= _WINDOW_SAFE or self.close.startswith(p))
        ]
        self.safe = pack_bits(self.words, safe) if self.answer != "text" else None
        self.close_suffix_ids = [self.close_ids] + [
            self.tokenizer.encode(self.close[j:], add_special_tokens=False) for j in range(1, len(self.close))
        ]

    def completion(self, matcher: Any, tail: str | None = None) -> list[int] | None:
        """Tokens that end an open answer: the closing tag (or the rest of a half-written one), after
        the shortest string the grammar accepts before it, searched breadth-first on copies of
        ``matcher`` (its forced continuation, else the single characters it allows, closers
        first); None when there is none of at most ``2 x closing_tokens`` characters. ``tail``: the
        answer's last characters, when known (only a tag it has begun is then tried to finish)."""
        eng, close = self._engine, self.close
        for j in range(len(close)):  # the model may have begun the tag itself
            if j and tail is not None and not tail.endswith(close[:j]):
                continue
            if eng.accept_string(eng.fork(matcher), close[j:]):
                return list(self.close_suffix_ids[j])
        frontier: list[tuple[list[int], Any]] = [([], matcher)]
        for _ in range(2 * self.closing_tokens):
            nxt = []
            for toks, m in frontier:
                if ff := eng.forced(m):
                    moves = [(self.tokenizer.encode(ff, add_special_tokens=False), ff)]
                else:
                    allowed = set(unpack_bits(eng.fill([m])[0], self.vocab_size).nonzero().flatten().tolist())
                    moves = [([i], ch) for ch, i in self.single.items() if i in allowed]
                for ids, piece in moves:
                    f = eng.fork(m)
                    if not eng.accept_string(f, piece):
                        continue
                    if eng.accept_string(eng.fork(f), close):
                        return toks + ids + list(self.close_ids)
                    nxt.append((toks + ids, f))
            frontier = nxt[:256]  # bounded: closers come first
            if not frontier:
                break
        return None

    def lead(self, max_new_tokens: int | None = None) -> list[int]:
        """Tokens every output must begin with, which sampling can prefill with the prompt instead of
        decoding one by one; [] when none. ``full``: the opening tag the grammar forces. ``answer``:
        the opening tag too when the budget forces it from the first token (``max_new_tokens`` within
        the answer's reserve, or a reasoning budget of 0: every row would be made to open it at once)."""
        if self.mode == "answer":
            forced_now = max_new_tokens is not None and (max_new_tokens <= self.reserve or self.reasoning_budget == 0)
            return list(self.open_ids) if forced_now else []
        if self.mode != "full":
            return []
        m = self._engine.matcher()
        toks = self._engine.forced_tokens(m)
        ok = all(self._engine.accept([m], [t])[0] for t in toks)
        return [t for t in toks if t not in self.stop_ids] if ok else []

    def begin(self, n: int, max_new_tokens: int) -> ConstrainedBatch:
        """State for generating ``n`` rows of at most ``max_new_tokens`` tokens."""
        return ConstrainedBatch(self, n, max_new_tokens)


def unpack_bits(bits: torch.Tensor, vocab: int) -> torch.Tensor:
    """``[..., W] int32`` packed bitmask -> ``[..., vocab]`` bool (True = allowed)."""
    shifts = torch.arange(32, dtype=torch.int32, device=bits.device)
    out = (bits.unsqueeze(-1) >> shifts) & 1
    return out.reshape(*bits.shape[:-1], -1)[..., :vocab].bool()


_POPCOUNT = torch.tensor([bin(i).count("1") for i in range(256)], dtype=torch.int16)


def forced_tokens(bits: torch.Tensor) -> torch.Tensor:
    """``[..., W] int32`` packed masks -> ``[...]`` bool: positions where the mask allowed exactly one
    token (the grammar forced it: under its mask its log-prob is 0 and it carries no gradient, so it
    must not count in a loss normaliser either). Unmasked positions (-1) are not forced.

    Examples:
        >>> forced_tokens(torch.stack([pack_bits(2, [5]), pack_bits(2, [5, 40]), torch.full((2,), -1)])).tolist()
        [True, False, False]
    """
    ones = _POPCOUNT.to(bits.device)[bits.contiguous().view(torch.uint8).long()].sum(-1)  # [..., W*4] -> [...]
    return (ones == 1) & (bits != -1).any(-1)


def pack_bits(words: int, token_ids: list[int], *, allow: bool = True) -> torch.Tensor:
    """A packed ``[W] int32`` mask allowing only ``token_ids`` (``allow=False``: all but them)."""
    vals = [0] * words
    for t in token_ids:
        vals[t // 32] |= 1 << (t % 32)
    if not allow:
        vals = [~v & 0xFFFFFFFF for v in vals]
    return torch.tensor([v - (1 << 32) if v >= 1 << 31 else v for v in vals], dtype=torch.int32)


class ConstrainedBatch:
    """Per-generation state: one matcher per row once its answer (or, in ``full`` mode, its output) starts."""

    def __init__(self, c: Constrainer, n: int, max_new_tokens: int) -> None:
        self.c, self.n, self.max_new = c, n, max_new_tokens
        self.engine = c._engine
        self.phase = [ANSWER if c.mode == "full" else FREE] * n
        self.matchers: list[Any] = [self.engine.matcher() if c.mode == "full" else None for _ in range(n)]
        self.tails = [""] * n
        self.in_think = [False] * n
        self.queue: list[list[int]] = [[] for _ in range(n)]
        self.steps = 0  # calls of advance (lockstep decoding)
        self.t = [0] * n  # tokens each row has taken (rows may differ once forced tokens are jumped)
        self.pending: set[int] = set()  # rows whose mask at their position `jump` computed (in self.bits)
        self.free_pending: set[int] = set()  # those of them whose only mask is "no stop token yet"
        self.stats = DecodeStats(rows=n)
        self.no_stop = pack_bits(c.words, c.stop_ids, allow=False)
        self.only_stop = pack_bits(c.words, c.stop_ids)
        self.opened = [False] * n
        self.closing = [False] * n  # the open answer is being completed and closed
        self.atail = [""] * n  # an open answer's last characters (is the closing tag begun?)
        self.need = [0] * n  # in the closing window: tokens its ending took when last searched (an upper bound)
        self.bits = torch.full((n, c.words), -1, dtype=torch.int32)
        self.think_open, self.think_close = (f"<{c.think_tag}>", f"</{c.think_tag}>") if c.think_tag else ("", "")

    def prime(self, lead: list[int], done: torch.Tensor) -> list[torch.Tensor]:
        """Take the forced opening ``lead`` (:meth:`Constrainer.lead`) as already sampled by every row:
        its masks (one allowed token each) are returned, its tokens fed to the row states."""
        masks = []
        if lead and self.c.mode == "answer":  # the budget's opening, made at once for every row
            self.stats.budget_forced += int((~done).sum())
        for tok in lead:
            masks.append(pack_bits(self.c.words, [tok]).expand(self.n, -1).clone())
            self._taken_forced(int((~done).sum()))
            self.advance(torch.full((self.n,), tok, dtype=torch.long), done)
        return masks

    def _taken_forced(self, rows: int) -> None:
        """Count a forced token taken by ``rows`` rows without its logits (prefilled or jumped)."""
        s = self.stats
        s.tokens, s.masked, s.forced, s.jumped = s.tokens + rows, s.masked + rows, s.forced + rows, s.jumped + rows

    def _open_answer(self, i: int) -> list[int]:
        """The tokens that close the reasoning (if open) and open the answer; a half-written opening
        tag (``<answ``) is completed rather than started again."""
        c = self.c
        if self.in_think[i]:
            return c.think_close_ids + c.open_ids
        tail = self.tails[i]
        j = next((j for j in range(len(c.open) - 1, 0, -1) if tail.endswith(c.open[:j])), 0)
        return c.tokenizer.encode(c.open[j:], add_special_tokens=False) if j else list(c.open_ids)

    def mask(self, logits: torch.Tensor, done: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        """Mask ``logits`` in place for this step; returns the packed masks ``[n, W]`` of every row
        (-1 = all allowed). ``logits`` holds the rows ``rows`` (all ``n`` when None: a decoder that
        drops ended rows passes the ones it still runs)."""
        live = (~done).nonzero().squeeze(-1).tolist()
        bits = torch.full((self.n, self.c.words), -1, dtype=torch.int32)
        if not live:
            return bits
        pending = self.pending
        todo = [i for i in live if i not in pending] if pending else live
        free = set(self.row_bits(todo)[1]) if todo else set()
        if pending:  # rows whose mask `jump` computed already (in self.bits)
            free |= self.free_pending
            self.pending, self.free_pending = set(), set()
        bits[live] = self.bits[live]
        # each row's place in ``logits``: itself, or its place among the rows still decoded
        at = None if rows is None else {r: k for k, r in enumerate(rows.tolist())}
        pos = (lambda idx: idx) if at is None else (lambda idx: [at[i] for i in idx])
        self.stats.tokens += len(live)
        free_rows = [i for i in live if i in free]
        if free_rows:  # the only mask there is "no stop token yet": count when it overruled the policy
            top = logits[pos(free_rows)].argmax(-1)
            self.stats.stop_blocked += int(sum(int((top == s_).sum()) for s_ in self.c.stop_ids))
        if rest := [i for i in live if i not in free]:
            self._count(logits[pos(rest)], bits[rest])
        self.engine.apply(logits, bits if rows is None else bits[rows])
        return bits

    def row_bits(self, live: list[int]) -> tuple[torch.Tensor, list[int]]:
        """The masks of rows ``live`` at their positions (written to ``self.bits``, returned in that
        order), and which of them are free reasoning (the only mask: no stop token yet). Opens an
        answer the budget calls for and finishes one the length limit calls for (their tokens queued)."""
        c = self.c
        queued, queued_tok, free, end, grammar, window = [], [], [], [], [], []
        phase, queue, opened, tt = self.phase, self.queue, self.opened, self.t
        for i in live:
            ph = phase[i]
            if not queue[i]:
                left = self.max_new - tt[i]
                if (
                    not opened[i]
                    and (ph == FREE or (ph == ANSWER and self.in_think[i]))
                    and (left <= c.reserve or (c.reasoning_budget is not None and tt[i] >= c.reasoning_budget))
                ):
                    queue[i] = self._open_answer(i)  # close the reasoning, open the answer
                    self.stats.budget_forced += 1
                elif (
                    ph == ANSWER
                    and opened[i]
                    and left <= c.horizon
                    and not self.closing[i]
                    and self._close_answer(i, left)
                    and c.safe is not None
                ):
                    window.append(i)  # finishing the open answer before the limit: only safe tokens now
            if queue[i]:
                queued.append(i)
                queued_tok.append(queue[i][0])
            elif ph == FREE:
                free.append(i)  # no ending before an answer was given
            elif ph == ANSWER:
                grammar.append(i)
            elif ph == END:
                end.append(i)
        bits = self.bits
        bits[live] = -1
        if free:
            bits[free] = self.no_stop
        if end:
            bits[end] = self.only_stop
        if queued:
            q = torch.tensor(queued_tok)
            bits[queued] = 0
            bits[queued, q // 32] = torch.where(q % 32 == 31, torch.tensor(-(2**31)), 1 << (q % 32)).to(torch.int32)
        if grammar:
            bits[grammar] = self.engine.fill([self.matchers[i] for i in grammar])
        if window:
            safe = bits[window] & cast(torch.Tensor, c.safe)  # window is only set where c.safe is
            ok = (safe != 0).any(1).tolist()
            bits[window] = torch.where(torch.tensor(ok)[:, None], safe, bits[window])
            for i, fine in zip(window, ok):
                if not fine:  # the grammar allows nothing safe here (mid-command): end the answer now
                    self.need[i] = 0
                    self._close_answer(i, 0, force=True)
                    if self.queue[i]:
                        bits[i] = pack_bits(c.words, self.queue[i][:1])
        return bits[live], free

    def jump(self, rows: list[int], room: list[int]) -> list[tuple[list[int], list[int], torch.Tensor]]:
        """Jump-forward: the tokens each of ``rows`` is forced to take next (its mask allows exactly one
        token), at most ``room[k]`` for row ``rows[k]``, taken now (fed to the row states, counted as
        forced tokens). Returned position by position: ``(rows, tokens, masks [len(rows), W])``, each
        row one token further per entry; a forced stop token ends a row's run. Decoding feeds them to
        the model in one forward instead of one step each; the samples and masks are those of decoding
        token by token. A row's first mask that is not forced is kept for the next :meth:`mask`."""
        out = []
        left = dict(zip(rows, room))
        stops = set(self.c.stop_ids)
        todo = [i for i in rows if left[i] > 0]
        while todo:
            bits, free = self.row_bits(todo)
            one = _single_token(bits)
            free_set = set(free)
            forced, toks, ks = [], [], []
            for k, (i, tok) in enumerate(zip(todo, one)):
                if tok < 0:  # a choice: self.bits[i] is the next step's mask
                    self.pending.add(i)
                    if i in free_set:
                        self.free_pending.add(i)
                else:
                    forced.append(i)
                    toks.append(tok)
                    ks.append(k)
            if not forced:
                break
            out.append((forced, toks, bits[ks]))
            self._taken_forced(len(forced))
            self.take(forced, toks)
            for i in forced:
                left[i] -= 1
            todo = [i for i, tok in zip(forced, toks) if tok not in stops and left[i] > 0]
        return out

    def _close_answer(self, i: int, left: int, force: bool = False) -> bool:
        """In the closing window: force the open answer's ending once it needs all but
        ``closing_tokens`` of the ``left`` tokens (one more is kept for the stop token); True
        when the row may still sample (under the window's safe tokens). A row no ending fits is
        counted, once, and left to run. Under safe tokens the ending never grows, so the length
        found when the window opened bounds it: it is searched again only to be forced."""
        c = self.c
        if not force and self.need[i] and self.need[i] + c.closing_tokens < left:
            return True  # still room by the bound: go on sampling safe tokens
        toks = c.completion(self.matchers[i], self.atail[i])
        if toks is None or (not force and len(toks) + 1 > left):
            self.closing[i] = True
            self.stats.unclosable += 1
            return False
        if force or len(toks) + 1 + c.closing_tokens >= left:
            self.closing[i] = True
            self.queue[i] = toks
            begun = any(self.atail[i].endswith(c.close[:j]) for j in range(1, len(c.close)))
            self.stats.closed_forced += not begun  # a tag the model had begun is only finished
            return False
        self.need[i] = len(toks) + 1
        return True

    def _count(self, logits: torch.Tensor, bits: torch.Tensor) -> None:
        """Statistics of the answer-segment masks (grammar, forced tokens, the final stop): ``logits``
        and ``bits`` are those rows' own."""
        s = self.stats
        allowed = unpack_bits(bits.to(logits.device), logits.shape[-1])  # the masks are kept on the CPU
        lg = logits.float()
        s.masked += len(bits)
        s.forced += int((allowed.sum(-1) == 1).sum())
        s.argmax_masked += int((~allowed.gather(-1, lg.argmax(-1, keepdim=True))).sum())
        s.masked_mass += float((torch.softmax(lg, -1) * ~allowed).sum())

    def advance(self, tokens: torch.Tensor, done: torch.Tensor) -> None:
        """Feed this step's sampled tokens to the row states (rows already done are skipped)."""
        toks, finished = tokens.tolist(), done.tolist()
        rows = [i for i in range(self.n) if not finished[i]]
        self.take(rows, [toks[i] for i in rows])
        self.steps += 1

    def skip(self, row: int, k: int) -> None:
        """Row ``row`` took ``k`` tokens that are not the policy's (an episode's tool result): they
        use its token budget, so the reasoning budget and the answer's reserve count them, but they
        are never fed to its state (a tag inside a tool's output opens or closes nothing)."""
        self.t[row] += k
        self.tails[row] = ""
        self.pending.discard(row)
        self.free_pending.discard(row)

    def take(self, rows: list[int], toks: list[int]) -> None:
        """Feed token ``toks[k]`` to row ``rows[k]``'s state (each row one token further)."""
        c = self.c
        track_all = c.mode == "full"  # the budget there needs to know whether the reasoning is open
        answering: list[int] = []
        answer_toks: list[int] = []
        for i, tok in zip(rows, toks):
            self.t[i] += 1
            ph = self.phase[i]
            if ph in (END, BROKEN):
                continue
            if self.queue[i] and self.queue[i][0] == tok:
                self.queue[i].pop(0)
            if ph == ANSWER:
                answering.append(i)
                answer_toks.append(tok)
                if self.opened[i]:
                    self.atail[i] = (self.atail[i] + (c.pieces[tok] if tok < len(c.pieces) else ""))[-len(c.close) :]
            if ph == FREE or (track_all and not self.opened[i]):
                piece = c.pieces[tok] if tok < len(c.pieces) else ""
                tail = (self.tails[i] + piece)[-64:]
                self.tails[i] = tail
                if ">" not in piece:  # every tag ends with ">": nothing can have opened or closed
                    continue
                if c.think_tag:
                    if tail.endswith(self.think_open):
                        self.in_think[i] = True
                    elif tail.endswith(self.think_close):
                        self.in_think[i] = False
                k = tail.rfind(c.open)
                if k >= 0:
                    self.opened[i] = True
                    if ph == FREE:  # the lazy trigger: the answer starts here
                        m = self.engine.matcher()
                        rest = tail[k + len(c.open) :]
                        if rest and not self.engine.accept_string(m, rest):
                            self.phase[i] = BROKEN
                            self.stats.broken += 1
                            continue
                        self.matchers[i], self.phase[i], self.queue[i] = m, ANSWER, []
        if answering:
            ms = [self.matchers[i] for i in answering]
            accepted = self.engine.accept(ms, answer_toks)
            for i, m, ok in zip(answering, ms, accepted):
                if not ok:
                    self.phase[i], self.queue[i] = BROKEN, []
                    self.stats.broken += 1
                elif self.engine.finished(m):
                    self.phase[i] = END


def _single_token(bits: torch.Tensor) -> list[int]:
    """Per packed mask row: its one allowed token, or -1 when it allows none or several."""
    nonzero = bits != 0
    word = nonzero.int().argmax(-1)
    w = bits.gather(-1, word[:, None]).squeeze(-1).long() & 0xFFFFFFFF
    one = (nonzero.sum(-1) == 1) & ((w & (w - 1)) == 0)
    bit = torch.log2(w.clamp(min=1).double()).long()  # exact for a power of two
    return torch.where(one, word.long() * 32 + bit, -1).tolist()


def from_config(decoding: Any, tokenizer: Any, vocab_size: int, rewards: Any = None) -> Constrainer | None:
    """The constrainer a ``decoding`` config asks for (None for ``none``), with the tags of the
    ``rewards``' format reward. Where it forces the whole format (``full``, or ``answer`` with an
    answer-only format) the format reward is constant, so it leaves the advantage (weight 0; still
    computed and logged): every engine builds its constrainer here, so they all agree on that."""
    d = decoding
    if d.constrain == "none":
        return None

    fmt = rewards.rewards.get("format") if rewards is not None else None
    think = getattr(fmt, "think_tag", None) if fmt is not None else None
    # the whole shape is forced in `full` mode, and in `answer` mode when the format is the answer alone
    forced = d.constrain == "full" or think is None
    if (
        forced
        and rewards is not None
        and "format" in rewards.schedules
        and any(rewards.weights_at(s).get("format") for s in (0, 10**9))
    ):
        warnings.warn(
            "decoding.constrain forces the output format, so the format reward is constant: it is "
            "dropped from the advantage (weight 0) and still logged",
            stacklevel=3,
        )
        rewards.schedules["format"] = Schedule.parse(0.0)
    return Constrainer(
        tokenizer,
        vocab_size,
        mode=d.constrain,
        answer=d.answer,
        schema=d.json_schema,
        think_tag=think,
        answer_tag=getattr(fmt, "answer_tag", "answer"),
        reasoning_budget=d.reasoning_budget,
        answer_tokens=d.answer_tokens,
        max_chars=d.max_chars,
        backend=d.backend,
    )


class GrammarLogitsProcessor(LogitsProcessor):
    """The constraint as a transformers ``LogitsProcessor``: ``processor(input_ids, scores) -> scores``.

    For ``model.generate(logits_processor=[...])`` (TRL's transformers path when rlvr's own sampling
    loop cannot take TRL's sampling settings): each call first feeds the token appended since the
    previous call (the last column of ``input_ids``) to the row states, then masks ``scores`` in
    place. The packed mask of every step is kept in :attr:`masks` (``[n, W]`` each) and the
    statistics in :attr:`stats`.
    """

    def __init__(self, constrainer: Constrainer, batch_size: int, max_new_tokens: int) -> None:
        self.state = constrainer.begin(batch_size, max_new_tokens)
        self.stop = torch.tensor(constrainer.stop_ids)
        self.done = torch.zeros(batch_size, dtype=torch.bool)
        self.start: int | None = None
        self.masks: list[torch.Tensor] = []

    @property
    def stats(self) -> DecodeStats:
        return self.state.stats

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """Mask ``scores`` (one row per row of ``input_ids``) for the next token."""
        if self.start is None:
            self.start = input_ids.shape[1]
        elif input_ids.shape[1] > self.start + self.state.steps:
            last = input_ids[:, -1].cpu()
            self.state.advance(last, self.done)
            self.done = self.done | torch.isin(last, self.stop)
        if scores.dtype != torch.float32:
            scores = scores.float()
        self.masks.append(self.state.mask(scores, self.done))
        return scores


#: Masked (grammar) positions whose logits are built at once by :func:`masked_hidden_logprobs`.
MASKED_CHUNK = 256


def masked_hidden_logprobs(
    logp: torch.Tensor,
    hidden: torch.Tensor,
    tokens: torch.Tensor,
    bits: torch.Tensor | None,
    logits_of: Callable[[torch.Tensor], torch.Tensor],
    temperature: float = 1.0,
) -> torch.Tensor:
    """:func:`masked_logprobs` from hidden states: the logits of the masked positions only
    (``logits_of``: a model's head, float32), :data:`MASKED_CHUNK` at a time, each chunk recomputed in
    the backward (``torch.utils.checkpoint``) rather than kept."""

    if bits is None:
        return logp
    bits = bits[:, : tokens.shape[1]].to(hidden.device)
    where = (bits != -1).any(-1)
    if not bool(where.any()):
        return logp

    def allowed(h: torch.Tensor, b: torch.Tensor, tok: torch.Tensor) -> torch.Tensor:
        return _allowed_logprobs(logits_of(h), b, tok, temperature)

    idx = where.nonzero(as_tuple=True)
    picked = []
    for start in range(0, len(idx[0]), MASKED_CHUNK):
        part = tuple(i[start : start + MASKED_CHUNK] for i in idx)
        picked.append(checkpoint(allowed, hidden[part], bits[part], tokens[part], use_reentrant=False))
    return logp.index_put(idx, torch.cat(picked).to(logp.dtype))


def masked_logprobs(
    logp: torch.Tensor, logits: torch.Tensor, tokens: torch.Tensor, bits: torch.Tensor | None, temperature: float = 1.0
) -> torch.Tensor:
    """``logp [N, T]`` with every masked position recomputed under its sampling mask.

    ``bits [N, T, W]`` are the packed masks kept with the rollouts (-1: unmasked). The
    masked positions' log-probs are those of the renormalised allowed set, as sampled,
    so the policy ratio compares like with like; out of place (autograd-safe).
    """
    if bits is None:
        return logp
    bits = bits[:, : tokens.shape[1]].to(logits.device)
    where = (bits != -1).any(-1)
    if not bool(where.any()):
        return logp
    idx = where.nonzero(as_tuple=True)
    picked = _allowed_logprobs(logits[idx].float(), bits[idx], tokens[idx], temperature)
    return logp.index_put(idx, picked.to(logp.dtype))


def _allowed_logprobs(
    logits: torch.Tensor, bits: torch.Tensor, tokens: torch.Tensor, temperature: float
) -> torch.Tensor:
    """``[M]`` log-probs of ``tokens`` among the allowed set of each position: ``logits [M, V]`` (float32)
    scaled by the temperature, everything outside ``bits [M, W]`` at -inf, renormalised."""
    lg = logits / temperature if temperature != 1.0 else logits
    lg = lg.masked_fill(~unpack_bits(bits, lg.shape[-1]), float("-inf"))
    return lg.gather(-1, tokens[:, None]).squeeze(-1) - torch.logsumexp(lg, -1)
