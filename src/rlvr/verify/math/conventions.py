r"""Where reading an answer is a convention, the choice a careful grader of maths competitions makes,
and an option to make the other.

* ``ratio_as_fraction`` (default True): a ratio and a number of the same value are one answer
  (``3:2`` for a gold of ``\frac{3}{2}``, and back): competitions ask for "the ratio, as a common
  fraction" and take either. Off: a ratio equals only a ratio.
* ``integration_constant`` (default ``"optional"``): an antiderivative is right with or without
  its constant (``x^2 + C``, ``x^2 + K``, ``x^2``), and any name stands for it. ``"required"``: the
  answer must carry one when the gold does, and may not when it does not.
* ``base_digits`` (default True): against a gold written in a base (``52_8``), an answer of bare
  digits is read in that base (``52``: the digits asked for). Off: bare digits are a decimal
  number (``52`` is not ``52_8``). An answer's own subscript is never ignored either way
  (``101_2`` is 5).
* ``remainder_as_residue`` (default True): a number in ``[0, m)`` equals the residue class
  ``x \equiv a \pmod{m}`` it represents (the remainder asked for); off, a class equals a class.
* ``degrees_as_radians`` (default False): an angle written in degrees (``45^\circ``, ``45°``, "45
  degrees") against a gold in radians (``\frac{\pi}{4}``), or the other way round, is wrong: a
  problem that wants an angle says in which unit ("in radians"), and a grader marks the other
  unit wrong. On: the two are one angle. A degree sign against a bare number stays the number
  (``45^\circ`` for ``45``) either way.

:func:`conventions` is the set in force (a context variable, so threads and verifier workers
never see another call's); :func:`rlvr.verify.math.verify_math` sets it for one verdict, and a verdict
that names none takes the process's default: :class:`Conventions()` unless :func:`set_default` chose
others (a config's ``rewards.conventions``, set when its rewards are built, and inherited by the
verifier's forked workers).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Conventions:
    """The reading conventions of one verdict (see the module docstring)."""

    ratio_as_fraction: bool = True
    integration_constant: Literal["optional", "required"] = "optional"
    base_digits: bool = True
    remainder_as_residue: bool = True
    degrees_as_radians: bool = False


DEFAULT = Conventions()
_process_default = DEFAULT
_IN_FORCE: ContextVar[Conventions | None] = ContextVar("rlvr_math_conventions", default=None)


def conventions() -> Conventions:
    """The conventions of the verdict being made."""
    return _IN_FORCE.get() or _process_default


def set_default(chosen: Conventions | None) -> None:
    """The conventions of every verdict in this process that names none (``None``: :data:`DEFAULT`)."""
    global _process_default
    _process_default = chosen or DEFAULT


@contextmanager
def using(chosen: Conventions | None) -> Iterator[Conventions]:
    """Make ``chosen`` (``None``: the process's default) the conventions in force inside the block."""
    chosen = chosen or _process_default
    token = _IN_FORCE.set(chosen)
    try:
        yield chosen
    finally:
        _IN_FORCE.reset(token)
