"""Languages the code verifier can run: a table of commands, extendable by configuration.

A language is the fence names that mark its code blocks, the file the solution is
written to, an optional build command and the command that runs it. Commands run
*inside* the sandbox, so they name interpreters under ``/usr`` (the one host directory
the namespace sandbox shows, read-only) or :func:`~rlvr.verify.code.sandbox.expose`
theirs. Python is checked for syntax in process (``compile``); other languages are built
in the sandbox, and a build that fails makes the completion invalid, as a Python syntax
error does.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass

from rlvr.errors import ConfigError
from rlvr.verify.code import sandbox


@dataclass(frozen=True)
class Language:
    """How to build and run one language.

    Attributes:
        name: the name tasks use (``python``, ``c``, ``javascript``...).
        fences: code-fence info strings that mark this language (``py``, ``python3``...).
        source: the file name the solution is written to.
        run: argv that runs the program (``{source}`` is replaced).
        build: shell command that builds it first (``None``: interpreted); its failure
            makes the completion invalid.
        harness: the Python test harness applies (assert and call tests in process).
    """

    name: str
    fences: tuple[str, ...]
    source: str
    run: tuple[str, ...]
    build: str | None = None
    harness: bool = False


def _python() -> str:
    # The namespace sandbox holds /usr and nothing else of the host: prefer the system
    # interpreter; fall back to ours, whose installation is then bound in read-only.
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(cand, os.X_OK):
            return cand
    sandbox.expose(sys.base_prefix)
    return sys.executable


_LANGUAGES: dict[str, Language] = {}


def register_language(lang: Language) -> None:
    """Add or replace a language (its name and every fence name resolve to it)."""
    _LANGUAGES[lang.name] = lang


def get_language(name: str) -> Language:
    """The language called ``name`` or fenced as ``name``."""
    key = name.lower()
    if key in _LANGUAGES:
        return _LANGUAGES[key]
    for lang in _LANGUAGES.values():
        if key in lang.fences:
            return lang
    raise ConfigError(f"no code language {name!r}; known: {', '.join(sorted(_LANGUAGES))}")


register_language(
    Language("python", ("python", "py", "python3"), "solution.py", (_python(), "-I", "{source}"), harness=True)
)
register_language(
    Language("c", ("c",), "main.c", ("./prog",), build=f"{shutil.which('gcc') or 'gcc'} -O1 -o prog main.c -lm")
)
register_language(
    Language(
        "cpp",
        ("cpp", "c++", "cc"),
        "main.cpp",
        ("./prog",),
        build=f"{shutil.which('g++') or 'g++'} -O1 -o prog main.cpp",
    )
)
register_language(
    Language("javascript", ("javascript", "js", "node"), "main.js", (shutil.which("node") or "node", "{source}"))
)
