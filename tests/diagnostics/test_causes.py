"""The cause table, rule by rule."""

import pytest

from rlvr.diagnostics.causes import Cause, cause_of
from rlvr.types import Status


@pytest.mark.parametrize(
    ("status", "finish", "kw", "cause"),
    [
        (Status.CORRECT, "eos", {}, Cause.CORRECT),
        (Status.WRONG, "eos", {}, Cause.WRONG),
        (Status.NO_ANSWER, "eos", {}, Cause.NO_ANSWER),
        (Status.NO_ANSWER, "length", {}, Cause.TRUNCATED),
        (Status.CORRECT, "length", {}, Cause.TRUNCATED),
        (Status.TIMEOUT, "eos", {}, Cause.INVALID),
        (Status.ERROR, "length", {}, Cause.INVALID),
        (Status.WRONG, "eos", {"text": "  "}, Cause.INVALID),
        (Status.BAD_GOLD, "eos", {}, Cause.BAD_GOLD),
        (Status.BAD_GOLD, "eos", {"text": ""}, Cause.INVALID),
        (Status.CORRECT, "eos", {"version": 3, "current_version": 5, "max_staleness": 1}, Cause.STALE),
        (Status.CORRECT, "eos", {"version": 4, "current_version": 5, "max_staleness": 1}, Cause.CORRECT),
        (Status.ERROR, "eos", {"version": 0, "current_version": 9, "max_staleness": 0}, Cause.STALE),
    ],
)
def test_cause_table(status, finish, kw, cause):
    assert cause_of(status, finish, **kw) is cause


def test_the_listed_causes_are_the_single_turn_ones_and_the_episode_causes_met() -> None:
    from rlvr.diagnostics.causes import SINGLE_TURN, shown

    assert shown() == list(SINGLE_TURN)
    assert shown(["tool_error", "correct"]) == [*SINGLE_TURN, Cause.TOOL_ERROR]
    # a value from a log of another version names no cause: passed over, not a crash of the report
    assert shown(["tool_error", "moon_phase"]) == [*SINGLE_TURN, Cause.TOOL_ERROR]
