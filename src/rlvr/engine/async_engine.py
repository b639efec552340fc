"""rlvr's asynchronous engine: a sampler process draws while the learner updates (``rollout.mode: async``).

Two processes, one torch thread each, joined by a bounded queue of scored steps:

* the **sampler** (the engine's draw phase, :class:`rlvr.engine.draws.Draws`, over a policy copy: no
  optimizer, no reference model) draws the rollouts of learner step ``t`` with the weights of version
  ``t - 1 - rollout.max_lag``, scores them, runs the failure step's redraws and puts the result on the
  queue; every rollout carries the policy version that sampled it;
* the **learner** (this process) takes them in order, applies the off-policy correction (behaviour
  log-probs from the sampler; with ``off_policy.proximal: recompute`` the proximal ones recomputed),
  decides, updates (:meth:`rlvr.engine.learner.Learner.learn`), and publishes the trained weights (only the adapters'
  tensors with LoRA) through shared memory; the sampler picks them up at its next step boundary.

**Staleness is bounded, corrected and counted.** The sampler draws the rollouts of learner step ``t``
once the weights of version ``t - 1 - rollout.max_lag`` are published, and with exactly those (it is
paced: it never runs further ahead, so it never draws what would be thrown away; and which version
draws which step does not depend on timing, so a run is reproducible); a row older than
``failure.max_staleness`` versions is ``stale`` (out of its group and the loss, counted), one within
it is corrected as ``off_policy`` says. ``async/lag`` is the versions
between a row's sampler and the learner that trains on it.

**What a run guarantees.** Checkpoints are the learner's, and they hold the handoff: the steps the
sampler had drawn for the learner but the learner had not trained yet (``rollout.max_lag`` of them,
drawn by older weights), the sampler's draw-ahead buffer as of the last of them, and the data
position after it. A resumed run (after SIGKILL of the parent, the learner or the sampler) trains
those steps first and starts a fresh sampler after them, so it goes on as the run that was never
killed (bit for bit on CPU with the default pacing; measured by ``benchmarks/soak.py``): no prompt
is used twice or skipped. A sampler that dies is an error in the learner within a second, one that
sends nothing for ``rollout.sampler_timeout_s`` too; the sampler dies with its parent
(``PR_SET_PDEATHSIG``).
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
import yaml

from rlvr.config import TrainConfig, dump_config
from rlvr.data.tasks import Sample
from rlvr.engine.draws import Drawn, Draws, failure_step
from rlvr.engine.trainer import GRPOTrainer
from rlvr.runtime import setup_torch
from rlvr.setup import build

_STOP = "stop"


@dataclass
class SharedWeights:
    """The trained tensors of the last ``slots`` versions in shared memory, each slot with the version
    it holds (``version % slots``): the sampler reads the exact version its step is drawn with.

    With ``slots = rollout.max_lag + 1`` the version a step needs is never overwritten before the
    sampler has read it: the learner publishes version ``v + slots`` only after training on a step
    the sampler drew with version ``v``.
    """

    tensors: list[dict[str, torch.Tensor]]
    versions: Any  # mp.Array("i", slots): the version each slot holds (-1: none yet)
    lock: Any  # mp.Lock

    @classmethod
    def of(cls, model: Any, ctx: Any, slots: int) -> SharedWeights:
        trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        tensors = [{n: p.detach().clone().share_memory_() for n, p in trained} for _ in range(slots)]
        return cls(tensors, ctx.Array("i", [-1] * slots), ctx.Lock())

    @property
    def newest(self) -> int:
        return max(self.versions[:])

    def published(self, version: int) -> bool:
        return self.versions[version % len(self.tensors)] == version

    def publish(self, model: Any, version: int) -> None:
        """Copy the model's trained tensors in as ``version`` (the learner, after each optimizer step)."""
        slot = version % len(self.tensors)
        with self.lock, torch.no_grad():
            for n, p in model.named_parameters():
                if n in self.tensors[slot]:
                    self.tensors[slot][n].copy_(p.detach())
            self.versions[slot] = version

    def load_into(self, model: Any, version: int) -> int:
        """Copy ``version`` into ``model`` (the sampler, at a step boundary, once it is published)."""
        slot = version % len(self.tensors)
        with self.lock, torch.no_grad():
            if self.versions[slot] != version:
                raise RuntimeError(f"weights of version {version} were overwritten before the sampler read them")
            for n, p in model.named_parameters():
                if n in self.tensors[slot]:
                    p.copy_(self.tensors[slot][n])
        return version


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux); a no-op elsewhere."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _stopped(control: Any, s: Draws) -> bool:
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
    ahead: list[Any] | None = None,
) -> None:
    """The sampler process: draw, score, redraw, hand over, as long as the learner wants steps.
    ``ahead``: the draw-ahead buffer to start from (a resumed run's, as of its last handed-over step)."""
    _die_with_parent()
    cfg = TrainConfig.model_validate(yaml.safe_load(config))
    setup_torch(1, cfg.run.seed)
    try:
        run = build(cfg, model=model, tokenizer=tokenizer, train_rows=rows, eval_rows=[])
        s = Draws(cfg, run, failure_step(cfg, run.tags))
        s.data.skip_to(position)
        s.step = first_step  # seeds the draws as the synchronous engine's step would
        s.ahead.items = list(ahead or [])
        idle = 0.0
        while True:
            if _stopped(control, s):
                return
            # the step this draw trains is learner step s.step + 1, at version s.step: it is drawn with
            # the weights max_lag versions older, exactly (the pacing that bounds staleness, and makes
            # which version draws which step independent of timing: a resumed run is the same run)
            need = max(0, s.step - cfg.rollout.max_lag)
            t_wait = time.perf_counter()
            while not shared.published(need):
                time.sleep(0.005)
                if _stopped(control, s):
                    return
            idle += time.perf_counter() - t_wait
            s.version = shared.load_into(s.policy, need)
            t0 = time.perf_counter()
            drawn = s.draw()
            took = time.perf_counter() - t0
            item = ("step", Handed(drawn, s.data.position, s.version, took, idle, list(s.ahead.items)))
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


