"""The update's log-probs on vocabulary tiles (``algo.logprobs: chunked``) equal the plain path's:
the same log-probs and the same gradients, on both of the engine's forwards (the model's own and the
shared-prompt one), for every loss aggregation, with micro-batches, with grammar-masked positions and
with LoRA; and one update never holds the logits of more than one tile at once (profiled)."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from rlvr.algo.loss import AGGREGATIONS
from tests.invariant.test_gradients import TINY, _advantages, _batch, _trainer, assert_same, grads


def _pair(tmp_path, *extra: str):
    full = _trainer(tmp_path / "full", "algo.logprobs=full", *extra)
    chunked = _trainer(tmp_path / "chunked", "algo.logprobs=chunked", *extra)
    chunked.model.load_state_dict(full.model.state_dict())
    assert chunked.learner.fwd.chunked and not full.learner.fwd.chunked
    return full, chunked


@pytest.mark.parametrize("loss", sorted(AGGREGATIONS))
@pytest.mark.parametrize(
    "extra", [[], ["algo.micro_batch=3"], ["model.fast_decode=false"]], ids=["shared-prompt", "split", "model-own"]
)
def test_chunked_logprobs_give_the_full_paths_gradients(tmp_path, loss: str, extra: list[str]) -> None:
    full, chunked = _pair(tmp_path, f"algo.loss={loss}", *extra)
    b = _batch(full)
    adv = _advantages(len(b.texts))
    admit = torch.ones(len(b.texts), dtype=torch.bool)
    admit[[1, 6]] = False
    torch.testing.assert_close(full.learner.logprobs(b), chunked.learner.logprobs(b), atol=1e-5, rtol=1e-5)
    assert_same(grads(full, b, adv, admit), grads(chunked, b, adv, admit))


def test_chunked_logprobs_keep_the_grammar_masks(tmp_path) -> None:
    """Positions sampled under a mask: log-probs of the renormalised allowed set, on both paths."""
    full, chunked = _pair(tmp_path)
    b = _batch(full)
    n, t = b.completion_ids.shape
    words = (full.model.config.vocab_size + 31) // 32
    g = torch.Generator().manual_seed(3)
    bits = torch.full((n, t, words), -1, dtype=torch.int32)
    for i in range(n):  # the first three tokens of each row: a random allowed set with the sampled token
        for j in range(min(3, int(b.completion_mask[i].sum()))):
            allowed = torch.rand(words * 32, generator=g) < 0.3
            allowed[int(b.completion_ids[i, j])] = True
            packed = (allowed.view(words, 32).long() << torch.arange(32)).sum(1)
            bits[i, j] = packed.to(torch.int64).sub((packed >= 2**31).long() << 32).to(torch.int32)
    masked = dataclasses.replace(b, bitmask=bits)
    adv = _advantages(n)
    admit = torch.ones(n, dtype=torch.bool)
    lp_full, lp_chunked = full.learner.logprobs(masked), chunked.learner.logprobs(masked)
    assert not torch.allclose(lp_full, full.learner.logprobs(b))  # the masks changed the log-probs
    torch.testing.assert_close(lp_full, lp_chunked, atol=1e-5, rtol=1e-5)
    assert_same(grads(full, masked, adv, admit), grads(chunked, masked, adv, admit))


def test_chunked_logprobs_with_lora(tmp_path) -> None:
    full, chunked = _pair(tmp_path, "model.lora={r: 4, alpha: 8}")
    b = _batch(full)
    adv = _advantages(len(b.texts))
    admit = torch.ones(len(b.texts), dtype=torch.bool)
    assert_same(grads(full, b, adv, admit), grads(chunked, b, adv, admit))


def _peak_single_allocation(trainer, batch, adv, admit) -> int:
    """The largest single CPU allocation (bytes) one pass of the update makes (torch's profiler)."""
    from torch.profiler import ProfilerActivity, profile

    trainer.model.zero_grad(set_to_none=True)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        trainer.learner.backward(batch, adv, admit)
    trainer.model.zero_grad(set_to_none=True)
    return max(e.cpu_memory_usage for e in prof.events() if e.cpu_memory_usage > 0)


def test_one_update_never_holds_more_than_one_tile_of_vocabulary_values(tmp_path) -> None:
    """A 32k vocabulary: the full path allocates the whole float32 [rows, tokens, vocab] logits (the
    check can fail); the chunked one never allocates more than one tile of vocabulary values."""
    from transformers import Qwen2Config

    from rlvr.models.logprobs import VOCAB_CHUNK

    vocab = 32768
    runs = []
    for mode in ("full", "chunked"):
        tr = _trainer(tmp_path / mode, f"algo.logprobs={mode}", "model.fast_decode=false")
        cfg = Qwen2Config(**{**tr.model.config.to_dict(), "vocab_size": vocab})
        torch.manual_seed(0)
        # the same engine over a 32k-vocabulary model
        tr.model = tr.learner.model = tr.learner.fwd.model = tr.draws.policy = type(tr.model)(cfg)
        runs.append(tr)
    full, chunked = runs
    chunked.model.load_state_dict(full.model.state_dict())
    b = _batch(full)
    g = torch.Generator().manual_seed(5)  # completions over the whole vocabulary
    ids = torch.randint(0, vocab, b.completion_ids.shape, generator=g) * b.completion_mask
    b = dataclasses.replace(b, completion_ids=ids)
    adv = _advantages(len(b.texts))
    admit = torch.ones(len(b.texts), dtype=torch.bool)
    logits_bytes = b.completion_ids.numel() * vocab * 4  # the whole float32 logits of the batch
    tile = min(b.completion_ids.numel(), 4096) * VOCAB_CHUNK * 4
    assert tile < logits_bytes / 2
    assert _peak_single_allocation(full, b, adv, admit) >= logits_bytes
    assert _peak_single_allocation(chunked, b, adv, admit) <= tile
    assert_same(grads(full, b, adv, admit), grads(chunked, b, adv, admit))


assert "run.steps=1" in TINY  # the shared set-up these tests borrow
