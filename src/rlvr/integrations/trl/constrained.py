"""The answer grammar on TRL: sampling under it (rlvr's sampling loop where TRL's settings allow, else
TRL's ``generate`` with rlvr's logits processor), each row's masks kept, and the masks applied again
in TRL's forwards so old and new log-probs are of the same masked distribution; on TRL's vLLM path
the grammar becomes vLLM's structured output. Called by :class:`FailureAwareGRPOTrainer`'s overrides."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, cast

import torch
from transformers import LogitsProcessorList
from trl.models import unwrap_model_for_generation
from trl.trainer.utils import pad

from rlvr.algo.loss import token_logprobs
from rlvr.config import DecodingConfig
from rlvr.decoding.constrain import Constrainer, GrammarLogitsProcessor, unpack_bits
from rlvr.decoding.grammars import output_regex
from rlvr.errors import ConfigError
from rlvr.sampling import generate


def make_constrainer(trainer: Any, constrain: Any, tags: tuple[str | None, str]) -> Any:
    if constrain is None or (isinstance(constrain, DecodingConfig) and constrain.constrain == "none"):
        return None
    if not isinstance(constrain, DecodingConfig):
        return constrain  # a ready Constrainer

    d = constrain
    vocab = trainer.model.get_output_embeddings().weight.shape[0]
    return Constrainer(
        trainer.processing_class,
        vocab,
        mode=d.constrain,
        answer=d.answer,
        schema=d.json_schema,
        think_tag=tags[0],
        answer_tag=tags[1],
        reasoning_budget=d.reasoning_budget,
        answer_tokens=d.answer_tokens,
        max_chars=d.max_chars,
        backend=d.backend,
    )


def cut(
    trainer: Any,
    prompt_ids: list[list[int]],
    num_generations: int,
    ids: list[list[int]],
    lp: Any,
    bits: list[torch.Tensor | None],
) -> tuple[list[list[int]], Any, list[torch.Tensor | None]]:
    """The injected truncation (``rollout.truncation``): the rows it hits cut as a smaller budget
    would have ended them (no eos: TRL and the failure step read them as truncated)."""
    prompts = prompt_ids if len(prompt_ids) == len(ids) else [p for p in prompt_ids for _ in range(num_generations)]
    eos = set(trainer.eos_token_ids)
    ids, bits = list(ids), list(bits)
    lp = list(lp) if lp is not None else None
    for i, (p, c) in enumerate(zip(prompts, ids)):
        keep = trainer.truncation.length(p, c, eos)
        if keep is None:
            continue
        ids[i] = list(c[:keep])
        if lp is not None:
            lp[i] = list(lp[i][:keep])
        if bits[i] is not None:
            bits[i] = cast(torch.Tensor, bits[i])[:keep]
    return ids, lp, bits


def lean_sampling(trainer: Any) -> bool:
    """TRL's sampling settings are ones rlvr's own loop has (temperature, top-p; it stops on TRL's stop ids):
    constrained rows are then drawn there (lean decoder, forced tokens jumped) instead of through
    ``generate`` with a logits processor, one call per token."""
    tok = trainer._tokenizer
    return (
        not trainer.top_k
        and trainer.min_p is None
        and trainer.repetition_penalty == 1.0
        and not trainer.args.generation_kwargs
        and tok.pad_token_id is not None
        and trainer.temperature > 0
    )


@contextlib.contextmanager
def _unwrapped(trainer: Any) -> Iterator[Any]:
    """TRL's model as it generates (gathered under ZeRO-3, full parameters under FSDP), no gradient."""
    ckpt: Any = trainer.args.gradient_checkpointing_kwargs  # transformers also allows a JSON string here
    with (
        unwrap_model_for_generation(
            trainer.model_wrapped,
            trainer.accelerator,
            gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
            generation_kwargs=trainer.generation_kwargs,
            gradient_checkpointing_kwargs=ckpt,
        ) as unwrapped,
        torch.no_grad(),
        trainer._dist.summon_full_params(trainer.model_wrapped, recurse=False),
    ):
        yield unwrapped


def constrained_generate(
    trainer: Any, prompt_ids: list[list[int]]
) -> tuple[list[list[int]], None, list[torch.Tensor | None]]:
    """Constrained sampling of TRL's rows; each row's masks are kept (one packed row per token).
    rlvr's sampling loop when :func:`lean_sampling`, else TRL's transformers ``generate`` with
    rlvr's grammar as a logits processor."""
    tok, device, multiple = trainer._tokenizer, trainer.accelerator.device, trainer.pad_to_multiple_of
    if lean_sampling(trainer):
        with _unwrapped(trainer) as unwrapped:
            # the global RNG, as generate() draws from: TRL's seeding makes it reproducible
            b = generate(
                unwrapped,
                tok,
                [list(p) for p in prompt_ids],
                group_size=1,
                max_new_tokens=trainer.max_completion_length,
                temperature=trainer.temperature,
                top_p=trainer.top_p,
                constrain=trainer.constrainer,
                jump=trainer.jump_forward,
                stop_ids=list(trainer.eos_token_ids),
            )
        lengths = b.completion_mask.sum(1).tolist()
        assert b.bitmask is not None
        return (
            [b.completion_ids[i, :n].tolist() for i, n in enumerate(lengths)],
            None,
            [b.bitmask[i, :n] for i, n in enumerate(lengths)],
        )
    prompts = [torch.tensor(p) for p in prompt_ids]
    ids = pad(prompts, padding_value=tok.pad_token_id, padding_side="left", pad_to_multiple_of=multiple)
    mask = pad([torch.ones_like(p) for p in prompts], padding_value=0, padding_side="left", pad_to_multiple_of=multiple)
    inputs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
    assert trainer.constrainer is not None  # constrained generation only runs with one
    proc = GrammarLogitsProcessor(trainer.constrainer, len(prompt_ids), trainer.max_completion_length)
    with _unwrapped(trainer) as unwrapped:
        out = unwrapped.generate(
            **inputs, generation_config=trainer.generation_config, logits_processor=LogitsProcessorList([proc])
        )
    completion = out[:, inputs["input_ids"].shape[1] :].cpu()
    eos = torch.tensor(trainer.eos_token_ids)
    masks = torch.stack(proc.masks, 1) if proc.masks else torch.full((len(prompt_ids), 0, 1), -1, dtype=torch.int32)
    rows: list[list[int]] = []
    bits: list[torch.Tensor | None] = []
    for i in range(completion.shape[0]):
        c = completion[i]
        ends = torch.isin(c, eos).nonzero()
        n = int(ends[0]) + 1 if len(ends) else len(c)
        rows.append(c[:n].tolist())
        bits.append(masks[i, :n])
    return rows, None, bits


def masked_logps(
    trainer: Any,
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    batch_size: int | None,
    compute_entropy: bool,
    bits: torch.Tensor,
) -> tuple[Any, Any, None]:
    """Per-token log-probs (and entropies) of the sampled tokens under their sampling masks."""
    bits = fit_bits(bits, logits_to_keep).to(input_ids.device)
    batch_size = batch_size or input_ids.shape[0]
    logps, ents = [], []
    for s in range(0, input_ids.shape[0], batch_size):
        ids, am = input_ids[s : s + batch_size], attention_mask[s : s + batch_size]
        with trainer.accelerator.autocast():
            logits = model(input_ids=ids, attention_mask=am, logits_to_keep=logits_to_keep + 1).logits[:, :-1]
        logits = logits.float() / trainer.temperature
        b = bits[s : s + batch_size]
        masked = (b != -1).any(-1)
        if bool(masked.any()):
            allowed = unpack_bits(b, logits.shape[-1]) | ~masked[..., None]
            logits = logits.masked_fill(~allowed, float("-inf"))
        comp = ids[:, -logits_to_keep:]
        logps.append(token_logprobs(logits, comp, 1.0))
        if compute_entropy:
            lp = torch.log_softmax(logits, -1)
            ents.append(-(lp.exp() * lp.nan_to_num(neginf=0.0)).sum(-1))
    return torch.cat(logps), (torch.cat(ents) if compute_entropy else None), None


def stack_bits(bits: list[torch.Tensor | None], length: int, words: int) -> torch.Tensor:
    """Rows' masks ``[T_i, W]`` as one ``[N, length, W]`` tensor (-1: unmasked)."""
    out = torch.full((len(bits), max(length, 1), words), -1, dtype=torch.int32)
    for i, b in enumerate(bits):
        if b is not None and len(b):
            n = min(len(b), out.shape[1])
            out[i, :n] = b[:n]
    return out


def fit_bits(bits: torch.Tensor, length: int) -> torch.Tensor:
    if bits.shape[1] >= length:
        return bits[:, :length]
    pad = torch.full((bits.shape[0], length - bits.shape[1], bits.shape[2]), -1, dtype=bits.dtype)
    return torch.cat([bits, pad], 1)


def vllm_structured_output(args: Any, decoding: DecodingConfig, tags: tuple[str | None, str]) -> None:
    """On TRL's vLLM path the answer grammar goes to vLLM as structured output (a regex)."""
    if decoding.constrain != "full":
        raise ConfigError(
            f"decoding.constrain: {decoding.constrain} with vLLM: vLLM's structured output takes one "
            "pattern for the whole output, so only 'full' can be given to it; use full, or TRL's "
            "transformers generation (use_vllm: false) for the lazy answer trigger"
        )

    if args.vllm_structured_outputs_regex is None:
        args.vllm_structured_outputs_regex = output_regex(decoding.answer, think_tag=tags[0], answer_tag=tags[1])
