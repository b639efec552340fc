"""rlvr's engine's training forward: the log-probs of the sampled tokens under the policy, in
micro-batches.

Each token's log-prob is taken under the mask it was sampled with (a grammar's), at the sampling
temperature; from hidden states on tiles of the vocabulary (``algo.logprobs: chunked``, the default
on a GPU: never the ``[rows, tokens, vocab]`` logits) or from the completion positions' logits.
Whole groups go through the shared-prompt forward (each prompt computed once per group) when they
fit; micro-batches are ``algo.micro_batch`` rows, or as many as ``algo.token_budget`` allows.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import torch

from rlvr.algo.loss import token_logprobs
from rlvr.config import TrainConfig
from rlvr.decoding.constrain import masked_hidden_logprobs, masked_logprobs
from rlvr.models.budget import auto_token_budget, rows_within
from rlvr.models.device import matmul_precision
from rlvr.models.fast_decode import supports
from rlvr.models.grouped_forward import completion_hidden, completion_logits
from rlvr.models.logprobs import chunked_logprobs, decoder_hidden, head_logits
from rlvr.sampling import RolloutBatch

#: One micro-batch: its rows, and each group's first row when it runs the shared-prompt forward.
Part = tuple[torch.Tensor, torch.Tensor | None]


class Forward:
    """The training forward of ``model`` (see the module docstring).

    Args:
        cfg: the run configuration (``algo``, ``rollout.temperature``, ``model.autocast``).
        model: the policy.
        device: where it runs.
        fast: rlvr's lean paths are on (the shared-prompt forward among them).
        optimizer: the policy's optimizer (``token_budget: auto`` counts its state once it has one).
    """

    def __init__(self, cfg: TrainConfig, model: Any, device: torch.device, fast: bool, optimizer: Any) -> None:
        self.cfg, self.model, self.device, self.fast, self.optimizer = cfg, model, device, fast, optimizer
        # log-probs on vocabulary tiles (never the [rows, tokens, vocab] logits): by default on a GPU
        self.chunked = cfg.algo.logprobs == "chunked" or (
            cfg.algo.logprobs == "auto" and device.type in ("cuda", "xpu")
        )

    def autocast(self) -> Any:
        """The precision of the policy's matrix products (``model.autocast``)."""
        return matmul_precision(self.model, self.cfg.model.autocast)

    def token_logprobs(self, logits: torch.Tensor, completion: torch.Tensor, bits: torch.Tensor | None) -> torch.Tensor:
        """Log-probs of the sampled tokens; positions sampled under a constraint mask get it again."""
        temp = self.cfg.rollout.temperature
        return masked_logprobs(token_logprobs(logits, completion, temp), logits, completion, bits, temp)

    def hidden_logprobs(
        self, model: Any, hidden: torch.Tensor, completion: torch.Tensor, bits: torch.Tensor | None
    ) -> torch.Tensor:
        """:meth:`token_logprobs` from hidden states, on tiles of the vocabulary (``algo.logprobs``)."""
        temp = self.cfg.rollout.temperature
        logp = chunked_logprobs(model, hidden, completion, temp)
        return masked_hidden_logprobs(logp, hidden, completion, bits, lambda h: head_logits(model, h), temp)

    def _plain(
        self, model: Any, ids: torch.Tensor, mask: torch.Tensor, completion: torch.Tensor, bits: torch.Tensor | None
    ) -> torch.Tensor:
        tc = completion.shape[1]
        if self.chunked:
            return self.hidden_logprobs(model, decoder_hidden(model, ids, mask, tc), completion, bits)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=tc + 1).logits[:, :-1]
        return self.token_logprobs(logits, completion, bits)

    def parts(self, batch: RolloutBatch, live: torch.Tensor) -> list[Part]:
        """The micro-batches of one pass over the rows ``live`` (``[N]`` bool)."""
        g = batch.group_size
        grouped = self.fast and supports(self.model, lora=True)
        width = batch.prompt_ids.shape[1] + batch.completion_ids.shape[1]
        mb = self.cfg.algo.micro_batch or rows_within(self._budget(), width, live.numel(), g if grouped else None)
        if grouped and mb % g == 0:
            groups = live.view(-1, g).any(1).nonzero().squeeze(-1)
            chunks = [groups[i : i + mb // g] for i in range(0, len(groups), mb // g)]
            return [((c[:, None] * g + torch.arange(g, device=c.device)).reshape(-1), c * g) for c in chunks]
        rows = live.nonzero().squeeze(-1)
        return [(rows[i : i + mb], None) for i in range(0, len(rows), mb)]

    def _budget(self) -> int | None:
        """Tokens per micro-batch (``algo.token_budget``; ``auto`` measured once, at the first pass)."""
        tb = self.cfg.algo.token_budget
        return self._auto_budget if tb == "auto" else tb

    @cached_property
    def _auto_budget(self) -> int | None:
        bf16 = self.cfg.model.autocast == "bf16"
        return auto_token_budget(self.model, self.device, bf16, optimizer_ready=bool(self.optimizer.state))

    def rows(
        self, batch: RolloutBatch, sl: torch.Tensor, prompt_rows: torch.Tensor | None, model: Any = None
    ) -> torch.Tensor:
        """``[len(sl), Tc]`` log-probs of rows ``sl``'s sampled tokens under their sampling masks: the
        shared-prompt forward when ``prompt_rows`` names each group's first row, else the model's own
        (``model``: another one, the reference)."""
        comp = batch.completion_ids[sl]
        bits = batch.bitmask[sl] if batch.bitmask is not None else None
        if prompt_rows is not None and model is None:
            shared = (batch.prompt_ids[prompt_rows], batch.prompt_mask[prompt_rows], comp, batch.group_size)
            lengths = batch.completion_mask[sl].sum(1)
            if self.chunked:
                return self.hidden_logprobs(self.model, completion_hidden(self.model, *shared, lengths), comp, bits)
            return self.token_logprobs(completion_logits(self.model, *shared, lengths), comp, bits)
        ids = torch.cat([batch.prompt_ids[sl], comp], 1)
        mask = torch.cat([batch.prompt_mask[sl], batch.completion_mask[sl]], 1)
        return self._plain(model if model is not None else self.model, ids, mask, comp, bits)

    @torch.no_grad()
    def logprobs(self, batch: RolloutBatch) -> torch.Tensor:
        """``[N, Tc]`` the log-probs of every sampled token as the loss computes them, without
        gradient; 0 outside the completion mask."""
        out = torch.zeros(batch.completion_ids.shape, device=self.device)
        everything = torch.ones(batch.completion_ids.shape[0], dtype=torch.bool, device=self.device)
        was = self.model.training
        self.model.train()  # the loss's own mode (dropout as it trains)
        try:
            for sl, prompt_rows in self.parts(batch, everything):
                with self.autocast():
                    out[sl] = self.rows(batch, sl, prompt_rows).float()
        finally:
            self.model.train(was)
        return out * batch.completion_mask.to(out.device)
