"""One registry idiom for everything rlvr selects by name: rewards, verifiers, loss aggregations,
synthetic tasks, tools.

A :class:`Registry` maps names (and aliases) to entries. Entries are added with a decorator or a
call, looked up with :meth:`Registry.get` (an unknown name is a :class:`rlvr.errors.ConfigError`
that lists what is registered), and a config field that names one is checked with
:meth:`Registry.check`, so whatever is registered is selectable and nothing else is.

Examples:
    >>> shapes = Registry[int]("shape")
    >>> @shapes.register("square", "quad")
    ... def square() -> int:
    ...     return 4
    >>> shapes.add("triangle", lambda: 3)
    >>> shapes.get("quad")(), shapes.names()
    (4, ['quad', 'square', 'triangle'])
    >>> shapes.get("circle")
    Traceback (most recent call last):
    ...
    rlvr.errors.ConfigError: unknown shape 'circle'; registered: square, triangle
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from rlvr.errors import ConfigError

T = TypeVar("T")
E = TypeVar("E")


class Registry(Generic[T]):
    """Named entries of one kind.

    Args:
        kind: what an entry is, for messages (``reward``, ``verifier``, ``loss aggregation``).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, *aliases: str) -> Callable[[E], E]:
        """Decorator: register the decorated function or class as ``name`` (and ``aliases``)."""

        def deco(obj: E) -> E:
            self.add(name, obj, *aliases)  # type: ignore[arg-type]
            return obj

        return deco

    def add(self, name: str, entry: T, *aliases: str) -> None:
        """Register ``entry`` as ``name`` (a name registered again is replaced: the newest wins)."""
        self._entries[name] = entry
        self._aliases.pop(name, None)
        for a in aliases:
            self.alias(a, name)

    def remove(self, name: str) -> None:
        """Unregister ``name`` and its aliases (a plug-in unloaded, a test cleaning up)."""
        key = self.canonical(name)
        self._entries.pop(key, None)
        self._aliases = {a: n for a, n in self._aliases.items() if n != key and a != name}

    def alias(self, alias: str, name: str) -> None:
        """``alias`` names the entry ``name``."""
        self._aliases[alias] = name

    def canonical(self, name: str) -> str:
        """The registered name ``name`` stands for (itself unless it is an alias)."""
        return self._aliases.get(name, name)

    def get(self, name: str) -> T:
        """The entry ``name`` (or an alias of it) names.

        Raises:
            ConfigError: nothing is registered under ``name``; the message lists what is.
        """
        key = self.canonical(name)
        if key not in self._entries:
            raise ConfigError(self.unknown(name))
        return self._entries[key]

    def unknown(self, name: str) -> str:
        """The message for a name nothing is registered under."""
        return f"unknown {self.kind} {name!r}; registered: {', '.join(sorted(self._entries))}"

    def check(self, name: str) -> str:
        """``name`` if it is registered, for a config validator (raises ``ValueError``, which the
        config loader turns into an error naming the field)."""
        if name not in self:
            raise ValueError(self.unknown(name))
        return name

    def names(self) -> list[str]:
        """Every name and alias, sorted."""
        return sorted({*self._entries, *self._aliases})

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` for every registered name (aliases left out)."""
        return list(self._entries.items())

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.canonical(name) in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.names())})"
