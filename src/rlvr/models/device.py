"""Where and in what precision a model runs: ``run.device`` and ``model.dtype`` resolved once.

``auto`` is CUDA when torch sees a GPU, else CPU. A device the machine does not have is refused
before any model loads, with the field and what torch sees. The lean CPU paths
(:mod:`.fast_decode`, :mod:`.grouped_forward`) are tuned for a CPU's per-op overhead; on a GPU the
model's own forward (SDPA attention, one fused kernel per op) is the better default, so
``model.fast_decode: null`` (the default) means "on CPU only".
"""

from __future__ import annotations

import contextlib
import re
from contextlib import AbstractContextManager
from typing import Any

import torch

from rlvr.errors import ConfigError

DEVICE_PATTERN = r"^(auto|cpu|mps|cuda(:\d+)?)$"
DTYPES = ("float32", "bfloat16")


def resolve_device(spec: str = "auto") -> torch.device:
    """The torch device ``spec`` (``auto | cpu | cuda | cuda:N | mps``) names on this machine.

    Raises:
        ConfigError: the spec is malformed, or names a device torch does not see here.
    """

    if not re.match(DEVICE_PATTERN, spec):
        raise ConfigError(f"run.device {spec!r}: expected auto, cpu, cuda, cuda:N or mps")
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(spec)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(
                f"run.device {spec!r}: torch {torch.__version__} sees no CUDA device here (use run.device=cpu or auto)"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError(f"run.device {spec!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"run.device {spec!r}: torch sees no MPS device here (use run.device=cpu or auto)")
    return dev


def torch_dtype(name: str) -> torch.dtype:
    """``float32`` / ``bfloat16`` as a torch dtype."""

    if name not in DTYPES:
        raise ConfigError(f"model.dtype {name!r}: expected one of {', '.join(DTYPES)}")
    return getattr(torch, name)


def matmul_precision(model: Any, autocast: str) -> AbstractContextManager[Any]:
    """Where ``model``'s matrix products run in bfloat16 (``model.autocast: bf16``); a no-op otherwise."""
    if autocast == "bf16":
        return torch.autocast(next(model.parameters()).device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def lean_paths(fast: bool | None, device: torch.device) -> bool:
    """Whether to use rlvr's lean decoder and grouped forward: as configured, else on CPU only."""
    return fast if fast is not None else device.type == "cpu"
