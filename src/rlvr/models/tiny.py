"""A tiny causal LM and a character-level tokenizer, built locally (no model hub).

The tokenizer is the ``tokenizers`` library's WordLevel model over printable ASCII
(each character one token), wrapped in ``PreTrainedTokenizerFast`` with pad / bos /
eos / unk and a small chat template (``Q:{user}=`` then the assistant turn), so
both plain and conversational prompts work. The template writes no space after ``Q:``:
that is the text the shared benchmark's model was trained on (its reloaded tokenizer
drops the space), and a warmed-up model without it improved about three times faster
under GRPO in our runs. The model is a Qwen2 or Llama config
made ``from_config``. This matches ``../shared/bench/trainer/make_tiny.py``, whose
warmed-up checkpoint the trainer benchmark starts from.
"""

from __future__ import annotations

import string
from typing import TYPE_CHECKING, Literal

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
# the template writes <bos> itself, as Llama's does: engines that tokenize the rendered chat without
# adding specials (TRL, vLLM) then see the same ids as rlvr's own ``encode``
# Tool calls render in the Hermes markup rlvr's engine reads (compact JSON), the turn that makes them
# ends with <eos> and a tool's result follows as <tool_response>...</tool_response>: what TRL's tool
# loop needs (it renders the conversation, and parses each turn back with RESPONSE_TEMPLATE).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'user' %}Q:{{ m['content'] }}="
    "{% elif m['role'] == 'assistant' %}{{ m['content'] }}"
    "{% for c in (m['tool_calls'] if m['tool_calls'] is defined and m['tool_calls'] else []) %}"
    "<tool_call>{{ {'name': c['function']['name'], 'arguments': c['function']['arguments']}"
    " | tojson(separators=(',', ':')) }}</tool_call>{% endfor %}<eos>"
    "{% elif m['role'] == 'tool' %}<tool_response>{{ m['content'] }}</tool_response>"
    "{% endif %}{% endfor %}"
)
#: transformers' response template for :data:`CHAT_TEMPLATE` (``tokenizer.parse_response``): an
#: assistant turn starts after the prompt's ``=`` or a tool's result; calls are JSON in ``<tool_call>``.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": ["=", "</tool_response>"],
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<eos>", "content": "text"},
    },
}


def build_tokenizer(max_length: int = 256) -> PreTrainedTokenizerFast:
    """A character-level tokenizer over printable ASCII plus newline."""
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
    )
    from transformers import PreTrainedTokenizerFast

    chars = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"]
    vocab = {tok: i for i, tok in enumerate(SPECIALS + chars)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
        model_max_length=max_length,
    )
    hf.chat_template = CHAT_TEMPLATE
    hf.response_template = RESPONSE_TEMPLATE
    return hf


def build_model(
    tokenizer: PreTrainedTokenizerFast,
    *,
    arch: Literal["qwen2", "llama"] = "qwen2",
    hidden: int = 128,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int | None = None,
    ffn: int | None = None,
    max_positions: int = 1024,
    seed: int = 0,
) -> PreTrainedModel:
    """A randomly initialised causal LM sized for CPU tests (538k parameters by default)."""
    from transformers import (
        AutoModelForCausalLM,
        GenerationConfig,
        LlamaConfig,
        Qwen2Config,
    )

    torch.manual_seed(seed)
    common = {
        "vocab_size": len(tokenizer),
        "hidden_size": hidden,
        "intermediate_size": ffn or 4 * hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads or heads,
        "max_position_embeddings": max_positions,
        "tie_word_embeddings": True,
        "rope_theta": 10000.0,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    cfg = Qwen2Config(**common) if arch == "qwen2" else LlamaConfig(**common)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.generation_config = GenerationConfig(
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id
    )
    return model
