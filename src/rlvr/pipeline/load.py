"""``load_pipeline``: a pipeline config read and every stage checked (references between stages,
each grpo stage's own config with its overrides, the held-out data) before anything runs."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from rlvr.config import explain, load_config, read_yaml
from rlvr.data.datasets import load_samples
from rlvr.errors import ConfigError, DataError
from rlvr.models.load import NAMED
from rlvr.pipeline.config import PipelineConfig
from rlvr.pipeline.stages import grpo_overrides
from rlvr.rewards import Total


def load_pipeline(path: str | Path) -> PipelineConfig:
    """Read and check a pipeline config; every stage's config is checked too, before anything runs.

    Raises:
        ConfigError: unreadable YAML, an unknown field, a bad reference between stages, or a grpo
            stage whose own config (with its overrides) does not load; the message names the stage.
    """
    tree = read_yaml(path, "pipeline config", "out_dir, eval and stages")
    try:
        cfg = PipelineConfig.model_validate(tree)
    except ValidationError as e:
        raise ConfigError(f"{path}: " + explain(e, PipelineConfig)) from None
    names = {st.name for st in cfg.stages}
    for s in cfg.stages:
        if s.model is not None and s.model not in names and not _model_exists(s.model):
            raise ConfigError(
                f"{path}: stage {s.name!r}: model {s.model!r} is neither a stage, 'tiny', a named "
                "model nor an existing folder"
            )
        if s.data is not None and s.data not in names and ":" not in s.data and not Path(s.data).exists():
            raise ConfigError(f"{path}: stage {s.name!r}: data {s.data!r} is neither a stage nor an existing file")
    try:
        held = load_samples(cfg.eval.data)  # the held-out set every model is measured on: checked now
    except DataError as e:
        raise ConfigError(f"{path}: eval.data: {e}") from None
    if not held:
        raise ConfigError(f"{path}: eval.data {cfg.eval.data!r} has no rows")
    for s in cfg.stages:
        if s.kind == "grpo":
            try:
                run = load_config(s.config, grpo_overrides(cfg, s))
                Total.from_config(run.rewards)  # rewards build
            except ConfigError as e:
                raise ConfigError(f"{path}: stage {s.name!r}: {e}") from None
    return cfg


def _model_exists(spec: str) -> bool:
    return spec == "tiny" or spec in NAMED or Path(spec).exists()
