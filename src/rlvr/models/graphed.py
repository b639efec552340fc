"""The lean decoder's static step captured once per batch and replayed: a CUDA graph.

Decoding a small or medium model one token at a time is bound by kernel launches, not by the GPU:
a step of :class:`~rlvr.models.fast_decode.FastDecoder` is a few hundred small kernels, each
launched from Python. Its static step (``static=True``) has the same shapes at every position and
reads nothing from the host (the slot it writes is a device tensor), so it can be recorded once as a
CUDA graph and replayed for every later token: one launch a step.

:class:`GraphedDecoder` wraps a static decoder and records its step the first time a batch of a
given size (and cache) steps: a warm-up run first (on a side stream, as capture requires, so the
allocator and cuBLAS settle), undone at once (:meth:`~rlvr.models.fast_decode.FastDecoder.unstep_static`:
a static step changes only its counters and its slot's mask; its slot's key and value are written
again by the next real step), then the capture, which runs nothing. Every later step copies the
tokens into the recorded input, replays, and counts the slot on the host. Dropping rows
(:meth:`keep`) or growing the cache makes new buffers, so the next step records again; decoding
drops rows by batch-size buckets (:func:`bucket`) so a run records a handful of graphs, not one a
row. A multi-token step (a grammar's forced tokens, a tool's result) runs eagerly.

Off CUDA there is no graph: the same calls replay the step eagerly through the same recorded input
and output buffers (what the CPU tests hold against the dynamic step), and the decoder says so once.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from rlvr.models.fast_decode import FastDecoder

logger = logging.getLogger(__name__)
_SAID: set[str] = set()


def bucket(n: int) -> int:
    """The batch size a decoder keeps for ``n`` rows still going: the next power of two (rows that
    ended fill the rest), so a run's graphs are recorded at a few sizes.

    Examples:
        >>> [bucket(n) for n in (1, 2, 3, 5, 64, 65)]
        [1, 2, 4, 8, 64, 128]
    """
    return 1 << max(n - 1, 0).bit_length()


class GraphedDecoder:
    """A static :class:`~rlvr.models.fast_decode.FastDecoder` whose one-token step is replayed from a
    recorded CUDA graph (see the module docstring); the decoder's other calls pass through.

    Args:
        decoder: a decoder built with ``static=True``.
        capture: record CUDA graphs (default: when the decoder's cache is on a CUDA device); False
            replays the step eagerly through the same buffers.
    """

    buckets = True  # decoding keeps batch-size buckets when it drops rows (rlvr.sampling.decode)

    def __init__(self, decoder: FastDecoder, capture: bool | None = None) -> None:
        if not decoder.static:
            raise ValueError("a GraphedDecoder records a static decoder's step (FastDecoder(static=True))")
        self.d = decoder
        on_cuda = decoder.k[0].is_cuda
        self.capture = on_cuda if capture is None else capture
        if self.capture and not on_cuda:
            raise ValueError("CUDA graphs need the decoder's cache on a CUDA device")
        if not self.capture and "eager" not in _SAID:
            _SAID.add("eager")
            logger.info("decoding with the static step replayed eagerly: CUDA graphs need a CUDA device")
        self._graph: Any = None
        self._key: tuple[int, int] | None = None
        self._tok: torch.Tensor | None = None
        self._out: torch.Tensor | None = None
        self.recorded = 0  # graphs recorded (a run records one per batch size it reaches)

    @property
    def batch(self) -> int:
        return self.d.batch

    def prefill(self, ids: torch.Tensor, attention_mask: torch.Tensor, repeat: int = 1) -> torch.Tensor:
        self._graph = None
        return self.d.prefill(ids, attention_mask, repeat)

    def keep(self, rows: torch.Tensor) -> None:
        """As the decoder's ``keep``: new buffers, so the next step records again."""
        self.d.keep(rows)
        self._graph = None

    def step(self, tokens: torch.Tensor, counts: torch.Tensor | None = None) -> torch.Tensor:
        """As the decoder's ``step``; a one-token step replayed from the recorded graph."""
        d = self.d
        if tokens.dim() == 2 or d.length + 1 > d.k[0].shape[0]:  # several tokens, or a cache that must grow
            self._graph = None
            return d.step(tokens, counts)
        key = (d.batch, d.k[0].data_ptr())
        if self._graph is None or key != self._key:
            self._record(tokens)
            self._key = key
        assert self._tok is not None
        self._tok.copy_(tokens)
        if self.capture:
            self._graph.replay()
        else:
            assert self._out is not None
            self._out.copy_(d.static_core(self._tok))
        d.length += 1
        assert self._out is not None
        return self._out  # overwritten by the next step: read it before stepping again

    def _record(self, tokens: torch.Tensor) -> None:
        """The step recorded for the decoder's current batch and buffers (see the module docstring)."""
        d = self.d
        self._tok = tokens.clone()
        if not self.capture:
            self._out = d.static_core(self._tok)  # the warm-up's output buffer is the eager replay's
            d.unstep_static()
            self._graph = "eager"
            self.recorded += 1
            return
        side = torch.cuda.Stream(device=tokens.device)
        side.wait_stream(torch.cuda.current_stream(tokens.device))
        with torch.cuda.stream(side):
            d.static_core(self._tok)
            d.unstep_static()
        torch.cuda.current_stream(tokens.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._out = d.static_core(self._tok)
        self._graph = graph
        self.recorded += 1
