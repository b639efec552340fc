"""rlvr inside verl (0.9.x, its v1 trainer): causes, exclusion, quarantine and the run folder.

rlvr's package entry point in verl's ``verl.plugins`` group makes every ``import verl`` (the driver
and each Ray worker) import this module, which registers:

=========================================  =========================================================
verl key                                   what it turns on
=========================================  =========================================================
``reward.reward_manager.name: rlvr``       :mod:`.manager`: rlvr's rewards per trajectory; verdict,
                                           cause, admission and components in ``reward_extra_info``
``algorithm.adv_estimator: rlvr_grpo``     :mod:`.advantage`: GRPO over the admitted rows only
``trainer.v1.trainer_mode: rlvr``          :mod:`.trainer`: verl's sync trainer + rlvr's replay
                                           buffer (:mod:`.replay`): exclusion from the loss,
                                           quarantine, cold start, ``causes/*`` / ``failure/*``
                                           metrics, rlvr's run folder; the config checked at start
``rlvr: {...}`` (``+rlvr.<key>=`` on the   :mod:`.settings`: rewards and weights, the failure
command line)                              policy, ``advantage_clip``, ``run_dir``, ``env``
``rollout.agent.default_agent_loop:        :mod:`.agent`: verl's ``ToolAgentLoop`` recording each
rlvr_tool_agent``                          episode's causes where they happen (rlvr's tools for a
                                           tool YAML: :mod:`.tools`; a ``verifiers`` environment's
                                           tools, one environment per episode judging it:
                                           :mod:`.environments`)
=========================================  =========================================================

``compute_score`` (:mod:`.score`) stays for verl's own reward managers
(``reward.custom_reward_function.path: pkg://rlvr.integrations.verl.score``).
Without verl installed this module imports fine and registers nothing.
"""

from __future__ import annotations

import importlib.util
import logging

from rlvr.integrations.verl.score import compute_score

__all__ = ["compute_score", "register"]

logger = logging.getLogger(__name__)


def register() -> bool:
    """Register the reward manager, the estimator and the trainer with verl (idempotent).

    Returns False when verl is not installed. The trainer needs verl's v1 stack (TransferQueue,
    Ray); where that does not import, the manager and the estimator are still registered.
    """
    if importlib.util.find_spec("verl") is None:
        return False
    from rlvr.integrations.verl import manager  # noqa: F401  (registers the "rlvr" reward manager)
    from rlvr.integrations.verl.advantage import register as register_estimator

    register_estimator()
    try:
        from rlvr.integrations.verl import trainer  # noqa: F401  (registers the "rlvr" v1 trainer)
    except ImportError as e:  # verl's own plugin loader would hide it: say why here
        logger.warning("rlvr: verl's v1 trainer could not be imported (%s); trainer_mode rlvr is unavailable", e)
    try:
        from rlvr.integrations.verl import agent  # noqa: F401  (registers the "rlvr_tool_agent" agent loop)
    except ImportError as e:
        logger.warning("rlvr: verl's agent loop could not be imported (%s); rlvr_tool_agent is unavailable", e)
    return True


register()
