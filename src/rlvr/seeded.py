"""Seeded draws that depend only on what they are drawn for: the fault injections' dice.

An injected fault (a verifier outage, a bad gold, a cut rollout) must meet the same row the same way
every time it is seen, in any process, in any order, and a redrawn row must draw again: so the draw
is a hash of the seed and the row's own content, never a shared random stream. ``blake2b`` is
stable across runs and machines (Python's ``hash`` is salted per process).

Examples:
    >>> u, = uniforms(0, "gold", "text")
    >>> 0.0 <= u < 1.0 and uniforms(0, "gold", "text") == (u,)
    True
    >>> len(uniforms(1, [5, 6], [7], n=2))
    2
"""

from __future__ import annotations

import hashlib
from typing import Any


def uniforms(*parts: Any, n: int = 1) -> tuple[float, ...]:
    """``n`` independent uniforms in [0, 1), a function of ``parts`` (joined by their ``str``) alone."""
    key = "\0".join(map(str, parts)).encode()
    h = hashlib.blake2b(key, digest_size=8 * n).digest()
    return tuple(int.from_bytes(h[8 * i : 8 * i + 8], "big") / 2**64 for i in range(n))
