"""``rlvr report`` on a short real run, opened in headless Chromium: no console errors, every image loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
from typer.testing import CliRunner

from rlvr.cli.app import app
from rlvr.config import load_config
from rlvr.engine.trainer import GRPOTrainer
from rlvr.report import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TINY = [
    "model.hidden=32",
    "model.layers=1",
    "model.heads=2",
    "rollout.prompts_per_step=2",
    "rollout.group_size=4",
    "rollout.max_new_tokens=16",
    "run.eval_every=2",
    "data.eval_size=4",
    "run.steps=3",
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = []
    for seed in (0, 1):
        d = tmp_path_factory.mktemp(f"run{seed}")
        GRPOTrainer(load_config(None, [*TINY, f"run.seed={seed}", f"run.out_dir={d}"])).train()
        out.append(d)
    return out


def open_in_chromium(page_path: Path, screenshot: Path) -> tuple[list[str], list[bool]]:
    """Console errors and, per image, whether it loaded."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_path.resolve().as_uri())
            page.wait_for_load_state("load")
            loaded = page.evaluate("Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)")
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return errors, loaded


def test_the_report_files(runs: list[Path]) -> None:
    page = build_report([runs[0]])
    assert page == runs[0] / "report.html"
    html = page.read_text()
    for stem in ("rewards", "deaths", "accuracy", "lengths", "optimisation"):
        assert (runs[0] / f"report-{stem}.png").stat().st_size > 1000
        assert f'data-file="report-{stem}.png"' in html
    assert "http://" not in html and "https://" not in html  # opens offline: nothing fetched
    assert "Failed rollouts to read" in html
    assert "<mark>" in html or "no failed rollouts" in html


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_report_renders_in_headless_chromium(runs: list[Path], tmp_path: Path) -> None:
    page = build_report(runs, tmp_path / "both.html")  # two runs overlaid
    errors, loaded = open_in_chromium(page, tmp_path / "shot.png")
    assert errors == []
    assert len(loaded) == 5 and all(loaded)
    assert (tmp_path / "shot.png").stat().st_size > 10_000


def test_a_killed_run_still_reports_and_says_so(runs: list[Path], tmp_path: Path) -> None:
    d = tmp_path / "killed"
    shutil.copytree(runs[0], d)
    with (d / "metrics.jsonl").open("a") as f:
        f.write('{"step": 4, "reward/tot')
    html = build_report([d]).read_text()
    assert "cut off" in html


def test_cli(runs: list[Path], tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["report", str(runs[0]), str(runs[1]), "--out", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "r.html").exists() and (tmp_path / "r-deaths.png").exists()
    r = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert r.exit_code == 2 and "not a run folder" in r.output
