"""Which folder is a run: what ``rlvr causes``, ``rlvr report`` and ``rlvr quarantine`` are given.

A run folder holds ``metrics.jsonl``, ``rollouts.jsonl`` or ``quarantine.jsonl`` (what engines write). A folder
made by a command that runs several stages (``rlvr demo``: ``warm/`` then ``grpo/``; ``rlvr
pipeline``: one folder a stage) is not a run but holds them: given one, the reader takes the run
inside it when there is exactly one, and otherwise names the runs to choose from.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["locate_run", "runs_inside"]

_MARKS = ("metrics.jsonl", "rollouts.jsonl", "quarantine.jsonl")


def _is_run(folder: Path) -> bool:
    return any((folder / m).is_file() for m in _MARKS)


def runs_inside(folder: str | Path) -> list[Path]:
    """The run folders directly inside ``folder``, by name."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and _is_run(p))


def locate_run(path: str | Path) -> Path:
    """``path`` when it is a run folder, else the one run inside it.

    Raises:
        FileNotFoundError: ``path`` is missing, holds no run, or holds several (the message names
            them, so the user can pick one).

    Examples:
        >>> import tempfile
        >>> top = Path(tempfile.mkdtemp())
        >>> (top / "warm").mkdir(); (top / "grpo").mkdir(); _ = (top / "grpo" / "metrics.jsonl").write_text("")
        >>> locate_run(top) == top / "grpo"
        True
    """
    path = Path(path)
    if _is_run(path):
        return path
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such folder")
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: a file, not a run folder")
    inside = runs_inside(path)
    if len(inside) == 1:
        return inside[0]
    if inside:
        names = ", ".join(str(p) for p in inside)
        raise FileNotFoundError(f"{path} holds {len(inside)} runs, name one: {names}")
    raise FileNotFoundError(f"{path}: not a run folder (no {' or '.join(_MARKS)}, and no run inside it)")
