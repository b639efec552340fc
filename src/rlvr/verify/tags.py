"""The answer block of a completion, for verifiers whose answers are not maths.

The maths extractor (:mod:`rlvr.verify.math.extract`) takes only complete blocks; code,
constraints and the judge also read a block whose closing tag was cut off (a truncated
rollout still shows what it was answering).
"""

from __future__ import annotations

import re

_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|\Z)", re.S)


def last_answer_block(text: str) -> str | None:
    """The content of the last ``<answer>`` block (closed or not), or ``None`` when there is none."""
    blocks = _ANSWER.findall(text)
    return blocks[-1] if blocks else None
