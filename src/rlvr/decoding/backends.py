"""Grammar backends behind :class:`rlvr.decoding.constrain.Constrainer`: xgrammar first, llguidance
as the fallback. Both fill the same packed ``int32`` token bitmask, so the rest of rlvr (the
masks kept with rollouts, the masked log-probs in training) does not know which one ran.

A backend compiles a :class:`rlvr.decoding.grammars.GrammarSpec` for one tokenizer and makes
matchers (one per row); ``fill`` writes the allowed-token masks of several matchers, ``accept``
advances them by one token each, ``finished`` says a matcher's grammar is complete.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import torch

from rlvr.decoding.grammars import AnswerKind, GrammarSpec, answer_spec, ebnf_literal, full_spec
from rlvr.errors import ConfigError


def xgrammar_grammar(spec: GrammarSpec) -> Any:
    """The xgrammar ``Grammar`` of a spec."""
    import xgrammar as xgr

    if spec.body is not None:
        return xgr.Grammar.from_ebnf(spec.ebnf())
    parts = []
    if spec.head:
        parts.append(xgr.Grammar.from_ebnf(spec.head.replace(" <ANSWER>", "")))
    parts.append(
        xgr.Grammar.from_json_schema(json.dumps(spec.json_schema))
        if spec.json_schema
        else xgr.Grammar.builtin_json_grammar()
    )
    parts.append(xgr.Grammar.from_ebnf(f"root ::= {ebnf_literal(spec.close)}"))
    return xgr.Grammar.concat(*parts)


class XGrammarBackend:
    """xgrammar (the engine behind vLLM's and SGLang's structured output), batched."""

    name = "xgrammar"

    def __init__(self, tokenizer: Any, vocab: int, spec: GrammarSpec) -> None:
        import xgrammar as xgr

        self.xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab)
        self.compiled = xgr.GrammarCompiler(info).compile_grammar(xgrammar_grammar(spec))
        self.stop_ids = [int(i) for i in info.stop_token_ids] or [tokenizer.eos_token_id]
        self.vocab = vocab
        self.batch = xgr.BatchGrammarMatcher(max_threads=1)  # the CPU is shared with torch

    def matcher(self) -> Any:
        return self.xgr.GrammarMatcher(self.compiled)

    def fill(self, matchers: list[Any]) -> torch.Tensor:
        sub = self.xgr.allocate_token_bitmask(len(matchers), self.vocab)
        self.batch.batch_fill_next_token_bitmask(matchers, sub)
        return sub

    def accept(self, matchers: list[Any], tokens: list[int]) -> list[bool]:
        return list(self.batch.batch_accept_token(matchers, tokens))

    def accept_string(self, matcher: Any, text: str) -> bool:
        return bool(matcher.accept_string(text))

    def fork(self, matcher: Any) -> Any:
        return matcher.fork()

    def forced(self, matcher: Any) -> str:
        """The continuation the grammar forces from here ('' when it allows a choice)."""
        return str(matcher.find_jump_forward_string())

    def forced_tokens(self, matcher: Any) -> list[int]:
        """That continuation as tokens (the last one left out when a longer token could extend it)."""
        return [int(t) for t in matcher.find_jump_forward_tokens()]

    def finished(self, matcher: Any) -> bool:
        return bool(matcher.is_completed() or matcher.is_terminated())

    def apply(self, logits: torch.Tensor, bits: torch.Tensor) -> None:
        self.xgr.apply_token_bitmask_inplace(logits, bits.to(logits.device))


class _TokenList:
    """What llguidance's ``TokenizerWrapper`` reads, for tokenizers its Rust loader does not know."""

    def __init__(self, tokenizer: Any, vocab: int) -> None:
        special = set(tokenizer.all_special_ids)
        self.eos_token_id = tokenizer.eos_token_id
        self.bos_token_id = tokenizer.bos_token_id
        self.special_token_ids = sorted(special)
        self.tokens = [
            b"" if i in special or i >= len(tokenizer) else tokenizer.decode([i]).encode() for i in range(vocab)
        ]
        self._tok = tokenizer

    def __call__(self, text: str | bytes) -> list[int]:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        return self._tok.encode(text, add_special_tokens=False)


