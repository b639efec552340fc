"""A verl training batch through rlvr's failure-aware step (verl-free; the replay buffer calls it).

verl's rows come in any order, keyed ``{uid}_{session}_{index}``, each carrying what the ``rlvr``
reward manager wrote into its ``reward_extra_info`` (:mod:`.rows`). :func:`decide_rows` lays them
out as rlvr's groups (one per uid, consecutive), lets :class:`~rlvr.diagnostics.step.FailureAware`
decide (causes, cold start, admission, advantages, quarantine, metrics), and gives the decision
back in verl's row order.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from rlvr.diagnostics.causes import Cause, shown
from rlvr.diagnostics.late_rejection import reject_late
from rlvr.diagnostics.step import Decision, FailureAware, RolloutView, rollout_record
from rlvr.errors import ConfigError
from rlvr.integrations.verl.settings import EXTRA_KEYS
from rlvr.types import Status, Verdict

_RESERVED = frozenset(EXTRA_KEYS)


@dataclass(frozen=True)
class Row:
    """One trajectory of a verl batch: its key, prompt group (uid), prompt id, the reward manager's
    ``reward_extra_info`` and the policy version that sampled it."""

    key: str
    uid: str
    prompt_id: str
    info: dict[str, Any]
    version: int = 0


@dataclass
class RowsDecision:
    """The step's decision in verl's row order."""

    rows: list[Row]
    views: list[RolloutView]
    causes: list[Cause]
    admit: torch.Tensor
    advantages: torch.Tensor
    quarantined: list[str]
    metrics: dict[str, Any]

    def reject(self, rejected: Sequence[bool]) -> RowsDecision:
        """This decision after verl's rollout correction rejected ``rejected`` rows (in this
        decision's row order): those ``off_policy`` and out, the changed metrics replaced."""
        if not any(rejected):
            return self
        causes, admit, changed = reject_late(self.causes, self.admit, rejected)
        metrics = {k: v for k, v in self.metrics.items() if not k.startswith("causes/")}
        return dataclasses.replace(self, causes=causes, admit=admit, metrics={**metrics, **changed})

    def records(self, golds: Sequence[Any], tasks: Sequence[Any]) -> list[dict[str, Any]]:
        """``rollouts.jsonl`` lines, with each row's verl key."""
        return [
            rollout_record(
                v,
                c,
                prompt=None,
                gold=g,
                task=t,
                advantage=float(a),
                admitted=bool(ok),
                key=r.key,
                episode=_episode(r.info),
            )
            for r, v, c, a, ok, g, t in zip(
                self.rows,
                self.views,
                self.causes,
                self.advantages.tolist(),
                self.admit.tolist(),
                golds,
                tasks,
                strict=True,
            )
        ]


def view_of(row: Row) -> RolloutView:
    """The failure-aware step's view of a row, from its ``reward_extra_info``.

    Raises:
        ConfigError: the row was not scored by rlvr's reward manager.
    """
    info = row.info
    if "cause" not in info or "status" not in info:
        raise ConfigError(
            f"row {row.key}: its reward_extra_info has no rlvr cause ({sorted(info) or 'empty'}); "
            "rlvr's replay buffer reads what rlvr's reward manager writes: set "
            "reward.reward_manager.name=rlvr"
        )
    status = info["status"]
    verdict = (
        None
        if status == "none"
        else Verdict(Status(status), extracted=info.get("pred") or "", reason=info.get("reason") or "")
    )
    components = {k: v for k, v in info.items() if k not in _RESERVED}
    episode = _episode(info)
    own = info.get("episode_cause") or ""
    return RolloutView(
        row.prompt_id,
        verdict,
        info.get("total"),
        components,
        info.get("finish", "eos"),
        info.get("completion", ""),
        row.version,
        episode=Cause(own) if own else None,
        events=tuple(Cause(e["cause"]) for e in episode.get("events", [])) if episode else (),
    )


def _episode(info: dict[str, Any]) -> dict[str, Any] | None:
    """The episode ``rlvr_tool_agent`` recorded for a row (None for a single-turn row)."""
    raw = info.get("episode") or ""
    return json.loads(raw) if raw else None


def decide_rows(
    fa: FailureAware, rows: Sequence[Row], step: int, first_causes: dict[str, Sequence[Cause]] | None = None
) -> RowsDecision:
    """The failure-aware decision over a verl batch (``step``: verl's 1-based global step).

    Groups must all have the same size (verl's ``rollout.n``); a group verl padded or lost rows from
    is decided row by row (its rows' own admission; no group statistics, no quarantine count).
    ``first_causes``: per uid of a group generated again for rows to resample, the causes of its
    prompt's first attempt (quarantine judges those, as on every engine).
    """
    rows = list(rows)
    order: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        order.setdefault(r.uid, []).append(i)
    sizes = {len(ix) for ix in order.values()}
    views = [view_of(r) for r in rows]
    if len(sizes) == 1:
        g = sizes.pop()
        perm = [i for ix in order.values() for i in ix]
        fa.group_size = g
        ordered = [views[i] for i in perm]
        first = None
        if first_causes:
            first = fa.causes(ordered, step)
            for k, ix in enumerate(order.values()):
                earlier = first_causes.get(rows[ix[0]].uid)
                if earlier is not None and len(earlier) == g:
                    first[k * g : (k + 1) * g] = list(earlier)
        d: Decision = fa.decide(ordered, step, first_causes=first)
        inv = torch.empty(len(perm), dtype=torch.long)
        inv[torch.tensor(perm)] = torch.arange(len(perm))
        causes = [d.causes[int(j)] for j in inv]
        return RowsDecision(rows, views, causes, d.admit[inv], d.advantages[inv], d.quarantined, d.metrics)
    causes = fa.causes(views, step)
    admit = torch.tensor([bool(r.info.get("admit", 0.0)) for r in rows])
    metrics = {f"causes/{c.value}": sum(x is c for x in causes) / len(causes) for c in shown(causes)}
    metrics["failure/uneven_groups"] = 1.0
    return RowsDecision(rows, views, causes, admit, torch.zeros(len(rows)), [], metrics)
