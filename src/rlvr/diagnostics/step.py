"""The failure-aware step, engine-neutral: what to do with one step's rollouts.

rlvr's own loop, TRL's ``GRPOTrainer`` (:mod:`rlvr.integrations.trl`) and verl's Ray trainer each
call one :class:`FailureAware` once per step with what they know of every rollout (a
:class:`RolloutView`: prompt id, verdict, reward breakdown, finish reason, policy version) and
apply what it returns (a :class:`Decision`: causes, who is admitted to the group statistics and
the loss, the advantages, who was quarantined, the metrics). The pieces it wires are pure and
tested on their own (:mod:`.causes`, :mod:`.admission`, :mod:`.quarantine`, :mod:`.alarms`,
:mod:`rlvr.algo.advantages`); its state (the cold start, quarantine counters, alarm windows) is a
small dict for checkpoints. Which rows to redraw (:meth:`FailureAware.to_resample`) and which
groups carry a signal (:func:`informative`) are the engine's to act on, as is the draw-ahead
buffer of dynamic sampling (:class:`DrawAhead`, which only decides freshness and order).

Examples:
    >>> from rlvr.config import FailureConfig
    >>> from rlvr.types import Status, Verdict
    >>> fa = FailureAware(FailureConfig(quarantine=False), group_size=2)
    >>> views = [RolloutView("p", Verdict(Status.CORRECT), 1.0, text="<answer>4</answer>"),
    ...          RolloutView("p", Verdict(Status.WRONG), 0.0, text="<answer>5</answer>")]
    >>> d = fa.decide(views, step=1)
    >>> [c.value for c in d.causes], d.admit.tolist(), [round(a, 2) for a in d.advantages.tolist()]
    (['correct', 'wrong'], [True, True], [0.71, -0.71])
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from rlvr.algo.advantages import ESTIMATORS, AdvantageInputs, Scale, group_advantages, scale_of, zero_std_fraction
from rlvr.config import FailureConfig
from rlvr.diagnostics.admission import ColdStart, admission
from rlvr.diagnostics.alarms import (
    FormatWithoutAccuracy,
    answer_blocks,
    answer_only_in_reasoning,
    code_tamper,
    grader_talk,
    share,
)
from rlvr.diagnostics.causes import Cause, cause_of, shown
from rlvr.diagnostics.quarantine import Quarantine
from rlvr.diagnostics.redraws import ThinAdvice, step_scale, thin_groups
from rlvr.diagnostics.stats import reward_stats
from rlvr.rewards.base import prompt_text
from rlvr.types import Status, Verdict

#: What ``failure.verifier_failures: score`` keeps in with the reward it got: failed verifications
#: and unparsable golds (as TRL's default rewards score them).
_SCORED = frozenset({Status.TIMEOUT, Status.ERROR, Status.UNCERTAIN, Status.BAD_GOLD})


@dataclass(frozen=True)
class RolloutView:
    """What the failure-aware step needs of one rollout (whatever engine made it).

    Attributes:
        prompt_id: the prompt's stable id (quarantine counts per prompt).
        verdict: the verifier's verdict (None: no reward applied; the rollout is ``invalid``).
        total: the weighted reward (None: nothing applied, or a reward said "not applicable").
        components: every reward component (None where it did not apply).
        finish: ``eos``, or ``length`` (truncated).
        text: the completion (empty text is ``invalid``; alarms read it).
        version: the policy version that sampled it.
        weights: the reward weights in force (logged as ``weights/<name>``).
        unscored: no reward function could score this row (each returned ``None``): ``invalid``.
        episode: an episode's own cause (:meth:`rlvr.episodes.Episode.cause`: an environment fault,
            or the policy fault that ended it), None for a single-turn rollout.
        events: the causes of every event the episode recorded (tool metrics, policy penalties).
        values: each reward function's own value (None where it did not apply), for engines whose
            reward is several functions (TRL) and the ``normalize_then_sum`` objective.
        off_policy: the engine's off-policy correction rejected the row (cause ``off_policy``).
    """

    prompt_id: str
    verdict: Verdict | None
    total: float | None
    components: dict[str, float | None] = field(default_factory=dict)
    finish: str = "eos"
    text: str = ""
    version: int = 0
    weights: dict[str, float] = field(default_factory=dict)
    unscored: bool = False
    episode: Cause | None = None
    events: tuple[Cause, ...] = ()
    values: tuple[float | None, ...] = ()
    off_policy: bool = False


@dataclass
class Decision:
    """What an engine applies for one step (rows in the order they came, groups consecutive).

    Attributes:
        causes: one cause per rollout.
        admit: ``[N]`` bool: in the group statistics and the loss (its tokens leave the loss mask
            and the normalisers otherwise, not merely advantage 0).
        advantages: ``[N]`` group-normalised over admitted rows, clipped; 0 for the excluded.
        quarantined: prompt ids quarantined by this step.
        scale: what the engine multiplies the step's loss by (``failure.thin_step_scale``: the
            admitted share; else 1).
        metrics: ``causes/*``, ``verify/*``, ``failure/*``, ``reward/<name>/*``, ``weights/*``,
            ``groups/*``, ``advantages/*``, ``quarantine/size``, ``alarms/*``.
    """

    causes: list[Cause]
    admit: torch.Tensor
    advantages: torch.Tensor
    quarantined: list[str]
    metrics: dict[str, Any]
    scale: float = 1.0


def _unscorable(v: RolloutView) -> bool:
    """Nothing scored the row: every reward function declined it, or there is neither a verdict nor
    a total (TRL leaves such a row out of its group's statistics too)."""
    return v.unscored or (v.total is None and v.verdict is None)


def informative(views: Sequence[RolloutView], group_size: int, out: Iterable[Cause] = ()) -> list[bool]:
    """Per group: does binary accuracy (verdict correct or not) vary across its rollouts? A group no
    verifier judged (rewards only) carries a signal when its rewards vary. Episodes whose own cause is
    in ``out`` (the environment's faults: they leave the group) do not count."""
    gone = frozenset(out)
    out_: list[bool] = []
    for k in range(len(views) // group_size):
        rows = [
            v for v in views[k * group_size : (k + 1) * group_size] if not (v.episode is not None and v.episode in gone)
        ]
        if any(v.verdict is not None for v in rows):
            out_.append(len({v.verdict is not None and v.verdict.correct for v in rows}) > 1)
        else:
            scores = [v.total for v in rows if v.total is not None]
            out_.append(bool(scores) and max(scores) - min(scores) > 1e-6)
    return out_


class FailureAware:
    """Causes, admission with the cold start, advantages with clipping, quarantine, alarms, metrics.

    Args:
        failure: the ``failure`` section of the config.
        group_size: G, rollouts per prompt (rows of one group are consecutive).
        scale_rewards: ``group`` (or True): divide advantages by the group's std; ``batch``: by the
            batch's; ``none`` (or False): Dr. GRPO.
        objective: the advantage estimator, by its name in :data:`rlvr.algo.advantages.ESTIMATORS`:
            ``sum_then_normalize`` (GRPO: the group statistics of the weighted total),
            ``normalize_then_sum`` (GDPO, TRL's ``multi_objective_aggregation``: each reward
            function's values, ``RolloutView.values``, normalised in their group over the admitted
            rows, summed with ``weights``, then scaled by the batch's std), ``rloo`` (each total
            minus the mean of the group's others), or one registered with ``register_estimator``.
        weights: each reward function's weight, for ``normalize_then_sum``.
        advantage_clip: clamp advantages to ``[-clip, clip]`` (None: no clamp).
        think_tag: the format's reasoning tag (for the reward-hacking alarms).
        answer_tag: the format's answer tag (for the reward-hacking alarms).
        run_dir: where ``quarantine.jsonl`` is written (None: kept in memory; in a multi-process
            engine only the main process writes).
    """

    def __init__(
        self,
        failure: FailureConfig,
        *,
        group_size: int,
        scale_rewards: bool | Scale = True,
        advantage_clip: float | None = None,
        think_tag: str = "think",
        answer_tag: str = "answer",
        run_dir: str | Path | None = None,
        objective: str = "sum_then_normalize",
        weights: Sequence[float] = (),
    ) -> None:
        self.cfg, self.group_size = failure, group_size
        self.scale_rewards, self.advantage_clip = scale_of(scale_rewards), advantage_clip
        self.objective, self.weights = objective, tuple(weights)
        self.estimator = ESTIMATORS.get(objective)  # an unknown name: a ConfigError listing the known
        self.think_tag, self.answer_tag = think_tag, answer_tag
        self.run_dir = Path(run_dir) if run_dir is not None else None
        f = failure
        self.cold_start = ColdStart(f.cold_start_threshold, f.cold_start_window) if f.cold_start else None
        self.quarantine = (
            Quarantine(f.quarantine_consecutive, f.quarantine_total, frozenset(Cause(c) for c in f.quarantine_causes))
            if f.quarantine
            else None
        )
        self.format_alarm = FormatWithoutAccuracy()
        self.env_faults = frozenset(Cause(c) for c in f.env_faults)
        self.thin_advice = ThinAdvice(f)
        self.penalties = {Cause(k): v for k, v in f.policy_penalties.items()}

    # ------------------------------------------------------------------ what an engine asks
    def causes(self, views: Sequence[RolloutView], step: int) -> list[Cause]:
        """One cause per rollout of ``step`` (1-based: the policy that sampled a fresh rollout is
        version ``step - 1``, the number of updates made so far)."""
        ms, env = self.cfg.max_staleness, self.env_faults
        return [
            (v.episode if v.episode in env else Cause.INVALID)
            if _unscorable(v)
            else cause_of(
                v.verdict.status if v.verdict is not None else None,
                v.finish,
                text=v.text,
                version=v.version,
                current_version=step - 1,
                max_staleness=ms,
                episode=v.episode,
                env_faults=env,
                off_policy=v.off_policy,
            )
            for v in views
        ]

    def to_resample(self, causes: Sequence[Cause]) -> list[int]:
        """Rows to redraw for the same prompt: ``invalid`` and ``off_policy`` ones, the environment's
        faults (and ``truncated`` with ``exclude_truncated``); the engine keeps the originals as
        ``replaced`` in its log."""
        redo = (
            {Cause.OFF_POLICY}
            | ({Cause.INVALID} if self.cfg.verifier_failures == "exclude" else set())
            | self.left_out()
            | ({Cause.TRUNCATED} if self.cfg.exclude_truncated else set())
        )
        return [i for i, c in enumerate(causes) if c in redo]

    def left_out(self) -> frozenset[Cause]:
        """The episode causes that leave their group (none under the ablations that keep faults in)."""
        return self.env_faults if self.cfg.env_fault_handling == "exclude" else frozenset()

    def skip(self, prompt_id: str) -> bool:
        """True for a quarantined prompt (engines leave it out of their prompt stream)."""
        return self.quarantine is not None and prompt_id in self.quarantine

    def decide(
        self,
        views: Sequence[RolloutView],
        step: int,
        *,
        first_causes: Sequence[Cause] | None = None,
        drop_uninformative: bool = False,
        down: bool | None = None,
        causes: Sequence[Cause] | None = None,
    ) -> Decision:
        """The step's decision over all of its rollouts (gathered from every process first).

        ``first_causes``: the causes before any resampling (quarantine judges what the model
        produced, not what resampling replaced it with). ``drop_uninformative``: groups whose
        binary accuracy does not vary leave the loss (dynamic sampling's filter, for an engine
        that cannot draw replacement groups). ``down``: the engine found the environment down this
        step (:class:`rlvr.diagnostics.redraws.Redraws`): nothing is admitted, the step waits (None: the
        engine has no environment; ``env/down`` is logged otherwise). ``causes``: the rows' causes as
        the engine decided them for this step (:meth:`causes`), not decided again.
        """
        g = self.group_size
        if len(views) % g:
            raise ValueError(f"{len(views)} rollouts do not split into groups of {g}")
        causes = list(causes) if causes is not None else self.causes(views, step)
        if len(causes) != len(views):
            raise ValueError(f"{len(causes)} causes for {len(views)} rollouts")
        totals = torch.tensor(
            [
                v.total - sum(self.penalties.get(e, 0.0) for e in v.events) if v.total is not None else float("nan")
                for v in views
            ],
            dtype=torch.float32,
        )
        format_deaths = sum(c is Cause.NO_ANSWER for c in causes) / max(len(causes), 1)
        cold = self.cold_start.update(format_deaths, step) if self.cold_start is not None else False
        f = self.cfg
        mask_only = f.env_fault_handling == "mask_loss"
        faulted = torch.tensor([c in self.env_faults for c in causes], dtype=torch.bool)
        if f.env_fault_handling == "score_zero":  # the ablation: a failed episode is a reward of 0, trained on
            totals = torch.where(faulted, torch.zeros_like(totals), totals)
        admit = admission(
            causes,
            totals,
            g,
            exclude_truncated=f.exclude_truncated,
            cold_start=cold,
            drop_flat_groups=f.drop_flat_groups,
            also_out=self.left_out(),
        )
        if f.verifier_failures == "score":  # plain GRPO: a failed verification is scored like any verdict
            undecided = torch.tensor(
                [v.verdict is not None and v.verdict.status in _SCORED and not v.unscored for v in views],
                dtype=torch.bool,
            )
            admit = admit | (undecided & ~torch.isnan(totals))
        flat = 0
        if drop_uninformative:  # last: a group left out stays out, whatever its rows' verdicts
            signal = torch.tensor(informative(views, g, self.left_out())).repeat_interleave(g)
            flat = int((admit & ~signal).sum())
            admit = admit & signal
        thin = torch.zeros(len(views) // g, dtype=torch.bool)
        if f.min_group_rows > 1:  # a group of too few admitted rows: one coin flip, out of the step
            thin = thin_groups(admit, g, f.min_group_rows)
            admit = admit & ~thin.repeat_interleave(g)
        if down:  # the environment is down: the step waits (nothing admitted, no optimizer step)
            admit = torch.zeros_like(admit)
        if mask_only and bool(faulted.any()):  # in the baseline at 0, out of the loss (the ablation)
            stats = torch.where(faulted, torch.zeros_like(totals), torch.nan_to_num(totals))
            adv = group_advantages(stats, g, admit | faulted, scale=self.scale_rewards)
            admit = admit & ~faulted
            adv = adv.masked_fill(faulted, 0.0)
        else:  # the configured estimator, on the admitted rows
            adv = self.estimator(self._estimator_inputs(views, totals, admit))
        clip = self.advantage_clip
        clipped = float(((adv.abs() > clip) & admit).sum() / admit.sum().clamp(min=1)) if clip else 0.0
        if clip:
            adv = adv.clamp(-clip, clip)
        newly = self._observe(views, list(first_causes or causes), causes, step)
        m = self._metrics(views, causes, totals, admit, cold, step)
        m["advantages/clipped_frac"] = clipped
        if drop_uninformative:
            m["failure/flat_dropped"] = flat / max(len(views), 1)
        m["failure/thin_groups"] = float(thin.float().mean()) if len(thin) else 0.0
        m["failure/admitted_share"] = step_scale(admit, len(views))
        if down is None or not down:  # an outage's steps are waited out, not advised on
            advice = self.thin_advice.observe(step, m["failure/excluded_frac"])
            if advice is not None:
                warnings.warn(advice, stacklevel=2)
                m["failure/thin_advice"] = 1.0
        if down is not None:
            m["env/down"] = float(down)
        scale = step_scale(admit, len(views)) if f.thin_step_scale else 1.0
        return Decision(causes, admit, adv, newly, m, scale)

    # ------------------------------------------------------------------ pieces
    def _estimator_inputs(
        self, views: Sequence[RolloutView], totals: torch.Tensor, admit: torch.Tensor
    ) -> AdvantageInputs:
        """What the estimator reads: the totals, and each reward function's value where the engine
        scores with several (TRL's, for ``normalize_then_sum``)."""
        values = None
        if self.weights and all(len(v.values) == len(self.weights) for v in views):
            values = torch.tensor(
                [[float("nan") if x is None else x for x in v.values] for v in views], dtype=torch.float32
            )
        weights = torch.tensor(self.weights) if values is not None else None
        return AdvantageInputs(totals, self.group_size, admit, self.scale_rewards, values, weights)

    def _observe(self, views: Sequence[RolloutView], first: list[Cause], causes: list[Cause], step: int) -> list[str]:
        if self.quarantine is None:
            return []
        g, newly = self.group_size, []
        for k in range(len(views) // g):
            rows = range(k * g, (k + 1) * g)
            fails = [
                {
                    "completion": views[i].text[:500],
                    "cause": causes[i].value,
                    "reason": getattr(views[i].verdict, "reason", ""),
                }
                for i in rows
            ]
            if self.quarantine.observe(views[k * g].prompt_id, [first[i] for i in rows], step, fails):
                newly.append(views[k * g].prompt_id)
        if newly and self.run_dir is not None:
            self.quarantine.write(self.run_dir)
        return newly

    def _metrics(
        self,
        views: Sequence[RolloutView],
        causes: list[Cause],
        totals: torch.Tensor,
        admit: torch.Tensor,
        cold: bool,
        step: int,
    ) -> dict[str, Any]:
        n, g = len(views), self.group_size
        m: dict[str, Any] = {}
        names = sorted({k for v in views for k in v.components})
        for name in names:
            m.update(reward_stats(name, [c for v in views if (c := v.components.get(name)) is not None]))
        ok = totals[admit]
        m["reward/total/mean"] = float(ok.mean()) if len(ok) else None
        if views and views[0].weights:
            m.update({f"weights/{k}": w for k, w in views[0].weights.items()})
        statuses = Counter(v.verdict.status.value for v in views if v.verdict is not None)
        m.update({f"verify/{s.value}": statuses.get(s.value, 0) / n for s in Status})
        m.update({f"causes/{c.value}": sum(x is c for x in causes) / n for c in shown(causes)})
        m["groups/zero_std_frac"] = zero_std_fraction(torch.nan_to_num(totals), g, admit)
        m["groups/flat_accuracy_frac"] = 1.0 - sum(informative(views, g, self.left_out())) / max(n // g, 1)
        m["failure/cold_start"] = float(cold)
        if self.cold_start is not None and self.cold_start.switched_at == step:
            m["failure/cold_start_ended"] = 1.0  # the switch, marked on the step it happened
        m["failure/excluded_frac"] = float((~admit).float().mean())
        if any(v.episode is not None or v.events for v in views):  # episodes: how often the environment failed
            faulted = [c in self.env_faults for c in causes]
            m["env/fault_rate"] = sum(faulted) / n
            m["episodes/partial_groups"] = sum(0 < sum(faulted[k : k + g]) < g for k in range(0, n, g)) / max(n // g, 1)
        if self.quarantine is not None:
            m["quarantine/size"] = float(len(self.quarantine.entries))
        texts = [v.text for v in views]
        m["alarms/multiple_answers"] = share(texts, lambda t: answer_blocks(t, self.answer_tag) > 1)
        m["alarms/answer_in_reasoning"] = share(
            texts, lambda t: answer_only_in_reasoning(t, self.think_tag, self.answer_tag)
        )
        m["alarms/code_tamper"] = code_tamper([v.verdict for v in views])
        m["alarms/grader_talk"] = grader_talk([v.verdict for v in views])
        m["alarms/format_without_accuracy"] = float(
            self.format_alarm.update(m.get("reward/format/mean"), m.get("reward/accuracy/mean"))
        )
        return m

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The checkpointable state (the quarantined set itself lives in ``quarantine.jsonl``)."""
        fa = self.format_alarm
        return {
            "cold_start": self.cold_start.state() if self.cold_start is not None else None,
            "quarantine": self.quarantine.state() if self.quarantine is not None else None,
            "format_alarm": {"fmt": list(fa.fmt), "acc": list(fa.acc)},
        }

    def load_state_dict(self, state: dict[str, Any], run_dir: str | Path | None, step: int) -> None:
        """Back to a checkpoint taken at ``step`` (quarantine entries read from ``run_dir`` up to it)."""
        if self.cold_start is not None and state.get("cold_start"):
            self.cold_start.load(state["cold_start"])
        if self.quarantine is not None:
            self.quarantine.load(state.get("quarantine") or {}, Path(run_dir or "."), step)
        alarm = state.get("format_alarm") or {}
        self.format_alarm.fmt.extend(alarm.get("fmt", []))
        self.format_alarm.acc.extend(alarm.get("acc", []))


def rollout_record(
    view: RolloutView,
    cause: Cause,
    sample: Any = None,
    *,
    prompt: Any = None,
    gold: Any = None,
    task: str | None = None,
    advantage: float = 0.0,
    admitted: bool = False,
    episode: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """One line of ``rollouts.jsonl``, the same for every engine (``rlvr causes`` and ``rlvr report``
    read it): prompt id, task, prompt, gold, completion, finish, policy version, cause, verdict,
    components, total, advantage, admitted, and what the engine adds (``rank``, ``replaced``...).
    ``sample``: a row with ``prompt``/``gold``/``task`` attributes, instead of passing them;
    ``episode``: the rollout's :class:`rlvr.episodes.Episode`, or its record as another process sent it
    (its turns and events go in the line)."""

    if sample is not None:
        prompt, gold, task = sample.prompt, sample.gold, sample.task
    v = view.verdict
    return {
        "prompt_id": view.prompt_id,
        "task": task,
        "prompt": prompt_text(prompt),
        "gold": gold,
        "completion": view.text,
        "finish": view.finish,
        "policy_version": view.version,
        "cause": cause.value,
        "verdict": v.to_dict() if v is not None else None,
        "components": view.components,
        "total": view.total,
        "advantage": advantage,
        "admitted": admitted,
        **extra,
        **({"episode": episode.record() if hasattr(episode, "record") else episode} if episode is not None else {}),
    }


@dataclass
class DrawAhead:
    """The draw-ahead buffer of dynamic sampling: informative groups drawn beyond a step's need,
    kept for the next steps while their policy version is at most ``max_staleness`` old.

    The items are the engine's own (a group's rollouts in whatever form it keeps them); this
    class only decides which are still fresh and which of a step's groups to train on now.
    """

    max_staleness: int
    items: list[tuple[int, Any]] = field(default_factory=list)  # (policy version, item)

    def take_fresh(self, step: int) -> tuple[list[Any], int]:
        """Empty the buffer: ``(the items still fresh at step, how many were too old and dropped)``."""
        fresh = [it for v, it in self.items if v >= step - self.max_staleness]
        dropped = len(self.items) - len(fresh)
        self.items = []
        return fresh, dropped

    def put(self, version: int, item: Any) -> None:
        self.items.append((version, item))

    @staticmethod
    def pick(informative_groups: Sequence[bool], need: int) -> tuple[list[int], list[int]]:
        """``(groups to train on now, informative groups to keep for later)``: informative first,
        in order, then flat ones to fill the step if too few informative ones came."""
        good = [k for k, ok in enumerate(informative_groups) if ok]
        flat = [k for k, ok in enumerate(informative_groups) if not ok]
        order = good + flat
        keep = order[:need]
        return keep, [k for k in good if k not in keep][:need]

    def __iter__(self) -> Iterable[tuple[int, Any]]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
