"""``total``: a weighted sum of named rewards that never replaces its components.

``Total`` is itself a reward (so TRL or verl can take it as one function) but its
:meth:`Total.breakdown` returns a :class:`rlvr.types.RewardBreakdown` per row with
every component, the weights in force and the verdict. The verifier runs once per
row for all components (their ``verdicts`` column is filled first), in worker
processes when ``jobs > 0``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlvr.errors import ConfigError
from rlvr.rewards.base import (
    Reward,
    Scored,
    build_reward,
    column,
    completion_text,
    gold_column,
    register,
)
from rlvr.rewards.schedule import Schedule
from rlvr.rewards.verdicts import row_verdicts
from rlvr.types import RewardBreakdown, Status, Verdict
from rlvr.verify.batch import run_batch
from rlvr.verify.math.conventions import Conventions, set_default
from rlvr.verify.math.verifier import DEFAULT_TIMEOUT, warm_up
from rlvr.verify.outage import Outage

#: Seed 001's total: ``alpha * r_format + beta * r_answer``.
DEFAULT_WEIGHTS = {"format": 0.1, "accuracy": 1.0}


#: Keywords that are never per-row data.
_NOT_COLUMNS = ("trainer_state", "log_extra", "log_metric", "environments", "verdicts")


def _score_row(item: tuple[str, dict[str, Any]], total: Total, verdict: Verdict | None = None) -> tuple[Any, ...]:
    """One row's verdict and components (runs in a worker; ``verdict`` given skips verification)."""
    text, row = item
    cols: dict[str, Any] = {k: [v] for k, v in row.items()}
    if verdict is not None:
        cols["verdicts"] = [verdict]
    verdicts, comps = total._components([text], cols)
    return (verdicts[0] if verdicts else None), comps[0]


def _current_step(columns: Mapping[str, Any], step: int | None) -> int:
    if step is not None:
        return step
    state = columns.get("trainer_state")  # TRL passes its TrainerState
    return int(getattr(state, "global_step", 0) or 0)


