"""The LLM protocol: the OpenAI-compatible client against the local server, the llama-index adapter, resolution."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

from ltm.config import Settings
from ltm.errors import BackendUnavailable, ConfigError, LLMError
from ltm.files.llm import resolve as resolve_files_llm
from ltm.llm.base import LLM, LlamaIndexLLM, Summarizer, parse_yes_no, resolve_llm
from ltm.llm.extractive import ExtractiveLLM
from ltm.llm.openai_llm import OpenAICompatibleLLM
from ltm.llm.tasks import ask_related, ask_title, summarize_text
from tests.support.openai_server import OpenAIServer


def make(server: OpenAIServer, **kw: Any) -> OpenAICompatibleLLM:
    options: dict[str, Any] = {"model": "test", "base_url": server.base_url, "timeout": 2.0, "max_retries": 2, **kw}
    return OpenAICompatibleLLM(**options)


def test_ask_and_aask(openai_server: OpenAIServer) -> None:
    llm = make(openai_server)
    assert llm.ask("Lily is a girl. Lily is a girl.", system="Summarize in less than 10 words.") == "Lily is a girl."
    assert asyncio.run(llm.aask("hello there")) == "echo: hello there"
    assert openai_server.chat_calls == 2
    body = openai_server.requests[0]["body"]
    assert body["model"] == "test" and body["messages"][0]["role"] == "system"
    assert isinstance(llm, LLM)


def test_server_errors_are_retried_then_backend_unavailable(openai_server: OpenAIServer) -> None:
    llm = make(openai_server, max_retries=2)  # the openai client's own retries
    openai_server.fail(2)
    assert llm.ask("hello") == "echo: hello"  # two failures, then the third attempt answers
    openai_server.reset()
    openai_server.fail(3)
    with pytest.raises(BackendUnavailable, match="3 attempt"):
        llm.ask("hello")
    assert len(openai_server.requests) == 3
    openai_server.reset()
    openai_server.fail(3, status=429)  # rate limited: retried too, async as well
    with pytest.raises(BackendUnavailable, match="RateLimitError"):
        asyncio.run(llm.aask("hello"))
    assert len(openai_server.requests) == 3


def test_client_errors_are_not_retried(openai_server: OpenAIServer) -> None:
    openai_server.fail(1, status=401)
    with pytest.raises(LLMError, match="API key"):
        make(openai_server).ask("hello")
    assert len(openai_server.requests) == 1


def test_stall_times_out_into_backend_unavailable(openai_server: OpenAIServer) -> None:
    llm = make(openai_server, timeout=0.3, max_retries=1)
    openai_server.stall(2, seconds=1.0)
    with pytest.raises(BackendUnavailable, match="2 attempt"):
        asyncio.run(llm.aask("hello"))


@pytest.mark.parametrize("kind", ["json", "shape"])
def test_malformed_answer_is_llm_error(openai_server: OpenAIServer, kind: str) -> None:
    openai_server.malformed(5, kind=kind)
    with pytest.raises(LLMError):
        make(openai_server, max_retries=0).ask("hello")


def test_from_settings_and_resolve(openai_server: OpenAIServer) -> None:
    settings = Settings(llm="openai", openai_base_url=openai_server.base_url, llm_model="m", llm_max_retries=0)
    llm = resolve_llm(settings)
    assert isinstance(llm, OpenAICompatibleLLM) and llm.model == "m" and llm.max_retries == 0
    assert "key" not in repr(llm).lower()
    assert isinstance(resolve_llm(Settings()), ExtractiveLLM)
    with pytest.raises(ConfigError):
        resolve_llm(Settings(), llm=object())  # type: ignore[arg-type]  # the wrong type is the point


class _Upper(CustomLLM):
    """A deterministic llama-index LLM (no model): answers the prompt upper-cased."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="upper")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if "explode" in prompt:
            raise RuntimeError("model crashed")
        return CompletionResponse(text=prompt.upper())

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield self.complete(prompt)


def test_llama_index_adapter() -> None:
    llm = resolve_llm(Settings(), llm=_Upper())
    assert isinstance(llm, LlamaIndexLLM)
    assert llm.ask("hi", system="sys") == "SYS\n\nHI"
    assert asyncio.run(llm.aask("hi")) == "HI"
    with pytest.raises(LLMError, match="model crashed"):
        llm.ask("explode")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("YES", True),
        ("true.", True),
        ("Yes, both are fruit", True),
        ("NO", False),
        ("NOT TRUE", False),
        ("False", False),
        ("not related", False),
    ],
)
def test_parse_yes_no(answer: str, expected: bool) -> None:
    assert parse_yes_no(answer) is expected


def test_parse_yes_no_refuses_prose() -> None:
    with pytest.raises(LLMError):
        parse_yes_no("It is hard to say, maybe TRUE")


class _OfflineSummarizer:
    """A caller's own offline summarizer: the Summarizer protocol, never prompted."""

    def ask(self, prompt: str, system: str | None = None) -> str:
        raise AssertionError("an offline summarizer is called directly, not prompted")

    async def aask(self, prompt: str, system: str | None = None) -> str:
        raise AssertionError("an offline summarizer is called directly, not prompted")

    def summarize(self, text: str, max_words: int = 200) -> str:
        return "a short summary"

    def title(self, text: str, max_words: int = 5) -> str:
        return "A Title"

    def is_related(self, text1: str, text2: str) -> bool:
        return True

    def rewrite(self, sentence: str, context: str) -> str:
        return sentence


def test_offline_summarizers_are_recognised_by_protocol(openai_server: OpenAIServer) -> None:
    offline = _OfflineSummarizer()
    assert isinstance(offline, Summarizer) and isinstance(ExtractiveLLM(), Summarizer)
    assert not isinstance(make(openai_server), Summarizer)  # a real LLM is prompted
    run = asyncio.run(summarize_text("many words here " * 100, offline, max_words=10))
    assert run.summary == "a short summary" and run.extractive and run.calls == 0
    assert asyncio.run(ask_title("text", offline)) == "A Title"
    assert asyncio.run(ask_related("a", "b", offline)) is True
    with pytest.raises(ConfigError, match="real LLM"):  # writing memory needs a real model
        resolve_files_llm(offline, Settings(), "remember")
