"""Find the program in a completion: the last fenced block of the language, or the ``<answer>``."""

from __future__ import annotations

import re

from rlvr.verify.code.languages import Language
from rlvr.verify.tags import last_answer_block

_TAG = re.compile(r"[ \t]*([\w+#.-]*)")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(tag, body)`` of each fenced block: three backticks, an info line (its tag: the first word),
    the body up to the next three backticks or the end. One pass with ``str.find`` (linear in the
    text): the regex it replaces backtracked over every unfinished info line, quadratic on a
    completion of backticks and long lines, in the verifier's own process."""
    out, i = [], 0
    while (start := text.find("```", i)) >= 0:
        line_end = text.find("\n", start + 3)
        if line_end < 0:  # an opener whose info line never ends opens no block
            break
        m = _TAG.match(text, start + 3, line_end)
        end = text.find("```", line_end + 1)
        out.append((m.group(1) if m else "", text[line_end + 1 : end if end >= 0 else len(text)]))
        if end < 0:
            break
        i = end + 3
    return out


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
    blocks = [(tag.lower(), body) for tag, body in fenced_blocks(scope)]
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
