"""``OpenAICompatibleLLM``: chat completions on any OpenAI-compatible server through the ``openai`` client.

Works with OpenAI, vLLM, Ollama (``/v1``) and llama.cpp servers: set the base URL, the model and, when the
server wants one, a key (local servers get a placeholder key, since the client insists on one).

Retries are ltm's own (the client's are switched off) so the policy is explicit: connection errors, timeouts,
HTTP 408/409/429 and 5xx are retried ``max_retries`` times with exponential backoff (``backoff`` seconds,
doubling, capped at 8 s); other HTTP errors (bad key, unknown model) fail at once. Whatever still fails, and
any answer that is not a chat completion with text, raises :class:`~ltm.errors.LLMError`.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import Any

import openai

from ltm.config import Settings
from ltm.errors import ConfigError, LLMError

__all__ = ["OpenAICompatibleLLM", "classify_openai_error"]

_PLACEHOLDER_KEY = "not-needed"  # local servers ignore the key; the client refuses to start without one


def classify_openai_error(exc: BaseException) -> bool:
    """True when ``exc`` is worth retrying (transient), False when retrying cannot help."""
    if isinstance(exc, openai.APIConnectionError | openai.APITimeoutError):  # timeout is a connection error too
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def backoff_delays(retries: int, base: float, cap: float = 8.0) -> list[float]:
    """The sleeps between attempts: ``base``, ``2*base``, ... capped at ``cap``; one per retry."""
    return [min(cap, base * 2**i) for i in range(retries)]


class OpenAICompatibleLLM:
    """The :class:`~ltm.llm.base.LLM` protocol on ``POST {base_url}/chat/completions``."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        if not model:
            raise ConfigError("OpenAICompatibleLLM needs a model name: set llm_model (LTM_LLM_MODEL)")
        if max_retries < 0 or timeout <= 0 or backoff < 0:
            raise ConfigError("timeout must be > 0, max_retries >= 0 and backoff >= 0")
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._key = api_key or _PLACEHOLDER_KEY
        self._client = openai.OpenAI(base_url=base_url, api_key=self._key, timeout=timeout, max_retries=0)
        self._tls_context: ssl.SSLContext | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> OpenAICompatibleLLM:
        """From ``openai_base_url``, ``openai_api_key``, ``llm_model``, ``llm_timeout``, ``llm_max_retries``."""
        options: dict[str, Any] = {
            "model": settings.llm_model,
            "base_url": settings.openai_base_url,
            "api_key": settings.openai_api_key,
            "timeout": settings.llm_timeout,
            "max_retries": settings.llm_max_retries,
            **overrides,
        }
        return cls(**options)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAICompatibleLLM(model={self.model!r}, base_url={self.base_url!r})"

    # -- shared logic: the request, the answer, the failure --------------------------------------------------

    def _request(self, prompt: str, system: str | None) -> dict[str, Any]:
        if not isinstance(prompt, str):
            raise LLMError(f"prompt must be str, got {type(prompt).__name__}")
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        return request

    def _answer(self, response: Any) -> str:
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError, KeyError) as exc:
            raise LLMError(f"{self!r} returned a malformed completion ({exc}); check the server") from exc
        if not isinstance(content, str):
            raise LLMError(f"{self!r} returned no text (got {type(content).__name__}); check the server and model")
        return content

    def _failure(self, exc: Exception, attempt: int) -> float:
        """The delay before the next attempt, or raise ``LLMError`` when there is none."""
        if isinstance(exc, LLMError):
            raise exc
        delays = backoff_delays(self.max_retries, self.backoff)
        if classify_openai_error(exc) and attempt < len(delays):
            return delays[attempt]
        tries = attempt + 1
        hint = "is the server up and the timeout long enough?" if classify_openai_error(exc) else (
            "check the API key, the model name and the base URL"
        )
        raise LLMError(f"{self!r} failed after {tries} attempt(s): {type(exc).__name__}: {exc}; {hint}") from exc

    # -- the two I/O loops -------------------------------------------------------------------------------

    def ask(self, prompt: str, system: str | None = None) -> str:
        request = self._request(prompt, system)
        attempt = 0
        while True:
            try:
                return self._answer(self._client.chat.completions.create(**request))
            except Exception as exc:
                time.sleep(self._failure(exc, attempt))
            attempt += 1

    async def aask(self, prompt: str, system: str | None = None) -> str:
        request = self._request(prompt, system)
        # one async client per call: an async client is bound to the event loop it ran on, and callers
        # (asyncio.run in scripts, several loops in threads) do not share one
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self._key, timeout=self.timeout, max_retries=0,
                                    http_client=openai.DefaultAsyncHttpxClient(verify=self._tls()))
        try:
            attempt = 0
            while True:
                try:
                    return self._answer(await client.chat.completions.create(**request))
                except Exception as exc:
                    await asyncio.sleep(self._failure(exc, attempt))
                attempt += 1
        finally:
            await client.close()

    def _tls(self) -> ssl.SSLContext:
        """One TLS context per instance: building it (loading the CA bundle) costs ~50 ms, a call costs ~1 ms."""
        if self._tls_context is None:
            try:
                import certifi

                self._tls_context = ssl.create_default_context(cafile=certifi.where())
            except ImportError:  # httpx brings certifi; the system store is the fallback
                self._tls_context = ssl.create_default_context()
        return self._tls_context

    def close(self) -> None:
        """Close the HTTP connections of the sync client (async calls close theirs as they finish)."""
        self._client.close()
