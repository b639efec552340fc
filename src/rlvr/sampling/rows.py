"""A step's rows, a record per row, and the redraw loop every engine runs over them.

:class:`ScoredRows` is what rlvr's engine carries from the draw to the update: the batch's rows
(tokens, masks, log-probs, episodes), the sample each row answers, the failure step's view of each
(verdict, total, components, finish, text, version, the episode's own cause) and its cause. Rows
are selected, joined and replaced whole (a redraw replaces rows with their scores and causes), so
what a row is never drifts apart; a cause is decided when the row is scored, again only when the
step that trains it changes (a group drawn ahead) or the off-policy correction rejects it.

:func:`redraw` is the one redraw loop: the rows :meth:`FailureAware.to_resample` names (``invalid``,
``off_policy``, the environment's faults, ``truncated`` by option) drawn again for the same prompts
by the engine's ``draw`` and scored, as many rounds as :class:`~rlvr.diagnostics.redraws.Redraws`
allows, the originals kept for the log. rlvr's engine (:mod:`rlvr.engine.draws`, in-process or in
the asynchronous sampler) runs it over :class:`ScoredRows`; the TRL adapter over its own rows
(:mod:`rlvr.integrations.trl.rows`: single-turn rows and whole tool episodes), every process joining
every round (:class:`Together`), so sharded models stay in step and the outage is judged on every
process's rows.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from rlvr.data.tasks import Sample
from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.redraws import Redraws, env_counts
from rlvr.diagnostics.step import FailureAware, RolloutView
from rlvr.sampling.batch import RolloutBatch
from rlvr.types import RewardBreakdown


def served(episodes: Sequence[Any]) -> list[bool]:
    """Per row: did the environment answer one of its episode's calls (False for a single-turn row,
    whose episode is None)."""
    return [ep is not None and ep.served() > 0 for ep in episodes]


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
        return served(self.batch.episodes or [None] * len(self))

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


class Rows(Protocol):
    """What the loop reads of an engine's rows: each row's view and cause, whether the environment
    answered one of its calls, its episode; and a copy with some rows replaced."""

    views: list[RolloutView]
    causes: list[Cause]

    def served(self) -> list[bool]: ...

    def episode(self, i: int) -> object | None: ...

    def replace(self: R, rows: Sequence[int], new: R) -> R: ...


R = TypeVar("R", bound=Rows)


@dataclass(frozen=True)
class Replaced:
    """A row a redraw replaced, as it was: its index in the step, the round that replaced it, its
    view, cause and episode (the run folder logs it, ``replaced``)."""

    row: int
    attempt: int
    view: RolloutView
    cause: Cause
    episode: object | None = None


class Together:
    """How the processes of one step agree (one process: nothing to agree). An engine whose rows
    are spread over processes overrides both: every process runs the same rounds."""

    def widest(self, n: int) -> int:
        """The most rows any process redraws this round (0: the loop ends on every process)."""
        return n

    def total(self, counts: tuple[int, int]) -> tuple[int, int]:
        """``(faulted, served)`` summed over the processes."""
        return counts


ALONE = Together()


def redraw(
    rows: R,
    fa: FailureAware,
    redraws: Redraws,
    draw: Callable[[list[int], int, int], R],
    *,
    together: Together = ALONE,
) -> tuple[R, list[Replaced]]:
    """Redraw ``rows``' failed rows as ``redraws`` allows; returns the rows and those replaced.

    ``draw(bad, attempt, width)``: rows ``bad`` drawn again for their prompts and scored, in
    order (round ``attempt``, 1-based); ``width >= len(bad)`` is the most any process draws this
    round (a process may draw that many, padding with rows of its own: only the first ``len(bad)``
    are read). The first draw's faults count for the outage as round 0.
    """
    owned = fa.left_out()
    redraws.observe(*together.total(env_counts(rows.causes, rows.served(), owned)), 0)
    replaced: list[Replaced] = []
    for attempt in itertools.count(1):
        bad = redraws.plan(fa.to_resample(rows.causes), attempt)
        width = together.widest(len(bad))
        if width == 0:
            break
        new = draw(bad, attempt, width)
        n = len(bad)
        redraws.observe(*together.total(env_counts(new.causes[:n], new.served()[:n], owned)), attempt)
        replaced += [Replaced(i, attempt, rows.views[i], rows.causes[i], rows.episode(i)) for i in bad]
        rows = rows.replace(bad, new) if bad else rows
    return rows, replaced
