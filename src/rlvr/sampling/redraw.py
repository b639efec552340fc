"""The redraw loop, one for every engine: redraw the rows the failure step names, within the budget,
until none is left, the tries are spent or the environment is down.

A step's rows go in scored, each with its cause; the rows :meth:`FailureAware.to_resample` names
(``invalid``, ``off_policy``, the environment's faults, ``truncated`` by option) are drawn again for
the same prompts by the engine's ``draw`` and scored, as many rounds as
:class:`~rlvr.diagnostics.redraws.Redraws` allows, the originals kept for the log. rlvr's engine
(:mod:`rlvr.engine.draws`, in-process or in the asynchronous sampler) and the TRL adapter
(:mod:`rlvr.integrations.trl.trainer`, single-turn rows and whole tool episodes) call it with their
own rows and ``draw``; on TRL every process joins every round (:class:`Together`), so sharded
models stay in step and the outage is judged on every process's rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from rlvr.diagnostics.causes import Cause
from rlvr.diagnostics.redraws import Redraws, env_counts
from rlvr.diagnostics.step import FailureAware, RolloutView


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
