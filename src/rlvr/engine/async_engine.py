"""rlvr's asynchronous engine: a sampler process draws while the learner updates (``rollout.mode: async``).

Two processes, one torch thread each, joined by a bounded queue of scored steps:

* the **sampler** (a :class:`GRPOTrainer` of its own, same config) draws each step's rollouts with
  the newest weights it has, scores them, runs the failure step's redraws (:meth:`GRPOTrainer.draw`)
  and puts the result on the queue; every rollout carries the policy version that sampled it;
* the **learner** (this process) takes them in order, applies the off-policy correction (behaviour
  log-probs from the sampler; with ``off_policy.proximal: recompute`` the proximal ones recomputed),
  decides, updates (:meth:`GRPOTrainer.learn`), and publishes the trained weights (only the adapters'
  tensors with LoRA) through shared memory; the sampler picks them up at its next step boundary.

**Staleness is bounded, corrected and counted.** The sampler draws the rollouts of learner step ``t``
only once weights of version ``t - 1 - rollout.max_lag`` or newer are published (it is paced: it
never runs further ahead, so it never draws what would be thrown away); a row older than
``failure.max_staleness`` versions is ``stale`` (out of its group and the loss, counted), one within
it is corrected as ``off_policy`` says. ``async/lag`` is the versions
between a row's sampler and the learner that trains on it.

**What a run guarantees.** Checkpoints are the learner's: the data position they record is the one
after the last step *trained*; a resumed run (after SIGKILL of the parent, the learner or the sampler)
starts a fresh sampler there, so prompts that were in flight are drawn again and none is used twice.
It is not bit-identical to an uninterrupted asynchronous run (which version samples which step
depends on timing). A sampler that dies is an error in the learner within a second, one that sends
nothing for ``rollout.sampler_timeout_s`` too; the sampler dies with its parent (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import ctypes
import queue as queue_lib
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any

import torch
import torch.multiprocessing as mp

from rlvr.config import TrainConfig, dump_config
from rlvr.data.tasks import Sample
from rlvr.engine.trainer import Drawn, GRPOTrainer

_STOP = "stop"


@dataclass
class SharedWeights:
    """The trained tensors in shared memory, and the version they hold (the learner's step)."""

    tensors: dict[str, torch.Tensor]
    version: Any  # mp.Value("i")
    lock: Any  # mp.Lock

    @classmethod
    def of(cls, model: Any, ctx: Any) -> SharedWeights:
        tensors = {n: p.detach().clone().share_memory_() for n, p in model.named_parameters() if p.requires_grad}
        return cls(tensors, ctx.Value("i", 0), ctx.Lock())

    def publish(self, model: Any, version: int) -> None:
        """Copy the model's trained tensors in (the learner, after each optimizer step)."""
        with self.lock, torch.no_grad():
            for n, p in model.named_parameters():
                if n in self.tensors:
                    self.tensors[n].copy_(p.detach())
            self.version.value = version

    def load_into(self, model: Any) -> int:
        """Copy them into ``model`` (the sampler, at a step boundary); returns their version."""
        with self.lock, torch.no_grad():
            for n, p in model.named_parameters():
                if n in self.tensors:
                    p.copy_(self.tensors[n])
            return int(self.version.value)


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux); a no-op elsewhere."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class _Sampler(GRPOTrainer):
    """The sampler's trainer: it draws with the weights of ``version`` and never updates."""

    version = 0

    def _sampling_policy(self) -> tuple[Any, int]:
        return self.model, self.version


def _stopped(control: Any, s: GRPOTrainer) -> bool:
    """Read the learner's messages: True at a stop; a prompt id the learner quarantined is skipped by
    the sampler from now on."""
    while True:
        try:
            msg = control.get_nowait()
        except queue_lib.Empty:
            return False
        if msg == _STOP:
            return True
        if s.fa.quarantine is not None:
            s.fa.quarantine.entries.setdefault(msg, {"prompt_id": msg})


def sampler_main(
    config: str,
    model: Any,
    tokenizer: Any,
    rows: list[Sample] | None,
    shared: SharedWeights,
    out: Any,
    control: Any,
    position: int,
    first_step: int,
) -> None:
    """The sampler process: draw, score, redraw, hand over, as long as the learner wants steps."""
    _die_with_parent()
    import yaml

    from rlvr.runtime import setup_torch

    cfg = TrainConfig.model_validate(yaml.safe_load(config))
    setup_torch(1, cfg.run.seed)
    try:
        s = _Sampler(cfg, model=model, tokenizer=tokenizer, train_rows=rows, eval_rows=[])
        s.data.skip_to(position)
        s.step = first_step  # seeds the draws as the synchronous engine's step would
        idle = 0.0
        while True:
            if _stopped(control, s):
                return
            # the step this draw trains is learner step s.step + 1, at version s.step: wait for weights
            # at most max_lag versions older (the pacing that bounds staleness; the wait is idle time)
            t_wait = time.perf_counter()
            while int(shared.version.value) < s.step - cfg.rollout.max_lag:
                time.sleep(0.005)
                if _stopped(control, s):
                    return
            idle += time.perf_counter() - t_wait
            s.version = shared.load_into(s.model)
            t0 = time.perf_counter()
            drawn = s.draw()
            took = time.perf_counter() - t0
            item = ("step", drawn, s.data.position, s.version, took, idle)
            idle = 0.0
            t1 = time.perf_counter()
            while True:  # paced by the bounded queue; a stop while it is full still ends the loop
                try:
                    out.put(item, timeout=0.5)
                    break
                except queue_lib.Full:
                    if _stopped(control, s):
                        return
            idle += time.perf_counter() - t1  # counted with the next step's item
            s.step += 1
    except Exception:
        out.put(("error", traceback.format_exc()))


