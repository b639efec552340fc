"""Judge backends: any OpenAI-compatible chat endpoint, or a local transformers model.

A backend is a callable ``(messages) -> str`` (the reply text) that raises on
failure; timeouts, retries and concurrency are the :class:`~rlvr.verify.judge.judged.JudgedVerifier`'s.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol


class JudgeBackend(Protocol):
    """Sends chat messages to a judge model and returns its reply text."""

    def __call__(self, messages: list[dict[str, str]], *, timeout: float) -> str: ...


class JudgeUnavailable(RuntimeError):
    """The judge could not be reached or answered with an error (retried with backoff)."""


class HTTPJudge:
    """An OpenAI-compatible ``/chat/completions`` endpoint (vLLM, llama.cpp server, TGI, hosted APIs).

    Args:
        base_url: e.g. ``http://localhost:8000/v1`` (default: ``$RLVR_JUDGE_BASE_URL``).
        model: the served model name (default: ``$RLVR_JUDGE_MODEL``).
        api_key: bearer token (default: ``$RLVR_JUDGE_API_KEY``, else ``$OPENAI_API_KEY``; none is fine locally).
        temperature / max_tokens: sampling settings for the reply.
    """

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int = 256,
    ) -> None:
        import requests

        self.base_url = (base_url or os.environ.get("RLVR_JUDGE_BASE_URL") or "http://localhost:8000/v1").rstrip("/")
        self.model = model or os.environ.get("RLVR_JUDGE_MODEL") or "judge"
        key = api_key or os.environ.get("RLVR_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self.temperature, self.max_tokens = temperature, max_tokens
        self._local = threading.local()  # one HTTP session (connection pool) per thread
        self._headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        self._requests = requests

    def _session(self) -> Any:
        if not hasattr(self._local, "s"):
            self._local.s = self._requests.Session()
        return self._local.s

    def __call__(self, messages: list[dict[str, str]], *, timeout: float) -> str:
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        try:
            r = self._session().post(
                f"{self.base_url}/chat/completions", json=body, headers=self._headers, timeout=timeout
            )
        except self._requests.RequestException as e:
            raise JudgeUnavailable(f"judge unreachable: {type(e).__name__}: {e}") from None
        if r.status_code != 200:
            raise JudgeUnavailable(f"judge answered HTTP {r.status_code}: {r.text[:120]!r}")
        try:
            return str(r.json()["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            raise JudgeUnavailable(f"judge response is not a chat completion: {r.text[:120]!r}") from None

    def __repr__(self) -> str:
        return f"HTTPJudge({self.base_url!r}, model={self.model!r})"


class TransformersJudge:
    """A local transformers chat model as the judge (greedy decoding; one call at a time).

    Args:
        model: a causal LM, or a name/folder for :func:`rlvr.models.load.load_model`.
        tokenizer: its tokenizer (loaded with the model when ``model`` is a name).
        max_new_tokens: reply length limit.
        device: where a model loaded by name runs (default CPU).
    """

    def __init__(self, model: Any, tokenizer: Any = None, *, max_new_tokens: int = 128, device: Any = None) -> None:
        if isinstance(model, str):
            # a local judge only: the HTTP judge (and the verifier that asks it) loads without torch
            from rlvr.models.load import load_model  # noqa: PLC0415

            model, tokenizer = load_model(model, device=device)
        self.model, self.tokenizer, self.max_new_tokens = model, tokenizer, max_new_tokens
        self._lock = threading.Lock()  # generate() is not re-entrant on one model

    def __call__(self, messages: list[dict[str, str]], *, timeout: float) -> str:
        import torch  # noqa: PLC0415  (a local judge only, as above)
        from transformers import MaxTimeCriteria, StoppingCriteriaList

        with self._lock:
            ids = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
            input_ids = ids["input_ids"].to(self.model.device)
            mask = ids.get("attention_mask")
            mask = None if mask is None else mask.to(input_ids.device)
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=input_ids,
                    attention_mask=mask,
                    max_new_tokens=self.max_new_tokens,
                    do_sample=False,
                    stopping_criteria=StoppingCriteriaList([MaxTimeCriteria(timeout)]),
                    pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
                )
            return self.tokenizer.decode(out[0, input_ids.shape[1] :], skip_special_tokens=True)