@dataclass
class Handed:
    """One drawn step handed from the sampler to the learner, with where the sampler stood after it:
    its data position, the weights' version that drew it, its timings and its draw-ahead buffer."""

    drawn: Drawn
    position: int
    version: int
    took: float
    idle: float
    ahead: list[Any]


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
        self._held: list[Handed] = []  # handed-over steps not trained yet (a checkpoint holds them)

    # ------------------------------------------------------------------ the sampler
    def _start(self) -> None:
        model, tok, rows = self._given
        lag = self.cfg.rollout.max_lag
        self._shared = SharedWeights.of(self.model, self._ctx, lag + 1)
        # the sampler's first draw needs version (its step - lag): the current weights when the
        # checkpoint held the handoff; a checkpoint without it (the last step's, or an older rlvr's)
        # has only these weights for the versions before them too
        for v in range(max(0, self.step + len(self._held) - lag), self.step + 1):
            self._shared.publish(self.model, v)
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
                self._held[-1].position if self._held else self.data.position,
                self.step + len(self._held),
                self._held[-1].ahead if self._held else list(self.ahead.items),
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

    def _next(self) -> Handed:
        """The next drawn step: one held by a checkpoint, else the sampler's (errors if it died,
        failed, or went silent)."""
        if self._held:
            return self._held.pop(0)
        return self._receive()

    def _receive(self) -> Handed:
        """The sampler's next step from the queue."""
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
        handed: Handed = msg[1]
        return handed

    # ------------------------------------------------------------------ the learner
    def train_step(self) -> dict[str, Any]:
        """One learner step: the next drawn step from the queue, corrected, decided, trained on; the
        weights published for the sampler."""
        if self._proc is None:
            self._start()
        t0 = time.perf_counter()
        handed = self._next()
        drawn, version, took, idle = handed.drawn, handed.version, handed.took, handed.idle
        t_gen = time.perf_counter()
        m = self.stepped(drawn, self.learner.learn(drawn, self.step + 1), t0, t_gen)
        self.data.position = handed.position  # where the trained steps end
        assert self._shared is not None
        self._shared.publish(self.model, self.step)
        for pid in self.quarantined_now:
            self._control.put(pid)
        lags = [self.step - 1 - v for v in drawn.rows.batch.versions]
        m["time/generate_s"] = took  # the sampler's, overlapped with the learner's previous step
        m["async/learner_idle"] = (t_gen - t0) / max(m["time/step_s"], 1e-9)
        m["async/sampler_idle"] = idle / max(idle + took, 1e-9)
        m["async/lag"] = sum(lags) / max(len(lags), 1)
        m["async/lag_max"] = float(max(lags, default=0))
        with contextlib.suppress(NotImplementedError):
            m["async/queue_depth"] = float(self._out.qsize())
        m["async/sampler_version"] = float(version)
        return m

    def state(self) -> dict[str, Any]:
        """The learner's checkpoint and the handoff: the steps drawn for the learner and not trained
        yet. It waits for them (the learner would wait for the next one anyway); the last step's
        checkpoint holds none."""
        if self._proc is not None and self.step < self.cfg.run.steps:
            while len(self._held) < self.cfg.rollout.max_lag:
                self._held.append(self._receive())
        return {**super().state(), "async_held": list(self._held)}

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self._held = list(state.get("async_held") or [])

    def train(self, **kw: Any) -> dict[str, Any]:
        try:
            return super().train(**kw)
        finally:
            self.stop()


def train_engine(cfg: TrainConfig, **kw: Any) -> GRPOTrainer:
    """The engine ``cfg`` asks for: :class:`AsyncGRPOTrainer` with ``rollout.mode: async``, else
    :class:`GRPOTrainer`."""
    return (AsyncGRPOTrainer if cfg.rollout.mode == "async" else GRPOTrainer)(cfg, **kw)
