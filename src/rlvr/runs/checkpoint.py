"""Atomic checkpoints: everything needed to continue a run exactly where it stopped.

A checkpoint is a folder ``checkpoints/step-<N>`` written under a temporary name and
renamed into place (a rename is atomic), then ``checkpoints/latest`` is replaced
atomically to name it. A run killed mid-save leaves the previous checkpoint intact.
"""

from __future__ import annotations

import errno
import os
import pickle
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from rlvr.errors import ConfigError, RunError

#: What a disk says when it takes no more: full, over quota, read-only, a file-size limit.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM})


def disk_refused(e: BaseException) -> bool:
    """Whether ``e`` is a write the disk refused (torch.save says so as a RuntimeError)."""
    if isinstance(e, OSError):
        return e.errno in DISK_ERRNOS
    text = str(e)
    return isinstance(e, RuntimeError) and any(s in text for s in ("write failed", "unexpected pos", "StreamWriter"))


def _why(e: BaseException, where: Path) -> str:
    """What the disk said: the OSError's own words, or, for torch's writer (which reports a refused
    write as "unexpected pos ..."), what the file system under ``where`` shows."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    try:
        fs = os.statvfs(where if where.exists() else where.parent)
    except OSError:
        fs = None
    if fs is not None and fs.f_flag & os.ST_RDONLY:
        return os.strerror(errno.EROFS)
    if fs is not None and fs.f_bavail * fs.f_frsize < 16 << 20:
        return f"{os.strerror(errno.ENOSPC)}: {fs.f_bavail * fs.f_frsize >> 10} KiB free"
    return " ".join(str(e).split())[:200]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """``path`` holds ``text`` or what it held before, never a part of it (written aside, renamed)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def replace_folder(path: Path, write: Callable[[Path], None]) -> Path:
    """Have ``write`` fill a folder aside, then put it at ``path`` by renames: a ``write`` that fails
    (a full or read-only disk) leaves ``path`` as it was.

    Raises:
        RunError: the disk refused the folder.
    """
    tmp, old = path.with_name(f".{path.name}.tmp"), path.with_name(f".{path.name}.old")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        write(tmp)
        if path.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RunError(
            f"{path} could not be written ({_why(e, path.parent)}); what was there is left as it was"
        ) from None
    shutil.rmtree(old, ignore_errors=True)
    return path


def save(run_dir: Path, step: int, state: dict[str, Any], keep: int = 2) -> Path:
    """Write ``state`` (tensors and plain values) as checkpoint ``step``; keep the last ``keep``.

    Written aside and renamed into place: a save that fails (a full or read-only disk) or is killed
    leaves the checkpoints before it as they were.

    Raises:
        RunError: the disk refused the checkpoint; the message names the one that is intact.
    """
    root = run_dir / "checkpoints"
    final = root / f"step-{step}"
    tmp = root / f".step-{step}.tmp"
    try:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        payload = dict(state)
        payload["rng"] = {"torch": torch.get_rng_state(), "python": random.getstate()}
        torch.save(payload, tmp / "state.pt")
        with open(tmp / "state.pt", "rb") as f:
            os.fsync(f.fileno())
        if final.exists():  # the same step saved again: the old copy moves aside, never missing
            old = root / f".step-{step}.old"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(final, old)
        os.replace(tmp, final)
        _fsync_dir(root)
        write_atomic(root / "latest", final.name)
    except (OSError, RuntimeError) as e:  # torch.save reports a failed write as a RuntimeError
        shutil.rmtree(tmp, ignore_errors=True)
        before = latest(run_dir)
        kept = (
            f"{before} is intact: `rlvr train --resume {run_dir}` continues from it"
            if before is not None
            else "no earlier checkpoint"
        )
        raise RunError(f"checkpoint step {step} could not be written to {root} ({_why(e, root)}); {kept}") from None
    for stale in [*root.glob(".step-*.old"), *sorted(_complete(root), key=_step)[:-keep]]:
        shutil.rmtree(stale, ignore_errors=True)
    return final


def _step(path: Path) -> int:
    return int(path.name.split("-")[1])


def _complete(root: Path) -> list[Path]:
    return [p for p in root.glob("step-*") if p.name.split("-")[1].isdigit() and (p / "state.pt").is_file()]


def latest(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run, or None: the one ``checkpoints/latest`` names, or,
    when that is missing (a kill between two renames), the complete ``step-N`` with the largest N."""
    root = run_dir / "checkpoints"
    pointer = root / "latest"
    try:
        named = root / pointer.read_text().strip()
    except (OSError, UnicodeDecodeError):
        named = None
    if named is not None and (named / "state.pt").is_file():
        return named
    found = _complete(root) if root.is_dir() else []
    return max(found, key=_step) if found else None


def load(path: Path, map_location: Any = None) -> dict[str, Any]:
    """A checkpoint's state (its tensors on ``map_location``, default where they were saved);
    restores the global RNGs as they were when it was saved."""
    try:
        state = torch.load(path / "state.pt", weights_only=False, map_location=map_location)
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as e:
        why = f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"
        raise ConfigError(f"{path}: not a checkpoint rlvr can read ({why})") from None
    if not isinstance(state, dict) or not isinstance(state.get("rng"), dict) or "model" not in state:
        raise ConfigError(f"{path}: not an rlvr checkpoint of this version (no model and RNG state)")
    torch.set_rng_state(state["rng"]["torch"].cpu())
    random.setstate(state["rng"]["python"])
    return state
