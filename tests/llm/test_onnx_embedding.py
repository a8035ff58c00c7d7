"""The local model on ONNX Runtime gives the vectors sentence-transformers gives, exported offline."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.errors import StoreCorrupted
from ltm.llm.embeddings import LOCAL_MODEL_NAME, local_model_path, model_name, resolve_embedding
from ltm.llm.onnx_embedding import OnnxEmbedding, onnx_available, onnx_model_path

pytestmark = pytest.mark.slow

TEXTS = [
    "Write a CLI snake game that saves high scores in SQLite",
    "where are the scores stored?",
    "Übersetzung ins Deutsche: ein kurzer Satz mit Umlauten, émigré café 東京",
    "word " * 400,  # past the 256-token window: its first window is what both runtimes embed for a query
    "a",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


def test_onnx_vectors_equal_torch_vectors(cache: Path) -> None:
    onnx = resolve_embedding(Settings(embedding="local", local_runtime="onnx", model_cache_dir=cache))
    torch = resolve_embedding(Settings(embedding="local", local_runtime="torch"))
    assert isinstance(onnx, OnnxEmbedding) and type(torch).__name__ == "HuggingFaceEmbedding"
    a = onnx.vectors(TEXTS)  # the model's vectors (a text to store past the window is embedded window by window)
    b = np.array(torch.get_text_embedding_batch(TEXTS))
    cosine = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert cosine.min() >= 0.9999, cosine
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    q = np.array(onnx.get_query_embedding(TEXTS[1]))
    assert float(q @ a[1]) > 0.9999
    assert model_name(onnx) == model_name(torch) == LOCAL_MODEL_NAME  # one manifest name: stores interchange


def test_export_is_cached_and_auto_prefers_onnx(cache: Path) -> None:
    graph = onnx_model_path(Path(local_model_path()), cache)
    before = graph.stat().st_mtime_ns
    again = OnnxEmbedding(local_model_path(), str(cache))
    assert graph.stat().st_mtime_ns == before and again.get_text_embedding("x")
    assert not [p for p in graph.parent.iterdir() if p.name.endswith(".partial")]
    auto = resolve_embedding(Settings(embedding="local", model_cache_dir=cache))
    assert isinstance(auto, OnnxEmbedding) == onnx_available()


def test_a_store_written_by_torch_is_searched_by_onnx(tmp_path: Path, cache: Path) -> None:
    torch_settings = Settings(storage_dir=tmp_path, embedding="local", local_runtime="torch")
    with MemoryStorage("team", settings=torch_settings) as store:
        store.add(Message("We keep the high scores in SQLite"))
        store.add(Message("The frontend uses React"))
    onnx_settings = torch_settings.with_(local_runtime="onnx", model_cache_dir=cache)
    with MemoryStorage("team", settings=onnx_settings) as store:
        hit = store.search("where are the scores stored?", k=1, mode="dense")[0]
        assert "SQLite" in hit.message.content and hit.score > 0.3


def test_a_damaged_cached_graph_is_a_clear_error(tmp_path: Path) -> None:
    graph = onnx_model_path(Path(local_model_path()), tmp_path)
    graph.parent.mkdir(parents=True)
    graph.write_bytes(b"not an onnx graph")
    with pytest.raises(StoreCorrupted, match="delete it"):
        OnnxEmbedding(local_model_path(), str(tmp_path))
    os.unlink(graph)
    assert OnnxEmbedding(local_model_path(), str(tmp_path)).get_text_embedding("rebuilt")  # exported again


def test_int8_is_opt_in_cached_beside_fp32_and_close_to_it(cache: Path) -> None:
    fp32 = resolve_embedding(Settings(embedding="local", local_runtime="onnx", model_cache_dir=cache))
    int8 = resolve_embedding(Settings(embedding="local", local_runtime="onnx-int8", model_cache_dir=cache))
    assert isinstance(int8, OnnxEmbedding) and int8 is not fp32
    graph = onnx_model_path(Path(local_model_path()), cache)
    quantized = graph.with_name("model.int8.onnx")
    assert quantized.is_file() and quantized.stat().st_size < graph.stat().st_size / 3  # int8 weights
    texts = [
        *TEXTS,
        "I prefer sourdough over dumplings",
        "Caroline went to the support group yesterday",
        "We keep the high scores in SQLite",
        "The frontend uses React",
    ]
    a = np.array(fp32.get_text_embedding_batch(texts))
    b = np.array(int8.get_text_embedding_batch(texts))
    cosine = (a * b).sum(axis=1)
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert cosine.min() >= 0.9 and cosine.mean() >= 0.97, cosine  # measured: mean 0.99 on real chat turns
    assert cosine.max() < 0.99999  # really another graph, not the fp32 one under a second name
    q = np.array(int8.get_query_embedding("where are the scores stored?"))
    assert int(np.argmax(b[-2:] @ q)) == 0  # same meaning: SQLite answers where scores are stored
    assert model_name(int8) == LOCAL_MODEL_NAME  # same model: stores written by either open with the other


def test_one_text_runs_unpadded_and_gives_the_vector_of_a_run_of_one(cache: Path) -> None:
    onnx = resolve_embedding(Settings(embedding="local", local_runtime="onnx", model_cache_dir=cache))
    assert isinstance(onnx, OnnxEmbedding)
    together = onnx.vectors(TEXTS)  # sorted runs, padded to each run's longest text
    for row, text in enumerate(TEXTS):
        alone = onnx.vectors([text])
        assert alone.shape == (1, 384) and alone.dtype == np.float32
        assert np.array_equal(alone, onnx._embed_sorted([text]))  # the planned path for one text: same input
        assert float(alone[0] @ together[row]) >= 0.99999  # beside other texts only the padding differs
        assert onnx.get_query_embedding(text) == alone[0].tolist()  # a query: its first window, always
        stored = onnx.text_vectors([text])  # a text to store: window by window when it is longer than one
        assert onnx.get_text_embedding(text) == stored[0].tolist()
        assert np.array_equal(stored, alone) == (len(onnx.model.windows(text)) == 1)


def test_vectors_are_what_llama_index_batching_returns(cache: Path) -> None:
    onnx = resolve_embedding(Settings(embedding="local", local_runtime="onnx", model_cache_dir=cache))
    assert isinstance(onnx, OnnxEmbedding)
    onnx.embed_batch_size = 2  # llama-index hands over windows of 2, 2 and 1: vectors() sorts the same windows
    try:
        batched = np.array(onnx.get_text_embedding_batch(TEXTS), dtype=np.float32)
        assert np.array_equal(onnx.text_vectors(TEXTS), batched)
    finally:
        onnx.embed_batch_size = 512


def test_unobserved_until_a_callback_or_an_instrumentation_handler_listens(cache: Path) -> None:
    from llama_index.core.callbacks import CallbackManager, LlamaDebugHandler
    from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    class Seen(BaseEventHandler):
        def handle(self, event: object, **kwargs: object) -> None:
            pass

    onnx = OnnxEmbedding(local_model_path(), str(cache))
    assert onnx.unobserved()
    onnx.callback_manager = CallbackManager([LlamaDebugHandler()])
    assert not onnx.unobserved()
    onnx.callback_manager = CallbackManager([])
    assert onnx.unobserved()
    root = get_dispatcher()
    handler = Seen()
    root.add_event_handler(handler)
    try:
        assert not onnx.unobserved()
    finally:
        root.event_handlers.remove(handler)
    assert onnx.unobserved()


def test_the_one_time_export_says_what_it_does(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from ltm.llm.onnx_model import OnnxModel

    weights = tmp_path / "model"  # the model's folder with damaged weights: the export starts, then fails fast
    weights.mkdir()
    for item in Path(local_model_path()).iterdir():
        if item.name != "model.safetensors":
            (weights / item.name).symlink_to(item)
    (weights / "model.safetensors").write_bytes(b"\0" * 64)
    with caplog.at_level("WARNING", logger="ltm.llm"), pytest.raises(Exception):  # noqa: B017
        OnnxModel(str(weights), str(tmp_path / "cache"))
    (record,) = [r for r in caplog.records if "once" in r.getMessage()]
    assert (
        "preparing the local embedding model" in record.getMessage() and str(tmp_path / "cache") in record.getMessage()
    )


def test_the_graph_is_written_without_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    # torch and transformers made unimportable: the graph comes from the weights alone
    script = (
        "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
        "from ltm.llm.onnx_embedding import OnnxEmbedding\n"
        f"from ltm.llm.local import local_model_path\n"
        f"print(OnnxEmbedding(local_model_path(), {str(tmp_path)!r}).get_text_embedding({TEXTS[0]!r})[:3])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    graph = onnx_model_path(Path(local_model_path()), tmp_path)
    assert graph.is_file()
    from sentence_transformers import SentenceTransformer

    expected = SentenceTransformer(local_model_path(), device="cpu").encode(TEXTS, normalize_embeddings=True)
    got = OnnxEmbedding(local_model_path(), str(tmp_path)).vectors(TEXTS)
    assert np.min(np.sum(np.asarray(got) * expected, axis=1)) >= 0.9999
