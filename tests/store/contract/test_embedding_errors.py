"""A failing embedding model is an outage or a model error, never the caller's bad input; nothing is stored."""

from __future__ import annotations

import socket

import openai
import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from ltm.config import Settings
from ltm.errors import BackendUnavailable, InvalidInput, LLMError, LTMError
from ltm.message import Message
from ltm.store import MemoryStorage


class FailingEmbedding(BaseEmbedding):
    """Raises the exception it was given on every call, like a model whose server or code broke."""

    _error: Exception = PrivateAttr()

    def __init__(self, error: Exception) -> None:
        super().__init__(model_name="failing")
        self._error = error

    def _get_query_embedding(self, query: str) -> list[float]:
        raise self._error

    def _get_text_embedding(self, text: str) -> list[float]:
        raise self._error

    async def _aget_query_embedding(self, query: str) -> list[float]:
        raise self._error


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ConnectionRefusedError("connection refused"), BackendUnavailable),
        (TimeoutError("read timed out"), BackendUnavailable),
        ("openai-unreachable", BackendUnavailable),
        (RuntimeError("CUDA out of memory"), LLMError),
    ],
)
def test_embedding_failure_maps_to_outage_or_model_error(
    settings: Settings, error: Exception | str, expected: type[LTMError]
) -> None:
    if error == "openai-unreachable":
        error = _openai_connection_error()
    assert isinstance(error, Exception)
    storage = MemoryStorage("emb-fail", settings=settings, embedding=FailingEmbedding(error))
    try:
        with pytest.raises(expected) as caught:
            storage.add(Message("a message the model cannot embed"))
        assert not isinstance(caught.value, InvalidInput)
        assert caught.value.__cause__ is error
        assert storage.count() == 0
    finally:
        storage.close()


def _openai_connection_error() -> Exception:
    """The real error of the real ``openai`` client calling a loopback port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=2.0)
    try:
        client.embeddings.create(model="m", input=["x"])
    except openai.APIConnectionError as exc:
        return exc
    finally:
        client.close()
    raise AssertionError(f"something answered on port {port}")
