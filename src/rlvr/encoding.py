r"""Text that can leave a process: every string rlvr writes (a run folder, a verdict, a tokenizer's
input) must encode as UTF-8. A JSON escape can carry a lone surrogate (``"\ud800"``), which Python
holds in a ``str`` but no encoder writes; text from untrusted code or an environment crosses into
rlvr through :func:`encodable` once, at the boundary where it is read.
"""

from __future__ import annotations


def unencodable(text: str) -> str | None:
    r"""Why ``text`` cannot be encoded as UTF-8 (a lone surrogate, which JSON escapes can carry), or None.

    Examples:
        >>> unencodable("print(1)") is None, unencodable("x = '\ud800'")
        (True, "a lone surrogate '\\ud800' at character 5")
    """
    try:
        text.encode("utf-8")
        return None
    except UnicodeEncodeError as e:
        return f"a lone surrogate {text[e.start]!r} at character {e.start}"


def encodable(text: str) -> str:
    r"""``text`` with each lone surrogate replaced by U+FFFD (a high and low surrogate in order are
    the character they encode), so it encodes as UTF-8; ``text`` itself when it already does.

    Examples:
        >>> encodable("ok"), encodable("a\ud800b"), encodable("\ud83d\ude00")
        ('ok', 'a\ufffdb', '😀')
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
