"""The README's and the docs' quick-start commands run as written, in order, in a fresh folder.

Every ``rlvr ...`` line of a shell fence in the README, the docs' home page and the reading-a-run
guide (a command in a trailing ``# or: rlvr ...`` comment too) is run through the CLI. Two are long
by design (``rlvr demo`` warms a model up for minutes; a training run goes on for its configured
steps); they get budget options appended, listed in ``BUDGET``, and nothing else is changed: the
folders and files they write are the ones the next commands read.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlvr.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/index.md", "docs/guides/reading-a-run.md"]
#: The long commands' budgets: (the command's first words, options appended).
BUDGET = {
    "rlvr demo": ["--steps", "2", "--minutes", "0.1", "--warm-target", "0"],
    "rlvr train": ["--set", "run.steps=1", "--set", "run.eval_every=0", "--set", "run.out_dir=runs/readme-train"],
}
_FENCE = re.compile(r"```(\w*)\n(.*?)\n```", re.DOTALL)


def commands(page: str) -> list[str]:
    """The ``rlvr`` command lines of ``page``'s shell fences, comments stripped."""
    out = []
    for lang, body in _FENCE.findall((ROOT / page).read_text()):
        if lang not in ("", "bash", "sh", "console"):
            continue
        for line in body.splitlines():
            code, _, comment = line.partition(" #")
            for part in (code, comment.removeprefix(" or:")):
                part = part.strip()
                if part.startswith("rlvr ") or re.match(r"echo .* \| rlvr ", part):
                    out.append(part)
    return out


def _argv(line: str) -> tuple[list[str], str | None]:
    """``(argv after 'rlvr', stdin)`` for ``rlvr ...`` or ``echo TEXT | rlvr ...``."""
    stdin = None
    if " | rlvr " in line:
        left, line = line.split(" | ", 1)
        stdin = " ".join(shlex.split(left)[1:]) + "\n"
    words = shlex.split(line)[1:]
    for head, extra in BUDGET.items():
        if line.startswith(head + " ") or line == head:
            words += extra
    return words, stdin


# Exit codes the pages promise for each command (verify exits 1 on any verdict but correct).
EXPECTED_EXIT = {"--strict": 1}


def test_the_pages_have_the_commands_this_test_runs() -> None:
    readme = commands("README.md")
    assert "rlvr demo" in readme and "rlvr causes runs/demo" in readme and "rlvr report runs/demo" in readme
    assert any(c.startswith("rlvr train configs/") for c in readme)
    assert any(c.startswith("echo ") for c in commands("docs/index.md"))


@pytest.mark.slow
def test_every_quick_start_command_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    runner = CliRunner()
    ran = []
    # the demo first: the other commands read the folder it writes
    # (the reading-a-run guide also shows commands on folders of the reader's own: runs/plain ...)
    lines = [c for page in PAGES for c in commands(page) if page != PAGES[2] or "runs/demo" in c]
    lines.sort(key=lambda c: not c.startswith("rlvr demo"))
    for line in dict.fromkeys(lines):  # each distinct command once
        if line.startswith("rlvr score rollouts.jsonl") and not (tmp_path / "rollouts.jsonl").exists():
            # the rollouts it scores: the ones the demo's run logged
            shutil.copy(tmp_path / "runs" / "demo" / "grpo" / "rollouts.jsonl", tmp_path / "rollouts.jsonl")
        argv, stdin = _argv(line)
        r = runner.invoke(app, argv, input=stdin)
        want = next((code for flag, code in EXPECTED_EXIT.items() if flag in argv), 0)
        assert r.exit_code == want, f"{line!r} exited {r.exit_code}:\n{r.output[-3000:]}"
        assert "Traceback" not in r.output, line
        ran.append(line)
    assert (tmp_path / "runs" / "demo" / "report.html").exists()  # where the README says it goes
    assert (tmp_path / "runs" / "demo" / "failures.md").exists()  # where reading-a-run says --sample writes
    assert (tmp_path / "rollouts.scored.jsonl").exists()
    assert len(ran) >= 8
