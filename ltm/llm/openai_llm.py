"""``OpenAICompatibleLLM``: chat completions on any OpenAI-compatible server through the ``openai`` client.

Works with OpenAI, vLLM, Ollama (``/v1``) and llama.cpp servers: set the base URL, the model and, when the
server wants one, a key (local servers get a placeholder key, since the client insists on one).

Retries are the client's own (``max_retries``): connection errors, timeouts, HTTP 408/409/429 and 5xx are
retried with exponential backoff and jitter, honouring the server's ``Retry-After``; other HTTP errors (bad
key, unknown model) fail at once. :func:`translate_openai_error` is the one place where what still fails
becomes an ltm error: a server that stays unreachable -> :class:`~ltm.errors.BackendUnavailable`, a refused
request -> :class:`~ltm.errors.LLMError`; an answer that is not a chat completion with text -> ``LLMError``.
"""

from __future__ import annotations

import ssl
from typing import Any

import openai

from ltm.config import Settings
from ltm.errors import BackendUnavailable, ConfigError, LLMError, LTMError

__all__ = ["OpenAICompatibleLLM", "is_transient", "translate_openai_error"]

_PLACEHOLDER_KEY = "not-needed"  # local servers ignore the key; the client refuses to start without one


def is_transient(exc: BaseException) -> bool:
    """True when the ``openai`` client retries ``exc`` (its rule): connection, timeout, 408/409/429, 5xx."""
    if isinstance(exc, openai.APIConnectionError | openai.APITimeoutError):  # timeout is a connection error too
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def translate_openai_error(exc: Exception, service: str, attempts: int | None = None) -> LTMError:
    """The ltm error for a failed ``openai`` call to ``service`` after ``attempts`` tries (raise it ``from exc``).

    Transient failures the client already retried -> ``BackendUnavailable``; refusals (bad key, unknown model,
    any other HTTP error) and answers the client cannot read -> ``LLMError``.
    """
    detail = f"{type(exc).__name__}: {exc}"
    if is_transient(exc):
        tries = f" after {attempts} attempt(s)" if attempts is not None else ""
        return BackendUnavailable(
            f"{service} failed{tries}: {detail}; is the server up and the timeout long "
            "enough? (LTM_LLM_TIMEOUT, LTM_LLM_MAX_RETRIES)"
        )
    if isinstance(exc, openai.APIStatusError):
        return LLMError(f"{service} refused the request: {detail}; check the API key, the model name and the base URL")
    return LLMError(f"{service} failed: {detail}; check that the server speaks the OpenAI API")


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
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        if not model:
            raise ConfigError("OpenAICompatibleLLM needs a model name: set llm_model (LTM_LLM_MODEL)")
        if max_retries < 0 or timeout <= 0:
            raise ConfigError("timeout must be > 0 and max_retries >= 0")
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._key = api_key or _PLACEHOLDER_KEY
        self._client = openai.OpenAI(base_url=base_url, api_key=self._key, timeout=timeout, max_retries=max_retries)
        self._tls_context: ssl.SSLContext | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> OpenAICompatibleLLM:
        """From ``openai_base_url``, ``openai_api_key``, ``llm_model``, ``llm_timeout``, ``llm_max_retries``."""
        options: dict[str, Any] = {
            "model": settings.llm_model,
            "base_url": settings.openai_base_url,
            "api_key": settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
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

    def _failure(self, exc: Exception) -> LTMError:
        return translate_openai_error(exc, repr(self), self.max_retries + 1 if is_transient(exc) else 1)

    # -- the two calls (the client retries) ----------------------------------------------------------------

    def ask(self, prompt: str, system: str | None = None) -> str:
        request = self._request(prompt, system)
        try:
            response = self._client.chat.completions.create(**request)
        except Exception as exc:  # the client's errors, and whatever its parsing of a broken answer raises
            raise self._failure(exc) from exc
        return self._answer(response)

    async def aask(self, prompt: str, system: str | None = None) -> str:
        request = self._request(prompt, system)
        # one async client per call: an async client is bound to the event loop it ran on, and callers
        # (asyncio.run in scripts, several loops in threads) do not share one
        client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._key,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=openai.DefaultAsyncHttpxClient(verify=self._tls()),
        )
        try:
            response = await client.chat.completions.create(**request)
        except Exception as exc:
            raise self._failure(exc) from exc
        finally:
            await client.close()
        return self._answer(response)

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
