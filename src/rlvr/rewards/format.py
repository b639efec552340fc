"""``format``: is the completion exactly ``<think>...</think> <answer>...</answer>``?

Stricter than the seeds' regex in two ways that matter for RL: each tag must occur
exactly once, so ``<answer>1</answer><answer>2</answer>`` (two answers, hedging)
does not pass; and the answer block must not be empty (a tiny model under GRPO
learnt to emit ``<answer></answer>`` for the format reward alone). When it fails,
``info["problem"]`` says why: that is the format death's cause, logged rather than thrown away.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from typing import Any, Literal

from rlvr.errors import ConfigError
from rlvr.rewards.base import Reward, Scored, register, register_alias


@register("format")
class Format(Reward):
    """1.0 iff the whole completion is a think block then an answer block, else 0.0.

    Args:
        think_tag: name of the reasoning tag; ``None`` for answer-only formats
            (the whole completion must then be one ``<answer>...</answer>`` block).
        answer_tag: name of the answer tag.
        mode: ``strict`` (all or nothing) or ``tag_count`` (0.25 for each of the four
            tags present exactly once: partial credit while the format is learnt).
        prefilled_think: the prompt already ends with ``<think>`` (R1's template), so
            the completion starts inside the think block.
    """

    name = "format"

    def __init__(
        self,
        *,
        think_tag: str | None = "think",
        answer_tag: str = "answer",
        mode: Literal["strict", "tag_count"] = "strict",
        prefilled_think: bool = False,
    ) -> None:
        super().__init__()
        if mode not in ("strict", "tag_count"):
            raise ConfigError(f"format mode must be 'strict' or 'tag_count', got {mode!r}")
        for tag in (t for t in (think_tag, answer_tag) if t is not None):
            if not re.fullmatch(r"[A-Za-z_][\w-]*", tag):
                raise ConfigError(f"tag names must be plain words, got {tag!r}")
        self.think_tag, self.answer_tag, self.mode, self.prefilled_think = think_tag, answer_tag, mode, prefilled_think

    @cached_property
    def _tags(self) -> tuple[str, ...]:
        t, a = self.think_tag, self.answer_tag
        return (f"<{t}>", f"</{t}>", f"<{a}>", f"</{a}>") if t else (f"<{a}>", f"</{a}>")

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        tags = [re.escape(t) for t in self._tags]
        body = r"\s*".join(f"{tags[i]}(.*?){tags[i + 1]}" for i in range(0, len(tags), 2))
        return re.compile(rf"\s*{body}\s*", re.DOTALL)

    def problem(self, text: str) -> str | None:
        """Why ``text`` is not well formatted (``None`` when it is)."""
        counts = {tag: text.count(tag) for tag in self._tags}
        for tag, n in counts.items():
            if n == 0:
                return f"missing {tag}"
            if n > 1:
                return f"{tag} appears {n} times"
        match = self._pattern.fullmatch(text)
        if match and not match.group(match.lastindex or 0).strip():
            return f"empty {self._tags[-2]} block"  # an empty answer would let the format reward be gamed
        if not match:
            tags = self._tags
            at = [text.index(tag) for tag in tags]
            if at != sorted(at):
                return "tags out of order"
            if text[: at[0]].strip():
                return f"text before {tags[0]}"
            if text[at[-1] + len(tags[-1]) :].strip():
                return f"text after {tags[-1]}"
            return f"text between {tags[1]} and {tags[2]}"
        return None

    def _one(self, text: str) -> Scored:
        if self.prefilled_think and self.think_tag:
            text = self._tags[0] + text
        if self.mode == "tag_count":
            present = sum(text.count(tag) == 1 for tag in self._tags)
            return Scored(present / len(self._tags), info={"tags_present": present})
        why = self.problem(text)
        return Scored(1.0 if why is None else 0.0, info={"problem": why} if why else {})

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        return [self._one(t) for t in texts]


register_alias("tag_count", "format", mode="tag_count")
