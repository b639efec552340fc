"""keep_freed_memory: big CPU tensors come from the heap, not fresh mmaps, once it is on."""

import ctypes
import ctypes.util
import sys

import pytest

torch = pytest.importorskip("torch")


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


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


def test_bfloat16_on_a_cpu_without_it_is_refused_with_what_each_precision_measured(monkeypatch, tmp_path) -> None:
    import rlvr.runtime as runtime
    from rlvr.config import TrainConfig
    from rlvr.engine.trainer import GRPOTrainer
    from rlvr.errors import ConfigError

    runtime.check_cpu_precision({"rollout.dtype": "model", "model.autocast": "none"})  # float32: nothing to check
    monkeypatch.setattr(runtime, "native_bf16", lambda: False)  # an AVX2-only CPU, as another machine had
    cfg = TrainConfig.model_validate({"rollout": {"dtype": "bfloat16"}, "run": {"out_dir": str(tmp_path)}})
    with pytest.raises(ConfigError, match=r"rollout\.dtype=bfloat16: this CPU .* no native bfloat16") as e:
        GRPOTrainer(cfg)
    # the message carries both timings, measured here, and the fix
    assert "ms here against" in str(e.value) and "ms in float32" in str(e.value) and "float32" in str(e.value)
    assert not (tmp_path / "metrics.jsonl").exists()  # refused before anything ran
    monkeypatch.setattr(runtime, "native_bf16", lambda: True)
    runtime.check_cpu_precision({"rollout.dtype": "bfloat16"})  # a CPU with AVX512-BF16 / AMX: allowed


def test_auto_sampling_precision_takes_bfloat16_only_where_the_device_multiplies_it_natively(monkeypatch) -> None:
    import rlvr.runtime as runtime

    cpu = torch.device("cpu")
    monkeypatch.setattr(runtime, "native_bf16", lambda: False)  # AVX2 only: emulated bfloat16 would be slower
    assert runtime.sampling_dtype("auto", cpu) is None
    assert runtime.sampling_dtype("model", cpu) is None
    assert runtime.sampling_dtype("bfloat16", cpu) is torch.bfloat16  # explicit: check_cpu_precision refuses it
    monkeypatch.setattr(runtime, "native_bf16", lambda: True)  # AVX512-BF16 / AMX
    assert runtime.sampling_dtype("auto", cpu) is torch.bfloat16
    assert runtime.sampling_dtype("model", cpu) is None


def test_auto_sampling_precision_passes_the_cpu_check_and_logs_what_it_chose(monkeypatch, tmp_path) -> None:
    import rlvr.runtime as runtime
    from rlvr.config import load_config
    from rlvr.engine.trainer import GRPOTrainer

    base = [
        "rollout.dtype=auto",
        "rollout.prompts_per_step=2",
        "rollout.group_size=2",
        "rollout.max_new_tokens=4",
        "run.steps=1",
        "run.eval_every=0",
        "data.eval_size=1",
        "run.log_rollouts=false",
    ]
    for native in (False, True):
        monkeypatch.setattr(runtime, "native_bf16", lambda native=native: native)
        trainer = GRPOTrainer(load_config(None, [*base, f"run.out_dir={tmp_path / str(native)}"]))  # never refused
        m = trainer.train_step()
        assert m["rollout/bf16"] == float(native)
        assert trainer.rollout_dtype == (torch.bfloat16 if native else None)  # what the sampler is handed
