"""A full or read-only disk during a checkpoint: the previous checkpoint stays loadable, and the run
stops with one clear line (exit 1), no traceback. Real disks: a tmpfs that fills, a read-only bind
mount, each in a user and mount namespace of the test's own (``unshare -Urm``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _namespaces() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-Urm", "true"], capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not _namespaces(), reason="needs unprivileged user and mount namespaces (unshare -Urm)"),
]


def _run(kind: str, work: Path) -> dict:
    out = subprocess.run(
        ["unshare", "-Urm", sys.executable, str(HERE / "disk_refuses.py"), kind, str(work)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("kind", "why", "kept"),
    [("full", "No space left on device", "step-1"), ("readonly", "Read-only file system", "step-1")],
)
def test_a_refused_checkpoint_stops_the_run_and_keeps_the_one_before(
    tmp_path: Path, kind: str, why: str, kept: str
) -> None:
    r = _run(kind, tmp_path)
    assert r["rc"] == 1, r["stderr"][-2000:]
    errors = [ln for ln in r["stderr"].splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in r["stderr"], r["stderr"][-2000:]
    assert "checkpoint step 2 could not be written" in errors[0] and why in errors[0], errors[0]
    assert f"{kept} is intact" in errors[0] and "--resume" in errors[0]
    assert r["kept"] == kept and r["loadable"] and r["config_whole"]
    assert r["leftovers"] == []  # the half-written step went with the error
