"""The rlvr error tree.

``VerifierTimeout`` subclasses ``BaseException`` (as math-verify's does) so that a
broad ``except Exception`` inside SymPy or a parser cannot swallow it.
"""

from __future__ import annotations


class RlvrError(Exception):
    """Base of rlvr's own errors."""


class ConfigError(RlvrError, ValueError):
    """A configuration value is invalid; the message names the fix."""


class DataError(RlvrError, ValueError):
    """Malformed input data; the message names the file and line."""


class RunError(RlvrError):
    """A run could not go on (a checkpoint its disk refused); the message says what is intact and
    how to continue."""


class VerifierTimeout(BaseException):
    """A verification ran past its time limit."""


class Refused(RlvrError):
    """An input was refused up front because evaluating it could hang or blow memory."""