@register("total")
class Total(Reward):
    """``sum_k w_k(step) * r_k`` over named rewards; ``None`` components are left out.

    Args:
        weights: reward name -> weight (a number or a ``[[step, weight], ...]`` schedule).
        options: reward name -> that reward's options (``{"cosine": {"max_len": 500}}``).
        rewards: ready-built rewards to use instead of building by name.
        jobs: worker processes for verification in :meth:`breakdown` (0: in process).
        timeout: seconds per verification.
        outage: injected verifier failures (:class:`rlvr.verify.outage.Outage`), for tests and
            benchmarks: the rows it hits get a ``timeout`` / ``error`` verdict instead of their own
            (and rows of the golds it breaks ``bad_gold``).
    """

    name = "total"
    needs_verdict = True

    def __init__(
        self,
        weights: Mapping[str, Any] | None = None,
        *,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        rewards: Mapping[str, Reward] | None = None,
        jobs: int = 0,
        timeout: float = DEFAULT_TIMEOUT,
        outage: Any = None,
    ) -> None:
        super().__init__()
        self.outage = outage
        weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        if not weights:
            raise ConfigError("total needs at least one weighted reward")
        options = dict(options or {})
        unknown = set(options) - set(weights)
        if unknown:
            raise ConfigError(f"options given for rewards without a weight: {sorted(unknown)}")
        self.schedules = {name: Schedule.parse(w, f"weight of {name!r}") for name, w in weights.items()}
        built = dict(rewards or {})
        self.rewards: dict[str, Reward] = {
            name: built.get(name) or build_reward(name, **dict(options.get(name, {}))) for name in weights
        }
        self.jobs, self.timeout = jobs, timeout
        # one verdict serves every component, so the components that verify must agree on how
        judges = [r for r in self.rewards.values() if r.needs_verdict]
        settings = {
            (getattr(r, "strict", False), getattr(r, "gold_field", None), getattr(r, "task", None), r.gold_columns)
            for r in judges
        }
        if len(settings) > 1:
            raise ConfigError(
                "rewards that verify must share strict, gold_field and task (one verdict serves them "
                "all): "
                + ", ".join(
                    f"{r.name}: strict={getattr(r, 'strict', False)}, task={getattr(r, 'task', None)}" for r in judges
                )
            )
        self._verify_with: tuple[bool, str | None, str | None, tuple[str, ...]] | None = (
            settings.pop() if settings else None
        )
        # a component's own verification time limit wins when longer (running code takes longer than maths)
        self.timeout = max([timeout, *(t for r in judges if isinstance(t := getattr(r, "timeout", None), int | float))])

    @classmethod
    def from_config(cls, rewards: Any, **kwargs: Any) -> Total:
        """The total a config's ``rewards`` section names (weights, options, an injected outage)."""

        outage = (
            Outage(rewards.outage, rewards.outage_seed, rewards.bad_gold)
            if rewards.outage or rewards.bad_gold
            else None
        )
        # the maths verifier's conventions, for every verdict of this process (and its forked workers)
        chosen = getattr(rewards, "conventions", None)  # a ConventionsConfig: validated with the config
        set_default(Conventions(**chosen.model_dump()) if chosen is not None else None)
        return cls(dict(rewards.weights), options=rewards.active_options(), outage=outage, **kwargs)

    def weights_at(self, step: int = 0) -> dict[str, float]:
        """The weight of every component at ``step`` (log these each step)."""
        return {name: s.at(step) for name, s in self.schedules.items()}

    def _verdicts(self, texts: list[str], columns: Mapping[str, Any]) -> list[Verdict] | None:
        if self._verify_with is None:
            return None

        strict, gold_field, task, prefer = self._verify_with
        verdicts = row_verdicts(
            texts, columns, gold_field=gold_field, strict=strict, timeout=self.timeout, task=task, prefer=prefer
        )
        if self.outage is not None and column(columns, "verdicts", len(texts)) is None:
            verdicts = self.outage.apply(verdicts, texts, gold_column(columns, len(texts), gold_field, prefer))
        return verdicts

    def _components(
        self, texts: list[str], columns: Mapping[str, Any]
    ) -> tuple[list[Verdict] | None, list[dict[str, Any]]]:
        """Verdicts and every component's value, in this process."""
        cols = dict(columns)
        verdicts = self._verdicts(texts, cols)
        if verdicts is not None:
            cols["verdicts"] = verdicts
        cols["_quiet"] = True
        per_reward = {name: r.score(texts, **cols) for name, r in self.rewards.items()}
        self.last_components = per_reward
        comps = [{name: per_reward[name][i].value for name in self.rewards} for i in range(len(texts))]
        return verdicts, comps

    def _components_parallel(
        self, texts: list[str], columns: Mapping[str, Any]
    ) -> tuple[list[Verdict], list[dict[str, Any]]]:
        """Whole rows (verdict and components) scored in worker processes with hard time limits."""

        n = len(texts)
        per_row = {
            k: column(columns, k, n)
            for k, v in columns.items()
            if not k.startswith("_") and k not in _NOT_COLUMNS and not callable(v)
        }
        items = [(t, {k: v[i] for k, v in per_row.items() if v is not None}) for i, t in enumerate(texts)]
        warm_up()
        out = run_batch(
            _score_row,
            items,
            jobs=self.jobs,
            timeout=self.timeout,
            options={"total": self},
            on_timeout=lambda item: None,
            on_crash=lambda item, why: why,
            on_done=columns.get("_on_verified"),
        )
        verdicts, comps = [], []
        for item, got in zip(items, out):
            if not isinstance(got, tuple):  # killed or crashed: score the row against that verdict
                status = Status.TIMEOUT if got is None else Status.ERROR
                why = f"worker killed after {self.timeout:g}s" if got is None else f"worker crashed: {got}"
                got = _score_row(item, self, Verdict(status, reason=why))
            verdicts.append(got[0])
            comps.append(got[1])
        return verdicts, comps

    def breakdown(
        self, completions: Sequence[Any], *, step: int | None = None, **columns: Any
    ) -> list[RewardBreakdown]:
        """Every component, the weights in force and the verdict, per row."""

        texts = [completion_text(c) for c in completions]
        return self._breakdowns(texts, columns, step)

    def _breakdowns(self, texts: list[str], columns: Mapping[str, Any], step: int | None) -> list[RewardBreakdown]:
        weights = self.weights_at(_current_step(columns, step))
        verdicts: list[Verdict] | None
        if self.jobs > 0 and len(texts) > 1 and column(columns, "verdicts", len(texts)) is None:
            verdicts, comps = self._components_parallel(texts, columns)
        else:
            verdicts, comps = self._components(texts, columns)
        out = []
        for i, c in enumerate(comps):
            present = [(weights[k], v) for k, v in c.items() if v is not None]
            total = sum(w * v for w, v in present) if present else None
            out.append(RewardBreakdown(total, c, weights, verdicts[i] if verdicts is not None else None))
        return out

    def _score(self, texts: list[str], columns: Mapping[str, Any]) -> list[Scored]:
        rows = self._breakdowns(texts, columns, None)
        return [Scored(b.total, b.verdict, {"components": b.components, "weights": b.weights}) for b in rows]

    def __call__(self, completions: Sequence[Any], **columns: Any) -> list[float | None]:
        values = super().__call__(completions, **columns)
        log_metric = columns.get("log_metric")
        if log_metric is not None and self.last:
            for name, w in self.last[0].info["weights"].items():  # the weight in force, logged each step
                log_metric(f"weights/{name}", w)
        return values
