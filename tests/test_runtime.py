"""keep_freed_memory: big CPU tensors come from the heap, not fresh mmaps, once it is on."""

import ctypes
import ctypes.util
import sys

import pytest

torch = pytest.importorskip("torch")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_large_tensors_are_served_from_the_heap():
    from rlvr.runtime import keep_freed_memory

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("no glibc mallinfo2")
    libc.mallinfo2.restype = _MallInfo2
    assert keep_freed_memory()
    assert keep_freed_memory()  # idempotent
    before = libc.mallinfo2().hblkhd  # bytes in mmapped blocks
    t = torch.ones(4 << 20)  # 16 MiB: above glibc's default threshold, so an mmap without the setting
    assert libc.mallinfo2().hblkhd - before < 1 << 20
    del t
    freed = libc.mallinfo2().fordblks  # free bytes kept in the heap
    assert freed >= 16 << 20


def test_the_cpu_report_names_what_torchs_kernels_can_use() -> None:
    import torch

    from rlvr.runtime import cpu_report

    report = cpu_report()
    assert torch.backends.cpu.get_cpu_capability() in report and "cores" in report
