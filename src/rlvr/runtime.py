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
import random
import sys

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
    import torch

    keep_freed_memory()
    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)  # denormal floats made one forward pass 30x slower on CPU
    torch.manual_seed(seed)
    random.seed(seed)


def cpu_report() -> str:
    """The CPU's model name and what torch's kernels can use on it (``AVX512``, ``AVX2``...), for
    the record beside benchmark figures: the same run differs severalfold between machines."""
    import os
    import platform
    from pathlib import Path

    import torch

    name, flags = platform.processor() or platform.machine(), ""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        text = ""
    for line in text.splitlines():
        if line.startswith("model name"):
            name = line.split(":", 1)[1].strip()
            break
    if "avx512_bf16" in text or "amx_bf16" in text:
        flags = " +bf16"
    return f"{name} ({torch.backends.cpu.get_cpu_capability()}{flags}, {os.cpu_count()} cores)"