class AsyncGRPOTrainer(GRPOTrainer):
    """:class:`GRPOTrainer` with sampling in a process of its own (see the module docstring).

    The same arguments, config, run folder, metrics, causes and checkpoints as the synchronous
    engine; ``rollout.mode: async`` in the config selects it (``rlvr train`` and :func:`train_engine`).
    """

    def __init__(self, cfg: TrainConfig, **kw: Any) -> None:
        super().__init__(cfg, **kw)
        self._given = (kw.get("model"), kw.get("tokenizer"), kw.get("train_rows"))
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._out: Any = None
        self._control: Any = None
        self._shared: SharedWeights | None = None

    # ------------------------------------------------------------------ the sampler
    def _start(self) -> None:
        model, tok, rows = self._given
        self._shared = SharedWeights.of(self.model, self._ctx)
        self._shared.publish(self.model, self.step)
        self._out = self._ctx.Queue(maxsize=self.cfg.rollout.max_lag)
        self._control = self._ctx.Queue()
        # spawn, not fork: a forked copy of a process that has run torch (and its thread pools) is
        # not safe; a script that trains asynchronously needs the ``if __name__ == "__main__"`` guard
        self._proc = self._ctx.Process(
            target=sampler_main,
            args=(
                dump_config(self.cfg),
                model if model is not None else None,
                tok if tok is not None else None,
                rows,
                self._shared,
                self._out,
                self._control,
                self.data.position,
                self.step,
            ),
            name="rlvr-sampler",
            daemon=True,
        )
        self._proc.start()

    def stop(self) -> None:
        """End the sampler (it is told to stop, then killed if it does not within 10 s)."""
        p, self._proc = self._proc, None
        if p is None or p.pid is None:  # never started (a spawn that failed)
            return
        with contextlib.suppress(Exception):
            self._control.put(_STOP)
        deadline = time.monotonic() + 10
        while p.is_alive() and time.monotonic() < deadline:
            with contextlib.suppress(Exception):  # unblock a put on a full queue
                self._out.get(timeout=0.2)
        if p.is_alive():
            p.kill()
        p.join(5)

    def _next(self) -> tuple[Drawn, int, int, float, float]:
        """The next drawn step from the sampler (errors if it died, failed, or went silent)."""
        limit = self.cfg.rollout.sampler_timeout_s
        t0 = time.monotonic()
        while True:
            try:
                msg = self._out.get(timeout=1.0)
                break
            except (queue_lib.Empty, EOFError, OSError):  # a sampler killed mid-send leaves a torn message
                if not self._proc.is_alive():
                    code = self._proc.exitcode
                    self._proc = None
                    raise RuntimeError(
                        f"the sampler process died (exit code {code}); resume the run from its last checkpoint"
                    ) from None
                if time.monotonic() - t0 > limit:
                    self.stop()
                    raise RuntimeError(
                        f"the sampler sent nothing for {limit:g}s (rollout.sampler_timeout_s): stopped"
                    ) from None
        if msg[0] == "error":
            self._proc.join(5)
            self._proc = None
            raise RuntimeError(f"the sampler failed:\n{msg[1]}")
        _, drawn, position, version, took, idle = msg
        return drawn, position, version, took, idle

    # ------------------------------------------------------------------ the learner
    def train_step(self) -> dict[str, Any]:
        """One learner step: the next drawn step from the queue, corrected, decided, trained on; the
        weights published for the sampler."""
        if self._proc is None:
            self._start()
        t0 = time.perf_counter()
        drawn, position, version, took, idle = self._next()
        t_gen = time.perf_counter()
        m = self.learn(drawn, t0, t_gen, redraw_off_policy=False)
        self.data.position = position  # checkpoints record where the trained steps end
        assert self._shared is not None
        self._shared.publish(self.model, self.step)
        for pid in self.quarantined_now:
            self._control.put(pid)
        lags = [self.step - 1 - v for v in drawn.batch.versions]
        m["time/generate_s"] = took  # the sampler's, overlapped with the learner's previous step
        m["async/learner_idle"] = (t_gen - t0) / max(m["time/step_s"], 1e-9)
        m["async/sampler_idle"] = idle / max(idle + took, 1e-9)
        m["async/lag"] = sum(lags) / max(len(lags), 1)
        m["async/lag_max"] = float(max(lags, default=0))
        with contextlib.suppress(NotImplementedError):
            m["async/queue_depth"] = float(self._out.qsize())
        m["async/sampler_version"] = float(version)
        return m

    def train(self, **kw: Any) -> dict[str, Any]:
        try:
            return super().train(**kw)
        finally:
            self.stop()


def train_engine(cfg: TrainConfig, **kw: Any) -> GRPOTrainer:
    """The engine ``cfg`` asks for: :class:`AsyncGRPOTrainer` with ``rollout.mode: async``, else
    :class:`GRPOTrainer`."""
    return (AsyncGRPOTrainer if cfg.rollout.mode == "async" else GRPOTrainer)(cfg, **kw)
