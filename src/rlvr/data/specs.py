"""Data sources named by a spec string: ``<scheme>:<name>[?<option>=<value>&...]``.

``task:addition?size=64&seed=3`` and ``reasoning-gym:chain_sum?size=8`` both read this way; option
values are typed (``true``/``false``, integers, floats, else the text).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl


def typed(text: str) -> Any:
    """An option's value: a bool, an int, a float, or the text itself."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def split_spec(spec: str, scheme: str) -> tuple[str, dict[str, Any]]:
    """``("chain_sum", {"size": 8})`` from ``reasoning-gym:chain_sum?size=8`` (``scheme``: ``"reasoning-gym:"``)."""
    name, _, query = spec.removeprefix(scheme).partition("?")
    return name, {k: typed(v) for k, v in parse_qsl(query, keep_blank_values=True)}
