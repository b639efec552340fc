"""``rlvr report``: a run's story in pictures (reward components, the two deaths, failures to read)."""

from rlvr.report.data import RunData, load_run
from rlvr.report.page import build_report

__all__ = ["RunData", "build_report", "load_run"]
