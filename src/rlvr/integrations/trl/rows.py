"""TRL's rows as the shared redraw loop (:func:`rlvr.sampling.rows.redraw`) reads them.

TRL carries a generation batch as parallel per-row lists (its ``_generate`` tuple: prompt ids,
completion ids, tool masks, messages, log-probs, images; or, for single-turn rows, completion ids,
log-probs and the grammar's masks). :class:`TRLRows` keeps those columns with each row's view,
cause and episode, and replaces rows in all of them at once; :class:`Processes` makes every process
run the same rounds (TRL gathers inside them) and judge the outage on every process's rows.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.step import RolloutView
from rlvr.sampling.rows import Together, served


@dataclass
class TRLRows:
    """This process's rows of one TRL generation batch, a record per row.

    Attributes:
        columns: TRL's per-row lists, each None where TRL has none (log-probs off, no tools...).
        views: the failure step's view of each row.
        causes: each row's cause.
        episodes: each row's :class:`rlvr.episodes.Episode` (TRL's tool loop), None without tools.
    """

    columns: tuple[list[Any] | None, ...]
    views: list[RolloutView]
    causes: list[Cause]
    episodes: list[Any] | None = None

    def served(self) -> list[bool]:
        return served(self.episodes or [None] * len(self.views))

    def episode(self, i: int) -> object | None:
        return self.episodes[i] if self.episodes is not None else None

    def replace(self, rows: Sequence[int], new: TRLRows) -> TRLRows:
        """A copy with ``rows`` taken from ``new``'s first rows (in order), in every column."""
        columns = []
        for mine, theirs in zip(self.columns, new.columns):
            if mine is not None and theirs is not None:
                mine = copy.copy(mine)
                for j, i in enumerate(rows):
                    mine[i] = theirs[j]
            columns.append(mine)
        views, causes = list(self.views), list(self.causes)
        episodes = list(self.episodes) if self.episodes is not None else None
        for j, i in enumerate(rows):
            views[i], causes[i] = new.views[j], new.causes[j]
            if episodes is not None and new.episodes is not None:
                episodes[i] = new.episodes[j]
        return TRLRows(tuple(columns), views, causes, episodes)


@dataclass(frozen=True)
class GatheredRow:
    """One row of a generation batch as every process holds it after the gather: the process that
    drew it, its view, its cause before any redraw, TRL's data row, its episode (None without tools)."""

    rank: int
    view: RolloutView
    first_cause: Cause | None
    row: dict[str, Any]
    episode: Any = None


class Processes(Together):
    """Every process of a TRL run agrees on each round (``accelerator``: TRL's)."""

    def __init__(self, accelerator: Any) -> None:
        self.accelerator = accelerator

    def widest(self, n: int) -> int:
        got = self.accelerator.gather(torch.tensor([n], device=self.accelerator.device))
        return int(got.max())

    def total(self, counts: tuple[int, int]) -> tuple[int, int]:
        got = self.accelerator.gather(torch.tensor(list(counts), device=self.accelerator.device))
        faulted, served = (int(x) for x in got.view(-1, 2).sum(0))
        return faulted, served


def padded(bad: list[int], width: int) -> list[int]:
    """``bad`` filled up to ``width`` rows with its first (row 0 when empty): a process draws as many
    rows as the widest does, so TRL's gathers inside the draw see the same shapes on every process.

    Examples:
        >>> padded([3, 5], 4), padded([], 2)
        ([3, 5, 3, 3], [0, 0])
    """
    return bad + [bad[0] if bad else 0] * (width - len(bad))
