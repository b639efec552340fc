"""``rlvr train``: a thin command over :mod:`rlvr.engine.trainer` (and the TRL engine)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from rlvr.cli.console import abort, console, progress
from rlvr.config import load_config
from rlvr.errors import ConfigError, DataError, RunError


def train(
    config: Annotated[Path | None, typer.Argument(help="YAML config (defaults: the tiny addition demo).")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="Override: key.sub=value (repeatable).")] = [],  # noqa: B006
    resume: Annotated[
        Path | None, typer.Option(help="Continue the run in this folder from its last checkpoint.")
    ] = None,
    processes: Annotated[
        int | None, typer.Option(min=1, help="Processes (engine trl): torchrun starts them, gloo on CPU, one per GPU.")
    ] = None,
) -> None:
    """Train with GRPO (engine rlvr or trl). Metrics go to RUN_DIR/metrics.jsonl, rollouts to rollouts.jsonl."""

    from rlvr.runs.checkpoint import disk_refused

    overrides = list(set_)
    if resume is not None:
        if not resume.is_dir():
            abort(f"--resume {resume}: no such run folder")
        if config is None and (resume / "config.yaml").exists():
            config = resume / "config.yaml"
        overrides.append(f"run.out_dir={resume}")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if processes is not None:
        overrides.append(f"run.processes={processes}")
    elif world > 1:  # started by torchrun / accelerate launch: as many processes as they started
        overrides.append(f"run.processes={world}")
    try:
        cfg = load_config(config, overrides)  # refused here, before any model loads
    except ConfigError as e:
        if resume is not None and config == resume / "config.yaml":
            abort(f"--resume {resume}: its config.yaml does not load here (written by another version of rlvr?): {e}")
        abort(str(e))
    if cfg.engine == "trl" and cfg.run.processes > 1 and world == 1:
        raise typer.Exit(_launch(cfg.run.processes, config, overrides, resume))
    if world > 1 and world != cfg.run.processes:
        abort(f"run.processes is {cfg.run.processes} but {world} processes were started")
    try:
        if cfg.engine == "trl":
            result = _train_trl(cfg, resume is not None)
        else:
            result = _train_rlvr(cfg, resume is not None)
    except (ConfigError, DataError) as e:
        abort(str(e))
    except RunError as e:
        abort(str(e), 1)
    except OSError as e:
        if not disk_refused(e):
            raise
        abort(f"{e.filename or cfg.run.out_dir}: {e.strerror}; the run stopped (its last checkpoint is intact)", 1)
    if int(os.environ.get("RANK", "0")) == 0:
        _summary(cfg, result)
    if world > 1:
        _leave()


def _launch(n: int, config: Path | None, overrides: list[str], resume: Path | None) -> int:
    """Start ``n`` processes of this same command with torchrun (CPU: gloo on the loopback interface)."""

    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc_per_node={n}",
        "--master_addr=127.0.0.1",
        f"--master_port={port}",
        "-m",
        "rlvr",
        "train",
    ]
    if config is not None:
        cmd.append(str(config))
    for o in overrides:
        if not o.startswith("run.out_dir=") or resume is None:
            cmd += ["--set", o]
    if resume is not None:
        cmd += ["--resume", str(resume)]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    return subprocess.call(cmd, env=env)


def _train_rlvr(cfg: Any, resume: bool) -> dict[str, Any]:
    from rlvr.engine.async_engine import train_engine

    trainer = train_engine(cfg)
    with progress(cfg.run.steps) as bar:
        task = bar.add_task("grpo" if cfg.rollout.mode == "sync" else "grpo (async)", total=cfg.run.steps, info="")

        def on_step(step: int, m: dict[str, Any]) -> None:
            bar.update(task, completed=step, info=_info(m))

        return trainer.train(resume=resume, on_step=on_step)


def _train_trl(cfg: Any, resume: bool) -> dict[str, Any]:

    from rlvr.integrations.trl.from_config import train_trl

    if int(os.environ.get("RANK", "0")) != 0:
        result = train_trl(cfg, resume=resume)
    else:
        with progress(cfg.run.steps) as bar:
            task = bar.add_task("grpo (trl)", total=cfg.run.steps, info="")
            result = train_trl(
                cfg, resume=resume, on_log=lambda step, m: bar.update(task, completed=step, info=_info(m))
            )
    _end_processes()
    return result


def _end_processes() -> None:
    """Destroy the process group of a finished multi-process run while the interpreter is whole.

    Left to interpreter exit, gloo's worker threads can still hold work whose tensors need the GIL
    during finalisation, and the process dies of SIGABRT ("terminate called without an active
    exception", pytorch/pytorch#190489) after a run that succeeded. Only on success: a rank that
    failed must not wait in a collective teardown for ranks that will never join it.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def _leave() -> None:
    """End a rank whose run finished without interpreter finalisation.

    Destroying the process group first (:func:`_end_processes`) made the SIGABRT at exit rarer, not
    gone: gloo's and torch's C++ threads can still be joined, or hold tensors, while the interpreter
    tears its modules down ("terminate called without an active exception"). Everything the run
    writes is closed by now; what is left for finalisation is only that teardown, so the rank flushes
    its output and leaves with the run's status instead.
    """

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def _info(m: dict[str, Any]) -> str:
    acc = m.get("reward/accuracy/mean")
    info = (f"reward {m['reward/total/mean']:.3f}" if m.get("reward/total/mean") is not None else "") + (
        f"  acc {acc:.2f}" if acc is not None else ""
    )
    if m.get("verify/no_answer") is not None:
        info += f"  no_answer {m['verify/no_answer']:.2f}  wrong {m['verify/wrong']:.2f}"
    if "eval/accuracy" in m:
        info += f"  held-out {m['eval/accuracy']:.3f}"
    if "async/lag" in m:  # both processes: what the sampler is ahead by and who waited
        info += (
            f"  lag {m['async/lag']:.1f}  queue {m.get('async/queue_depth', 0):.0f}  "
            f"idle: learner {m['async/learner_idle']:.0%} sampler {m['async/sampler_idle']:.0%}"
        )
    return info


def _summary(cfg: Any, result: dict[str, Any]) -> None:

    before = result.get("before", {}).get("accuracy")
    after = result.get("after", {}).get("accuracy")
    line = f"trained {result['steps']} steps -> {cfg.run.out_dir}"
    if after is not None:
        line += f"; held-out greedy accuracy {'' if before is None else f'{before:.3f} -> '}{after:.3f}"
    console.print(line)
