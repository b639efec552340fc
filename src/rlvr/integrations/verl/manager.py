"""verl's reward manager ``rlvr`` (``reward.reward_manager.name: rlvr``): rlvr's rewards per trajectory.

verl's reward loop calls :meth:`RlvrRewardManager.run_single` once per trajectory inside its reward
workers (Ray actors; the plugin is loaded there by ``import verl``). It decodes the response, scores
it with rlvr's weighted rewards (the ``rlvr.rewards`` section; its verdicts cached per row) and
returns verl's ``{"reward_score", "reward_extra_info"}`` with the same keys on every row
(:mod:`.rows`): the cause of death and the row's admission travel with the trajectory, so rlvr's
replay buffer (:mod:`.replay`) and estimator (:mod:`.advantage`) can act on them, and verl's own
metrics and ``algorithm.filter_groups`` (on ``acc``) keep working.
"""

from __future__ import annotations

from typing import Any

from verl import DataProto
from verl.experimental.reward_loop.reward_manager import register
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from rlvr.errors import ConfigError
from rlvr.integrations.verl.rows import EPISODE_KEY, finish_of, score_row
from rlvr.integrations.verl.settings import check_row, settings_of
from rlvr.rewards import Total


@register("rlvr")
class RlvrRewardManager(RewardManagerBase):
    """rlvr's rewards, verdicts and causes for verl (see the module docstring).

    Args:
        config: verl's whole config (its ``rlvr`` section: rewards, failure options).
        tokenizer: the policy's tokenizer.
        compute_score: ignored (rlvr's rewards score the rows; a ``custom_reward_function`` is
            refused, since it would be silently unused).
    """

    def __init__(
        self,
        config: Any,
        tokenizer: Any,
        compute_score: Any = None,
        reward_router_address: Any = None,
        reward_model_tokenizer: Any = None,
    ) -> None:
        super().__init__(config, tokenizer, compute_score)
        custom = config.get("reward", {}).get("custom_reward_function", {}) if hasattr(config, "get") else {}
        if custom and custom.get("path"):
            raise ConfigError(
                "reward.reward_manager.name=rlvr scores with rlvr's rewards (the rlvr.rewards section); "
                f"reward.custom_reward_function.path={custom.get('path')!r} would go unused: drop it"
            )
        self.settings = settings_of(config)
        r = self.settings.rewards
        self.total = Total.from_config(r)
        eos = getattr(tokenizer, "eos_token_id", None)
        self.eos_ids = {eos} if isinstance(eos, int) else set(eos or [])

    async def run_single(self, data: DataProto) -> dict[str, Any]:
        """Score the last sequence of one trajectory (verl's per-trajectory call)."""
        item = data[-1:][0]
        responses = item.batch["responses"]
        valid = int(item.batch["attention_mask"][-responses.shape[-1] :].sum())
        ids = responses[:valid]
        nt = item.non_tensor_batch
        gold = check_row(nt, f"trajectory of data_source {nt.get('data_source')!r}")
        info = dict(nt.get("extra_info") or {})
        step = info.get("global_step", nt.get("global_steps"))
        text = await self.loop.run_in_executor(None, lambda: self.tokenizer.decode(ids, skip_special_tokens=True))
        finish = finish_of(responses, valid, self.eos_ids)
        s = self.settings
        tool_fields = nt.get("tool_extra_fields")
        episode = tool_fields.get(EPISODE_KEY) if isinstance(tool_fields, dict) else None  # rlvr_tool_agent's
        row = await self.loop.run_in_executor(
            None,
            lambda: score_row(
                self.total,
                text,
                gold,
                finish=finish,
                data_source=nt.get("data_source"),
                extra_info=info,
                step=step,
                exclude_truncated=s.failure.exclude_truncated,
                completion_chars=s.completion_chars,
                episode=episode,
            ),
        )
        return {"reward_score": row.score, "reward_extra_info": row.extra}
