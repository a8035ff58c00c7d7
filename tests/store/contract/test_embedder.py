"""How the store calls its embedding: ltm's own ONNX model directly while nothing observes
llama-index's embedding events; any other llama-index embedding, and ltm's own once a handler listens, through
llama-index's public entry points, so their instrumentation sees every call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.embedding import EmbeddingStartEvent

from ltm import MemoryStorage, Message, Settings
from ltm.llm.embeddings import HashEmbedding, local_model_path
from ltm.llm.onnx_embedding import OnnxEmbedding, onnx_available


class Starts(BaseEventHandler):
    """Counts llama-index's EmbeddingStartEvent (one per model call made through the public entry points)."""

    count: int = 0

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, EmbeddingStartEvent):
            self.count += 1


@pytest.fixture
def starts() -> Any:
    root, handler = get_dispatcher(), Starts()
    root.add_event_handler(handler)
    yield handler
    root.event_handlers.remove(handler)


def test_a_callers_llama_index_embedding_goes_through_its_public_calls(tmp_path: Path, starts: Starts) -> None:
    debug = LlamaDebugHandler()
    embedding = HashEmbedding(dim=32, callback_manager=CallbackManager([debug]))
    with MemoryStorage("ns", settings=Settings(storage_dir=tmp_path, embedding="hash"), embedding=embedding) as store:
        store.add(Message("one message per add"))
        store.add_batch([Message("two in"), Message("one call")])
        store.search("a query", mode="dense")
    assert starts.count == 3
    assert len(debug.get_event_pairs(CBEventType.EMBEDDING)) == 3


@pytest.mark.slow
@pytest.mark.skipif(not onnx_available(), reason="the local extra (onnxruntime) is not installed")
def test_ltm_onnx_model_is_called_directly_until_someone_listens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    onnx = OnnxEmbedding(local_model_path(), str(tmp_path / "cache"))
    public = onnx.get_text_embedding_batch(["what the store must store"])[0]
    settings = Settings(storage_dir=tmp_path, embedding="local")
    calls: list[str] = []
    original = OnnxEmbedding.get_text_embedding_batch

    def counted(self: OnnxEmbedding, texts: list[str], **kwargs: Any) -> Any:
        calls.append("public")
        return original(self, texts, **kwargs)

    monkeypatch.setattr(OnnxEmbedding, "get_text_embedding_batch", counted)
    with MemoryStorage("ns", settings=settings, embedding=onnx) as store:
        store.add(Message("what the store must store", id="a"))
        assert calls == []  # nobody listens: the model ran without llama-index's dispatch around it
        stored = store.embed_texts(["what the store must store"])[0]  # the add's vector (the embedder's cache)
        assert float(stored @ np.asarray(public, dtype=np.float32)) > 0.9999  # the public call's vector
        debug = LlamaDebugHandler()
        onnx.callback_manager = CallbackManager([debug])
        store.add(Message("now a handler listens", id="b"))
        assert calls == ["public"] and len(debug.get_event_pairs(CBEventType.EMBEDDING)) == 1


@pytest.mark.slow
@pytest.mark.skipif(not onnx_available(), reason="the local extra (onnxruntime) is not installed")
def test_a_subclass_of_ltm_onnx_model_keeps_the_public_calls(tmp_path: Path, starts: Starts) -> None:
    class Tuned(OnnxEmbedding):
        def __init__(self, model_dir: str, cache_dir: str) -> None:
            super().__init__(model_dir, cache_dir)

        @classmethod
        def class_name(cls) -> str:
            return "Tuned"

    settings = Settings(storage_dir=tmp_path, embedding="local")
    tuned = Tuned(local_model_path(), str(tmp_path / "c"))
    with MemoryStorage("ns", settings=settings, embedding=tuned) as store:
        store.add(Message("a subclass may change what the direct call would skip"))
    assert starts.count == 1
