"""A record per row: each rollout with its prompt, its tokens, how it scored and why it lived or died.

:class:`ScoredRows` is what rlvr's engine carries from the draw to the update: the batch's rows
(tokens, masks, log-probs, episodes), the sample each row answers, the failure step's view of each
(verdict, total, components, finish, text, version, the episode's own cause) and its cause. Rows
are selected, joined and replaced whole (a redraw replaces rows with their scores and causes), so
the five things a row is never drift apart; a cause is decided when the row is scored, again only
when the step that trains it changes (a group drawn ahead) or the off-policy correction rejects it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from rlvr.data.tasks import Sample
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.step import FailureAware, RolloutView
from rlvr.sampling.batch import RolloutBatch
from rlvr.types import RewardBreakdown


def views_of(
    samples: Sequence[Sample], batch: RolloutBatch, breakdowns: Sequence[RewardBreakdown], owned: frozenset[Cause]
) -> list[RolloutView]:
    """The failure step's view of each row (``owned``: the causes that are the environment's)."""
    episodes = batch.episodes or [None] * len(samples)
    return [
        RolloutView(
            s.id,
            b.verdict,
            b.total,
            b.components,
            fin,
            text,
            v,
            b.weights,
            episode=ep.cause(owned) if ep is not None else None,
            events=tuple(e.cause for e in ep.events) if ep is not None else (),
        )
        for s, b, fin, text, v, ep in zip(samples, breakdowns, batch.finish, batch.texts, batch.versions, episodes)
    ]


@dataclass
class ScoredRows:
    """``N`` rollouts in groups of ``batch.group_size``, a record per row.

    Attributes:
        samples: the sample each row answers (a group's rows share theirs).
        batch: the rows' tokens, masks, log-probs, finish, versions, episodes.
        views: the failure step's view of each row (its scores among them).
        causes: each row's cause, as of the step that trains it.
        pad_id: the tokenizer's pad id (rows joined from two batches are padded with it).
    """

    samples: list[Sample]
    batch: RolloutBatch
    views: list[RolloutView]
    causes: list[Cause]
    pad_id: int

    @classmethod
    def of(
        cls,
        samples: Sequence[Sample],
        batch: RolloutBatch,
        breakdowns: Sequence[RewardBreakdown],
        fa: FailureAware,
        step: int,
        pad_id: int,
    ) -> ScoredRows:
        """Rows scored as ``breakdowns`` say, their causes decided for ``step``."""
        views = views_of(samples, batch, breakdowns, fa.env_faults)
        return cls(list(samples), batch, views, fa.causes(views, step), pad_id)

    def __len__(self) -> int:
        return len(self.views)

    @property
    def group_size(self) -> int:
        return self.batch.group_size

    def episode(self, i: int) -> object | None:
        """Row ``i``'s episode (None for a single-turn row)."""
        return self.batch.episodes[i] if self.batch.episodes is not None else None

    def served(self) -> list[bool]:
        """Per row: did the environment answer one of its episode's calls (False for single-turn rows)."""
        eps = self.batch.episodes or [None] * len(self)
        return [ep is not None and ep.served() > 0 for ep in eps]

    def select_groups(self, groups: Sequence[int]) -> ScoredRows:
        """These groups alone, in that order."""
        g = self.group_size
        rows = [k * g + j for k in groups for j in range(g)]
        return ScoredRows(
            [self.samples[i] for i in rows],
            self.batch.select_groups(list(groups)),
            [self.views[i] for i in rows],
            [self.causes[i] for i in rows],
            self.pad_id,
        )

    def concat(self, other: ScoredRows) -> ScoredRows:
        """These groups, then ``other``'s."""
        return ScoredRows(
            self.samples + other.samples,
            self.batch.concat(other.batch, self.pad_id),
            self.views + other.views,
            self.causes + other.causes,
            self.pad_id,
        )

    def replace(self, rows: Sequence[int], new: ScoredRows) -> ScoredRows:
        """A copy with ``rows`` taken from ``new``'s first rows (redrawn for the same prompts, in order)."""
        views, causes = list(self.views), list(self.causes)
        for j, i in enumerate(rows):
            views[i], causes[i] = new.views[j], new.causes[j]
        drawn = new.batch if len(new) == len(rows) else new.batch.select_rows(list(range(len(rows))))
        batch = self.batch.replace_rows(list(rows), drawn, self.pad_id)
        return ScoredRows(list(self.samples), batch, views, causes, self.pad_id)

    def recaused(self, fa: FailureAware, step: int) -> ScoredRows:
        """The same rows with their causes decided for ``step`` (a group drawn ahead, trained later:
        it may have grown stale)."""
        return dataclasses.replace(self, causes=fa.causes(self.views, step))

    def rejected(self, off_policy: Sequence[bool], fa: FailureAware, step: int) -> ScoredRows:
        """The rows the off-policy correction rejects marked so (their cause ``off_policy``)."""
        views = [dataclasses.replace(v, off_policy=True) if r else v for v, r in zip(self.views, off_policy)]
        causes = list(self.causes)
        hit = [i for i, r in enumerate(off_policy) if r]
        for i, c in zip(hit, fa.causes([views[i] for i in hit], step)):
            causes[i] = c
        return dataclasses.replace(self, views=views, causes=causes)
