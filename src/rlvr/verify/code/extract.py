"""Find the program in a completion: the last fenced block of the language, or the ``<answer>``."""

from __future__ import annotations

import re

from rlvr.verify.code.languages import Language
from rlvr.verify.tags import last_answer_block

_FENCE = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)


def extract_code(text: str, lang: Language, *, bare: bool = False) -> tuple[str, str]:
    """``(code, rule)``: the code to run and which rule found it (``""`` when none).

    Order: inside ``<answer>`` if present (a fenced block there, else its whole text);
    else the last fenced block tagged with the language, else the last untagged
    block; with ``bare`` the whole completion as a last resort (base-model
    continuations). A block tagged with another language never counts.
    """
    scope, where = text, "completion"
    if (block := last_answer_block(text)) is not None:
        scope, where = block, "answer"
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(scope)]
    tagged = [b for t, b in blocks if t in lang.fences or t == lang.name]
    if tagged:
        return tagged[-1], f"fence:{where}"
    untagged = [b for t, b in blocks if not t]
    if untagged:
        return untagged[-1], f"fence:{where}"
    if where == "answer" and not blocks and scope.strip():
        return scope.strip("\n"), "answer"
    if bare and not blocks and text.strip():
        return text, "bare"
    return "", ""
