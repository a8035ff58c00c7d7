"""The one LLM protocol of ltm, the llama-index adapter and :func:`resolve_llm`.

Everything in ltm that needs a language model (BrainMemory summaries, titles, relatedness, rewrites;
experience distillation) calls ``ask(prompt, system=None) -> str`` or its async twin ``aask``. Implementations:

- :class:`~ltm.llm.openai_llm.OpenAICompatibleLLM`: any OpenAI-compatible server (OpenAI, vLLM, Ollama,
  llama.cpp) through the ``openai`` client and its retries; an unreachable server raises ``BackendUnavailable``,
  a refused request or an unusable answer ``LLMError``;
- :class:`LlamaIndexLLM`: wraps any llama-index LLM (``complete``/``acomplete``, or ``chat``/``achat`` for chat
  models, so the system prompt goes in a system message);
- :class:`~ltm.llm.extractive.ExtractiveLLM`: offline and extractive, used when no LLM is configured.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from ltm.config import Settings
from ltm.errors import ConfigError, LLMError

if TYPE_CHECKING:  # llama-index loads slowly: only its type is named here
    from llama_index.core.base.llms.base import BaseLLM

__all__ = ["LLM", "LLMLike", "LlamaIndexLLM", "Summarizer", "parse_yes_no", "resolve_llm"]


@runtime_checkable
class LLM(Protocol):
    """A text-in, text-out model. ``system`` is the system prompt (None: none)."""

    def ask(self, prompt: str, system: str | None = None) -> str: ...

    async def aask(self, prompt: str, system: str | None = None) -> str: ...


@runtime_checkable
class Summarizer(LLM, Protocol):
    """An offline, extractive stand-in for an LLM (:class:`~ltm.llm.extractive.ExtractiveLLM`): the LLM tasks
    call these methods directly instead of prompting, and features that need a real model refuse it.

    Recognised with ``isinstance(llm, Summarizer)``: having all four methods is what makes one.
    """

    def summarize(self, text: str, max_words: int = 200) -> str: ...

    def title(self, text: str, max_words: int = 5) -> str: ...

    def is_related(self, text1: str, text2: str) -> bool: ...

    def rewrite(self, sentence: str, context: str) -> str: ...


# What callers may pass where ltm wants a model: an ltm LLM, or any llama-index LLM (wrapped by resolve_llm).
LLMLike: TypeAlias = "LLM | BaseLLM"


class LlamaIndexLLM:
    """Adapter from any llama-index ``LLM`` to the :class:`LLM` protocol; its errors become ``LLMError``."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def __repr__(self) -> str:
        return f"LlamaIndexLLM({type(self.llm).__name__})"

    def _is_chat(self) -> bool:
        metadata = getattr(self.llm, "metadata", None)
        return bool(getattr(metadata, "is_chat_model", False))

    @staticmethod
    def _messages(prompt: str, system: str | None) -> list[Any]:
        from llama_index.core.llms import ChatMessage, MessageRole

        head = [ChatMessage(role=MessageRole.SYSTEM, content=system)] if system else []
        return [*head, ChatMessage(role=MessageRole.USER, content=prompt)]

    @staticmethod
    def _joined(prompt: str, system: str | None) -> str:
        return f"{system}\n\n{prompt}" if system else prompt

    def ask(self, prompt: str, system: str | None = None) -> str:
        try:
            if self._is_chat():
                return _text(self.llm.chat(self._messages(prompt, system)).message.content)
            return _text(self.llm.complete(self._joined(prompt, system)).text)
        except LLMError:
            raise
        except Exception as exc:
            raise LLMError(f"{self!r} failed: {type(exc).__name__}: {exc}") from exc

    async def aask(self, prompt: str, system: str | None = None) -> str:
        try:
            if self._is_chat():
                return _text((await self.llm.achat(self._messages(prompt, system))).message.content)
            return _text((await self.llm.acomplete(self._joined(prompt, system))).text)
        except LLMError:
            raise
        except Exception as exc:
            raise LLMError(f"{self!r} failed: {type(exc).__name__}: {exc}") from exc


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise LLMError(f"the LLM answered {type(value).__name__}, not text; check the model and its server")
    return value


def resolve_llm(settings: Settings | None = None, llm: LLMLike | None = None) -> LLM:
    """The LLM to use: ``llm`` when given (an :class:`LLM`, or a llama-index LLM, which gets wrapped), else the
    one ``settings.llm`` names: ``"openai"`` -> :class:`~ltm.llm.openai_llm.OpenAICompatibleLLM`,
    ``"none"`` -> the offline :class:`~ltm.llm.extractive.ExtractiveLLM`.
    """
    if llm is not None:
        if _is_llama_index_llm(llm):
            return LlamaIndexLLM(llm)
        if isinstance(llm, LLM):
            return llm
        raise ConfigError(
            f"llm must have ask(prompt, system=None) and aask(...), or be a llama-index LLM; got {type(llm).__name__}"
        )
    settings = settings or Settings.load()
    if settings.llm == "openai":
        from ltm.llm.openai_llm import OpenAICompatibleLLM

        return OpenAICompatibleLLM.from_settings(settings)
    from ltm.llm.extractive import ExtractiveLLM

    return ExtractiveLLM()


def _is_llama_index_llm(llm: object) -> bool:
    try:
        from llama_index.core.base.llms.base import BaseLLM
    except ImportError:  # pragma: no cover - llama-index-core is a dependency
        return False
    return isinstance(llm, BaseLLM)


_FIRST_WORD = re.compile(r"[A-Za-z]+")


def parse_yes_no(answer: str) -> bool:
    """A strict yes/no read from the answer's first word: ``yes``/``true`` -> True; ``no``/``false``/``not``/
    ``unrelated`` -> False ("NOT TRUE" is not related); anything else raises ``LLMError`` instead of being read
    as yes because "TRUE" appears somewhere in it.
    """
    match = _FIRST_WORD.search(answer)
    word = match.group().lower() if match else ""
    if word in ("yes", "true"):
        return True
    if word in ("no", "false", "not", "unrelated"):
        return False
    raise LLMError(f"expected a yes/no answer, got {answer[:80]!r}; use a model that follows instructions")
