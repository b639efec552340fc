"""Process-level settings for training on CPU.

glibc serves every allocation above its mmap threshold with a fresh ``mmap`` and returns it
to the kernel on free, so each training step's activations (a few MB each) are page-faulted
and zero-filled by the kernel again, step after step: about 5% of an update on the trainer
benchmark, seen as system time. :func:`keep_freed_memory` raises the mmap and trim thresholds
so freed memory stays in the heap and is reused, as jemalloc or tcmalloc would (PyTorch's CPU
performance guide recommends those). Elsewhere (not Linux/glibc) it does nothing.

:func:`setup_torch` is what every engine and command calls first (rlvr's loop, TRL's adapter,
``rlvr sft`` / ``sample``, the benchmarks).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import random
import sys
import time
from pathlib import Path

import torch

from rlvr.errors import ConfigError

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20  # glibc's ceiling on 64-bit (larger values are refused)

_applied = False


def keep_freed_memory(trim_threshold: int = 1 << 30) -> bool:
    """Keep freed blocks up to 32 MiB (and up to ``trim_threshold`` bytes of free heap) in the process.

    Returns whether the setting is in force (False without glibc's ``mallopt``). Idempotent.
    """
    global _applied
    if _applied:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:  # musl and other C libraries without it
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    _applied = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) == 1 and mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1
    return _applied


def setup_torch(threads: int, seed: int) -> None:
    """One thread (two ran 4-40x slower on a shared 2-core box), no denormals, freed memory kept
    for reuse (:mod:`rlvr.runtime`), seeded."""

    keep_freed_memory()
    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)  # denormal floats made one forward pass 30x slower on CPU
    torch.manual_seed(seed)
    random.seed(seed)


def _cpuinfo() -> str:

    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return ""


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX): without it torch emulates
    bfloat16 matrix products, ~60x slower than float32 on an AVX2-only CPU."""
    text = _cpuinfo()
    return "avx512_bf16" in text or "amx_bf16" in text


def matmul_seconds(dtype: torch.dtype, rows: int = 16, inner: int = 576, cols: int = 8192, repeats: int = 3) -> float:
    """Best-of-``repeats`` seconds of one ``[rows, inner] @ [inner, cols]`` product in ``dtype`` (the
    shape of a small model's lm_head over a decoding batch) on this CPU, one thread as set."""

    a = torch.randn(rows, inner).to(dtype)
    b = torch.randn(inner, cols).to(dtype)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return best


def check_cpu_precision(choices: dict[str, str]) -> None:
    """Refuse bfloat16 on a CPU that cannot multiply it natively, before a model loads.

    ``choices``: the config keys that ask for bfloat16 work (``rollout.dtype``, ``model.dtype``,
    ``model.autocast``) and their values. The message says why, and how fast each choice measured
    on this machine.

    Raises:
        ConfigError: bfloat16 asked for on a CPU without AVX512-BF16 / AMX.
    """
    asked = [k for k, v in choices.items() if v in ("bfloat16", "bf16")]
    if not asked or native_bf16():
        return

    f32, bf16 = matmul_seconds(torch.float32), matmul_seconds(torch.bfloat16)
    raise ConfigError(
        f"{', '.join(f'{k}={choices[k]}' for k in asked)}: this CPU ({cpu_report()}) has no native bfloat16 "
        f"(AVX512-BF16 / AMX), so torch emulates it: a bfloat16 matrix product of an lm_head's shape took "
        f"{bf16 * 1e3:.2f} ms here against {f32 * 1e3:.2f} ms in float32 ({bf16 / max(f32, 1e-9):.0f}x slower). "
        "Use float32 (rollout.dtype=model, model.dtype=float32, model.autocast=none) on this machine"
    )


def sampling_dtype(choice: str, device: torch.device) -> torch.dtype | None:
    """The precision ``rollout.dtype`` samples in on ``device``; None: the model's own.

    ``auto`` takes bfloat16 only where the device multiplies it natively (a CPU with AVX512-BF16 /
    AMX, a GPU that supports it): elsewhere it would be slower, not faster (see
    :func:`check_cpu_precision`, which refuses an explicit ``bfloat16`` there).
    """

    if choice == "bfloat16":
        return torch.bfloat16
    if choice != "auto":
        return None
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    return torch.bfloat16 if device.type == "cpu" and native_bf16() else None


def cpu_report() -> str:
    """The CPU's model name and what torch's kernels can use on it (``AVX512``, ``AVX2``...), for
    the record beside benchmark figures: the same run differs severalfold between machines."""

    name = platform.processor() or platform.machine()
    for line in _cpuinfo().splitlines():
        if line.startswith("model name"):
            name = line.split(":", 1)[1].strip()
            break
    flags = " +bf16" if native_bf16() else ""
    return f"{name} ({torch.backends.cpu.get_cpu_capability()}{flags}, {os.cpu_count()} cores)"