class LLGuidanceBackend:
    """llguidance (guidance's engine), the fallback, batched through its ``LLExecutor``."""

    name = "llguidance"

    def __init__(self, tokenizer: Any, vocab: int, spec: GrammarSpec) -> None:
        import llguidance
        import llguidance.hf
        import llguidance.torch as lt

        self.ll, self.lt, self.vocab, self.tokenizer = llguidance, lt, vocab, tokenizer
        try:
            self.tok = llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab)
        except (ValueError, TypeError):  # e.g. a character-level decoder its loader does not model
            self.tok = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_TokenList(tokenizer, vocab)), n_vocab=vocab)
        if "think ::=" in spec.head:
            # llguidance lexes the reasoning as one greedy lexeme and then refuses a closing tag forced
            # into it; xgrammar does not
            raise ConfigError(
                "a constrained reasoning segment (decoding.constrain: full with a think tag) needs "
                "xgrammar; with llguidance use decoding.constrain: answer"
            )
        if spec.body is not None:
            self.grammar = llguidance.grammar_from("gbnf", spec.ebnf())
        elif spec.head:
            raise ConfigError(
                "JSON answers after a fixed opening (decoding.constrain: full) need xgrammar; "
                "with llguidance use decoding.constrain: answer"
            )
        else:
            schema = json.dumps(spec.json_schema or {})
            self.grammar = llguidance.LLMatcher.grammar_from_lark(
                f"start: json_body {ebnf_literal(spec.close)}\njson_body: %json {schema}"
            )
        self.stop_ids = [tokenizer.eos_token_id]
        self.executor = llguidance.LLExecutor(1)  # one worker thread: the CPU is shared with torch
        # built once (and refused here, not mid-rollout); each row gets a copy: ~1 ms to build, ~2 us to copy
        self._fresh = self.ll.LLMatcher(self.tok, self.grammar)
        if self._fresh.is_error():
            raise ConfigError(f"llguidance cannot use this grammar: {self._fresh.get_error()}")

    def matcher(self) -> Any:
        return self._fresh.deep_copy()

    def fill(self, matchers: list[Any]) -> torch.Tensor:
        sub = self.lt.allocate_token_bitmask(len(matchers), self.vocab)
        self.lt.fill_next_token_bitmask_par(self.executor, [(m, k) for k, m in enumerate(matchers)], sub)
        return sub

    def accept(self, matchers: list[Any], tokens: list[int]) -> list[bool]:
        return [bool(ok) for ok in self.lt.consume_token_par(self.executor, list(zip(matchers, tokens)))]

    def accept_string(self, matcher: Any, text: str) -> bool:
        # validated first: a refused token would put the matcher in its error state (and warn)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if matcher.validate_tokens(ids) != len(ids):
            return False
        return all(matcher.consume_token(t) for t in ids)

    def fork(self, matcher: Any) -> Any:
        return matcher.deep_copy()

    def forced(self, matcher: Any) -> str:
        return bytes(matcher.compute_ff_bytes()).decode("utf-8", "ignore")

    def forced_tokens(self, matcher: Any) -> list[int]:
        return [int(t) for t in matcher.compute_ff_tokens()]

    def finished(self, matcher: Any) -> bool:
        return bool(matcher.is_accepting() or matcher.is_stopped())

    def apply(self, logits: torch.Tensor, bits: torch.Tensor) -> None:
        self.lt.apply_token_bitmask_inplace(logits, bits.to(logits.device))


BACKENDS = {"xgrammar": XGrammarBackend, "llguidance": LLGuidanceBackend}


def make_backend(name: str, tokenizer: Any, vocab: int, spec: GrammarSpec) -> Any:
    """The backend called ``name``; ``auto`` takes xgrammar when it is installed, else llguidance."""

    if name == "auto":
        name = next((n for n in BACKENDS if importlib.util.find_spec(n) is not None), "")
        if not name:
            raise ConfigError(
                "constrained decoding needs xgrammar (pip install --no-deps xgrammar apache-tvm-ffi) or llguidance"
            )
    if name not in BACKENDS:
        raise ConfigError(f"unknown grammar backend {name!r}; choose auto, xgrammar or llguidance")
    return BACKENDS[name](tokenizer, vocab, spec)


def answer_grammar(kind: AnswerKind, close: str, *, schema: dict[str, Any] | None = None, max_chars: int = 200) -> Any:
    """The xgrammar ``Grammar`` of an answer segment (see :func:`answer_spec`)."""
    return xgrammar_grammar(answer_spec(kind, close, schema=schema, max_chars=max_chars))


def full_grammar(
    kind: AnswerKind,
    *,
    answer_tag: str = "answer",
    think_tag: str | None = "think",
    schema: dict[str, Any] | None = None,
    max_chars: int = 200,
) -> Any:
    """The xgrammar ``Grammar`` of the whole output (see :func:`full_spec`)."""
    return xgrammar_grammar(
        full_spec(kind, answer_tag=answer_tag, think_tag=think_tag, schema=schema, max_chars=max_chars)
    )
