"""The failure step: why each rollout lived or died, and what to do about it (engine-neutral).

The causes and the quarantine import without torch (``rlvr causes`` reads runs with them); the step
itself (:class:`FailureAware` and its pieces, which hold tensors) is loaded when first asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlvr.diagnostics.causes import ENV_FAULTS, ROLLOUT, SINGLE_TURN, Cause, cause_of, shown
from rlvr.diagnostics.quarantine import Quarantine

if TYPE_CHECKING:
    from rlvr.diagnostics.admission import ColdStart, admission
    from rlvr.diagnostics.redraws import Redraws
    from rlvr.diagnostics.step import Decision, DrawAhead, FailureAware, RolloutView, informative, rollout_record

_LAZY = {
    "ColdStart": "admission",
    "admission": "admission",
    "Decision": "step",
    "DrawAhead": "step",
    "FailureAware": "step",
    "RolloutView": "step",
    "informative": "step",
    "rollout_record": "step",
    "Redraws": "redraws",
}


def __getattr__(name: str) -> Any:  # the step's names, imported (with torch) on first use
    if name in _LAZY:
        return getattr(importlib.import_module(f"rlvr.diagnostics.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'rlvr.diagnostics' has no attribute {name!r}")


__all__ = [
    "ENV_FAULTS",
    "ROLLOUT",
    "SINGLE_TURN",
    "Cause",
    "ColdStart",
    "Decision",
    "DrawAhead",
    "FailureAware",
    "Quarantine",
    "Redraws",
    "RolloutView",
    "admission",
    "cause_of",
    "informative",
    "rollout_record",
    "shown",
]
