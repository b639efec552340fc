"""Each stage as the rlvr command it is (``rlvr train`` / ``rlvr sample`` / ``rlvr sft``), its folder,
and whether it already finished.

A stage runs as a child process of its own command, so each one shows its own progress, frees its
memory when it ends, and can be re-run by hand with the command the pipeline prints. A stage is
finished once ``<out_dir>/<name>/stage.json`` exists (written after its command succeeded and its
model was measured); a stage cut short is continued with its command's own ``--resume``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.config import load_config
from rlvr.pipeline.config import PipelineConfig, Stage

MARKER = "stage.json"
TRACES = "traces.jsonl"


def stage_dir(cfg: PipelineConfig, stage: Stage) -> Path:
    return Path(cfg.out_dir) / stage.name


def _by_name(cfg: PipelineConfig, name: str | None) -> Stage | None:
    return next((s for s in cfg.stages if s.name == name), None)


def model_of(cfg: PipelineConfig, ref: str) -> str:
    """What ``--model`` gets for ``ref``: an earlier stage's model folder, or ``ref`` itself."""
    s = _by_name(cfg, ref)
    if s is None:
        return ref
    return str(stage_dir(cfg, s) / "model") if s.kind == "grpo" else str(stage_dir(cfg, s))


def data_of(cfg: PipelineConfig, ref: str) -> str:
    """What ``--data`` gets for ``ref``: an earlier sample stage's traces, or ``ref`` itself."""
    s = _by_name(cfg, ref)
    return str(stage_dir(cfg, s) / TRACES) if s is not None else ref


def produced_model(cfg: PipelineConfig, stage: Stage) -> str | None:
    """The model a stage leaves (None: a sample stage)."""
    if stage.kind == "sample":
        return None
    return model_of(cfg, stage.name)


def grpo_overrides(cfg: PipelineConfig, stage: Stage) -> list[str]:
    """The ``--set`` overrides of a grpo stage: its own, then its folder, model and weights (the
    config's reward options are kept for the rewards the stage still weights)."""
    out = [*stage.set, f"run.out_dir={stage_dir(cfg, stage)}"]
    if stage.model is not None:
        out.append(f"model.name={model_of(cfg, stage.model)}")
    if stage.weights is not None:
        options = load_config(stage.config, list(stage.set)).rewards.options
        out.append(f"rewards.weights={json.dumps(stage.weights)}")
        out.append(f"rewards.options={json.dumps({k: v for k, v in options.items() if k in stage.weights})}")
    return out


def _flags(args: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in args.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            out.append(flag if value else "--no-" + key.replace("_", "-"))
        elif value is not None:
            out += [flag, str(value)]
    return out


def command(cfg: PipelineConfig, stage: Stage) -> list[str]:
    """The ``rlvr`` arguments that run ``stage`` (continuing it when it was cut short)."""
    d = stage_dir(cfg, stage)
    if stage.kind == "grpo":
        argv = ["train", *([stage.config] if stage.config else [])]
        for o in grpo_overrides(cfg, stage):
            argv += ["--set", o]
        if (d / "checkpoints" / "latest").exists():
            argv += ["--resume", str(d)]
        return argv
    assert stage.model is not None and stage.data is not None
    if stage.kind == "sample":
        traces = d / TRACES
        return [
            "sample",
            model_of(cfg, stage.model),
            "--data",
            data_of(cfg, stage.data),
            "--out",
            str(traces),
            *_flags(stage.args),
            *(["--resume"] if traces.exists() else []),
        ]
    return [
        "sft",
        str(d),
        "--model",
        model_of(cfg, stage.model),
        "--data",
        data_of(cfg, stage.data),
        *_flags(stage.args),
        *(["--resume"] if d.exists() and any(d.iterdir()) else []),
    ]


def finished(cfg: PipelineConfig, stage: Stage) -> dict[str, Any] | None:
    """The stage's record when it finished, else None."""
    p = stage_dir(cfg, stage) / MARKER
    return json.loads(p.read_text()) if p.exists() else None


def mark_finished(cfg: PipelineConfig, stage: Stage, record: dict[str, Any]) -> None:
    p = stage_dir(cfg, stage) / MARKER
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(record, indent=1))
