"""Reading a store never loads the embedding model: only embedding does (a CLI that answers fast)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ltm.llm.embeddings as embeddings
from ltm import LTMError, MemoryStorage, Message, Settings
from ltm.llm.names import LOCAL_MODEL_NAME, configured_model_name


def _refuse(settings: Settings) -> object:
    raise AssertionError("the local model was loaded by a call that needs no embedding")


def test_reads_do_not_load_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "_local", _refuse)
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
