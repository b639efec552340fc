"""The run folder every engine writes and ``rlvr causes`` / ``rlvr report`` read.

``metrics.jsonl`` (:class:`MetricsLog`), ``rollouts.jsonl`` (:class:`RolloutLog`), ``checkpoints/``
(:mod:`rlvr.runs.checkpoint`, which needs torch); ``quarantine.jsonl`` is the quarantine's own
(:mod:`rlvr.diagnostics.quarantine`).
"""

from rlvr.runs.metrics import MetricsLog, open_step_log, read_metrics
from rlvr.runs.rollouts import RolloutLog, read_rollouts

__all__ = ["MetricsLog", "RolloutLog", "open_step_log", "read_metrics", "read_rollouts"]
