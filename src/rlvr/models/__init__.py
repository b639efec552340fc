"""Models: a tiny causal LM built from a config (tests, demo), named and local models loaded, devices."""

from rlvr.models.device import resolve_device
from rlvr.models.fast_decode import FastDecoder, supports
from rlvr.models.load import NAMED, load_for_inference, load_model, materialize_named
from rlvr.models.tiny import build_model, build_tokenizer

__all__ = [
    "NAMED",
    "FastDecoder",
    "build_model",
    "build_tokenizer",
    "load_for_inference",
    "load_model",
    "materialize_named",
    "resolve_device",
    "supports",
]
