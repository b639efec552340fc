"""The two-level verifier: rules first, an LLM judge only for what rules cannot decide."""

from rlvr.verify.judge.backends import (
    HTTPJudge,
    JudgeBackend,
    JudgeUnavailable,
    TransformersJudge,
)
from rlvr.verify.judge.judged import (
    JudgedVerifier,
    JudgeStats,
    default_undecidable,
    uncovered,
)
from rlvr.verify.judge.reply import (
    JudgeReply,
    ReplyError,
    check_reply,
    judge_messages,
    parse_reply,
)

__all__ = [
    "HTTPJudge",
    "JudgeBackend",
    "JudgeReply",
    "JudgeStats",
    "JudgeUnavailable",
    "JudgedVerifier",
    "ReplyError",
    "TransformersJudge",
    "check_reply",
    "default_undecidable",
    "judge_messages",
    "parse_reply",
    "uncovered",
]
