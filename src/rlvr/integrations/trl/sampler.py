"""TRL's repeat layout with quarantined prompts left out: the same stream on every process."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sized

import torch
from torch.utils.data import Sampler

from rlvr.errors import DataError


class QuarantineRepeatSampler(Sampler[int]):
    """``trl``'s ``RepeatSampler`` (each prompt ``mini_repeat_count`` times in a row, chunks of
    ``batch_size`` prompts repeated ``repeat_count`` times) whose chunks never hold a prompt that
    ``skip`` refuses: its place goes to the next prompt of the same shuffled order.

    Every process builds the same permutation from the same seed and asks ``skip`` when it forms a
    chunk; the quarantine behind ``skip`` is decided on data gathered from every process, so all
    processes see the same set at the same point and draw the same stream. A chunk is formed only
    when the data loader asks for it, so prompts quarantined during the epoch leave it at once
    (a loader that reads ahead sees the set one batch late, on every process alike).
    """

    def __init__(
        self,
        data_source: Sized,
        mini_repeat_count: int,
        batch_size: int = 1,
        repeat_count: int = 1,
        shuffle: bool = True,
        seed: int | None = None,
        skip: Callable[[int], bool] | None = None,
    ) -> None:
        self.n = len(data_source)
        self.mini_repeat_count, self.batch_size, self.repeat_count = mini_repeat_count, batch_size, repeat_count
        self.shuffle, self.skip = shuffle, skip or (lambda _: False)
        self.generator = torch.Generator()
        if seed is not None:
            self.generator.manual_seed(seed)

    def __iter__(self) -> Iterator[int]:
        order = torch.randperm(self.n, generator=self.generator).tolist() if self.shuffle else list(range(self.n))
        chunks = self.n // self.batch_size  # as RepeatSampler: incomplete chunks are dropped
        cursor = 0
        for _ in range(chunks):
            chunk: list[int] = []
            looked = 0
            while len(chunk) < self.batch_size:
                if looked >= self.n:
                    raise DataError("every training prompt is quarantined; readmit some with rlvr quarantine")
                idx = order[cursor % self.n]
                cursor += 1
                looked += 1
                if not self.skip(idx):
                    chunk.append(idx)
            for _ in range(self.repeat_count):
                for idx in chunk:
                    yield from [idx] * self.mini_repeat_count

    def __len__(self) -> int:
        return (self.n // self.batch_size) * self.batch_size * self.mini_repeat_count * self.repeat_count
