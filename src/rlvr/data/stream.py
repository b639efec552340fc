"""Training rows for every engine: the config's file or synthetic task, in a reproducible, resumable order.

rlvr's own loop and TRL's adapter (and the benchmarks) read their rows through :class:`DataStream`
and :func:`default_data`, so a prompt's place in the stream is the same whichever engine runs it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from rlvr.config import TrainConfig
from rlvr.data import verifiers_env
from rlvr.data.datasets import load_samples
from rlvr.data.tasks import TASKS, Sample, addition_eval
from rlvr.data.verifiers_env import SCHEME as VERIFIERS_SCHEME
from rlvr.errors import ConfigError, DataError


class DataStream:
    """Training rows in a reproducible order, resumable from a position."""

    def __init__(self, cfg: TrainConfig, rows: list[Sample] | None) -> None:
        self.cfg, self.rows, self.position = cfg, rows, 0
        self._it: Iterator[Sample] | None = None

    def _iter(self) -> Iterator[Sample]:
        seed = self.cfg.run.seed + 10_000
        if self.rows is None:
            assert self.cfg.data.task is not None
            opts = dict(self.cfg.data.task_options)
            if self.cfg.data.task == "addition":
                opts.setdefault("held_out", self.cfg.data.eval_size)
            yield from TASKS[self.cfg.data.task](seed, **opts)
            return
        epoch = 0
        while True:
            order = list(range(len(self.rows)))
            random.Random(seed + epoch).shuffle(order)
            yield from (self.rows[i] for i in order)
            epoch += 1

    def skip_to(self, position: int) -> None:
        self._it = self._iter()
        for _ in range(position):
            next(self._it)
        self.position = position

    def take(self, n: int, skip: Callable[[Sample], bool] | None = None) -> list[Sample]:
        """The next ``n`` rows, passing over those ``skip`` refuses (the position counts them too).

        Raises:
            DataError: every row of the data is refused (all quarantined).
        """
        if self._it is None:
            self.skip_to(0)
        assert self._it is not None
        out: list[Sample] = []
        passed = 0
        while len(out) < n:
            s = next(self._it)
            self.position += 1
            if skip is not None and skip(s):
                passed += 1
                if self.rows is not None and passed > 2 * len(self.rows):
                    raise DataError("every training row is quarantined; readmit some with rlvr quarantine")
                continue
            out.append(s)
        return out


def default_data(cfg: TrainConfig) -> tuple[list[Sample] | None, list[Sample]]:
    """``(training rows or None for a synthetic stream, held-out rows)`` for a config."""
    d = cfg.data
    env_spec = cfg.env.environment if cfg.env is not None else None
    spec = env_spec if env_spec is not None and env_spec.startswith(VERIFIERS_SCHEME) else d.path
    if spec is not None and spec.startswith(VERIFIERS_SCHEME):  # a verifiers environment's own rows
        if d.path is not None and d.path != spec:
            raise ConfigError(
                f"data.path {d.path!r} with env.environment {spec!r}: a verifiers environment's episodes "
                "read its own rows; leave data.path out (or set it to the same spec)"
            )
        return verifiers_env.train_and_held(spec, d.eval_size)
    if d.path is not None:
        rows = load_samples(d.path, d.split, system_prompt=d.system_prompt)
        if d.eval_path:
            held = load_samples(d.eval_path, d.eval_split, system_prompt=d.system_prompt)[: d.eval_size]
        else:  # hold out the first rows of the training file
            held, rows = rows[: d.eval_size], rows[d.eval_size :]
        if not rows:
            raise DataError(f"{d.path}: no training rows left after holding out {d.eval_size} for evaluation")
        return rows, held
    if d.task == "addition":
        return None, addition_eval(d.eval_size, **d.task_options)
    assert d.task is not None
    return None, [s for _, s in zip(range(d.eval_size), TASKS[d.task](1234, **d.task_options))]
