"""One store of one agent framework in its own process, driven by :mod:`bench.peers.frameworks` over JSON lines.

    <venv>/bin/python -m bench.peers.framework_worker      # cwd outside the repository, PYTHONPATH = the repository

It runs under the framework's interpreter (``.venv-frameworks/<framework>``, built by ``scripts/frameworks/``) and
imports the standard library, numpy, the framework and, for ltm's stores, ltm (from the repository on PYTHONPATH,
ahead of any ltm installed in that environment). Every store is driven through its framework's own API:

- LangGraph (``BaseStore``): ``batch()`` of ``PutOp`` for puts, ``search(namespace, query=..., limit=k)``; every
  store gets the same ``IndexConfig`` (384 dimensions, ``fields=["text"]``, :func:`embed`).
- AutoGen (``autogen_core.memory.Memory``): ``add(MemoryContent)`` one at a time (the protocol has no batch),
  ``query(text)`` with ``k`` results.
- CrewAI (``crewai.memory.storage.backend.StorageBackend``): ``save(records)`` of records carrying their vectors
  (CrewAI's ``Memory`` computes them with its embedder, here :func:`embed`), ``search(query_embedding, limit=k)``.

:func:`embed` looks every text up in the corpus's precomputed all-MiniLM-L6-v2 vectors (``bench/data/peers/<n>``:
the turns' and the questions'), so the model costs no store anything. Requests: ``open`` (``framework``,
``store``, ``dir``, ``corpus``, ``url`` for the PostgreSQL stores, ``k``, ``first``: a question row searched right
after opening), ``put`` (``rows``), ``search`` (``rows`` of the questions), ``close``. Answers: ``{"times": [...],
"out": [...]}``; ``open`` answers the time of the open (plus the first query when asked).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.peers.serve import Request, claim_stdout, serve

NAMESPACE = ("bench", "memories")  # LangGraph's namespace of every item
DIMS = 384
VECTORS: dict[str, np.ndarray] = {}  # text -> its precomputed vector (turns and questions)
TEXTS: list[str] = []  # corpus row -> text
QUESTIONS: list[str] = []


def load(corpus: str) -> None:
    """Read the corpus's texts and vectors (once per process)."""
    if TEXTS:
        return
    path = Path(corpus)
    data = json.loads(path.read_text("utf-8"))
    arrays = np.load(path.with_suffix(".npz"))
    TEXTS.extend(t["text"] for t in data["turns"])
    QUESTIONS.extend(data["questions"])
    for text, vector in zip(TEXTS, arrays["vectors"], strict=False):
        VECTORS.setdefault(text, vector)
    for text, vector in zip(QUESTIONS, arrays["queries"], strict=False):
        VECTORS.setdefault(text, vector)


def embed(texts: Sequence[str]) -> list[list[float]]:
    """The embed function of every store: each text's precomputed all-MiniLM-L6-v2 vector."""
    return [VECTORS[t].tolist() for t in texts]


def lookup_embedding() -> Any:
    """:func:`embed` as the llama-index embedding ltm's ``MemoryStorage`` takes (the AutoGen adapter's store)."""
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class Lookup(BaseEmbedding):
        model_name: str = "bench-minilm-lookup"

        def _get_text_embedding(self, text: str) -> list[float]:
            return embed([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embed(texts)

        def _get_query_embedding(self, query: str) -> list[float]:
            return embed([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return embed([query])[0]

    return Lookup(embed_batch_size=1000)


class Store:
    """One framework store: ``put`` corpus rows, ``search`` a question (ids of the found rows, best first)."""

    def put(self, rows: list[int]) -> None:
        raise NotImplementedError

    def search(self, question: str, k: int) -> list[int]:
        raise NotImplementedError

    def close(self) -> None:
        """Release files and connections."""


# -- LangGraph -------------------------------------------------------------------------------------------------
class LangGraph(Store):
    def __init__(self, store: str, directory: Path, url: str | None) -> None:
        from langgraph.store.base import IndexConfig

        index: Any = IndexConfig(dims=DIMS, embed=embed, fields=["text"])
        index["text_fields"] = ["text"]  # SqliteStore's and PostgresStore's name for ``fields``
        self._exit: Any = None
        if store == "InMemoryStore":
            from langgraph.store.memory import InMemoryStore

            self.store: Any = InMemoryStore(index=index)
        elif store == "SqliteStore":
            import sqlite3

            from langgraph.store.sqlite import SqliteStore

            conn = sqlite3.connect(str(directory / "store.sqlite"), check_same_thread=False, isolation_level=None)
            self.store = SqliteStore(conn, index=index)
            self.store.setup()
        elif store == "PostgresStore":
            from langgraph.store.postgres import PostgresStore

            manager = PostgresStore.from_conn_string(url or "", index=index)
            self.store = manager.__enter__()
            self._exit = manager.__exit__
            self.store.setup()
        else:  # LtmStore, embedded or (with url) on PostgreSQL
            from ltm.config import Settings
            from ltm.integrations.langgraph import LtmStore

            settings = Settings(storage_dir=directory, store_url=url) if url else Settings(storage_dir=directory)
            self.store = LtmStore(settings, index=index)
            self._exit = lambda *_: self.store.close()

    def put(self, rows: list[int]) -> None:
        from langgraph.store.base import PutOp

        # A text twice in one batch() fails InMemoryStore ("Number of embeddings ... does not match"): every store
        # alike gets the batch cut where a text repeats (chat turns repeat: "ok", "lol").
        batches: list[list[int]] = [[]]
        seen: set[str] = set()
        for r in rows:
            if TEXTS[r] in seen:
                batches.append([])
                seen.clear()
            batches[-1].append(r)
            seen.add(TEXTS[r])
        for batch in batches:
            self.store.batch([PutOp(NAMESPACE, str(r), {"text": TEXTS[r]}) for r in batch])

    def search(self, question: str, k: int) -> list[int]:
        return [int(item.key) for item in self.store.search(NAMESPACE, query=question, limit=k)]

    def close(self) -> None:
        if self._exit is not None:
            self._exit(None, None, None)
        elif hasattr(self.store, "conn"):
            self.store.conn.close()


# -- AutoGen ---------------------------------------------------------------------------------------------------
def chroma_embedding_function() -> Any:
    """:func:`embed` as a Chroma embedding function (what ``CustomEmbeddingFunctionConfig`` asks for)."""
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

    class Lookup(EmbeddingFunction[Documents]):  # type: ignore[misc]  # Any where chromadb is not installed
        def __init__(self) -> None:
            pass

        def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 (Chroma's parameter name)
            return [np.asarray(v, dtype=np.float32) for v in embed(list(input))]

        @staticmethod
        def name() -> str:
            return "bench-minilm-lookup"

    return Lookup()


class AutoGen(Store):
    def __init__(self, store: str, directory: Path, k: int) -> None:
        from autogen_core.memory import MemoryContent, MemoryMimeType

        self._content: Callable[[int], Any] = lambda r: MemoryContent(
            content=TEXTS[r], mime_type=MemoryMimeType.TEXT, metadata={"row": r}
        )
        self._loop = asyncio.new_event_loop()
        if store == "ListMemory":
            from autogen_core.memory import ListMemory

            self.memory: Any = ListMemory()
        elif store == "ChromaDBVectorMemory":
            from autogen_ext.memory.chromadb import (
                ChromaDBVectorMemory,
                CustomEmbeddingFunctionConfig,
                PersistentChromaDBVectorMemoryConfig,
            )

            self.memory = ChromaDBVectorMemory(
                config=PersistentChromaDBVectorMemoryConfig(
                    collection_name="bench",
                    persistence_path=str(directory),
                    k=k,
                    embedding_function_config=CustomEmbeddingFunctionConfig(function=chroma_embedding_function),
                )
            )
        else:  # LtmMemory, whose store is given the lookup embedding (the adapter takes its model from Settings)
            from functools import partial

            from ltm.config import Settings
            from ltm.integrations import autogen
            from ltm.store import MemoryStorage

            setattr(autogen, "MemoryStorage", partial(MemoryStorage, embedding=lookup_embedding()))  # noqa: B010
            self.memory = autogen.LtmMemory("bench", settings=Settings(storage_dir=directory), k=k)

    def put(self, rows: list[int]) -> None:
        async def adds() -> None:
            for r in rows:
                await self.memory.add(self._content(r))

        self._loop.run_until_complete(adds())

    def search(self, question: str, k: int) -> list[int]:
        found = self._loop.run_until_complete(self.memory.query(question))
        out = []
        for content in found.results[:k]:
            row = (content.metadata or {}).get("row")
            out.append(int(row) if row is not None else TEXTS.index(str(content.content)))
        return out

    def close(self) -> None:
        closer = getattr(self.memory, "close", None)
        if closer is not None:
            self._loop.run_until_complete(closer())
        self._loop.close()


# -- CrewAI ----------------------------------------------------------------------------------------------------
class CrewAI(Store):
    def __init__(self, store: str, directory: Path) -> None:
        if store == "LanceDBStorage":
            from crewai.memory.storage.lancedb_storage import LanceDBStorage

            self.storage: Any = LanceDBStorage(path=directory, vector_dim=DIMS)
        else:
            from ltm.config import Settings
            from ltm.integrations.crewai import LtmStorage

            self.storage = LtmStorage(Settings(storage_dir=directory))

    def put(self, rows: list[int]) -> None:
        from crewai.memory.types import MemoryRecord

        vectors = embed([TEXTS[r] for r in rows])  # CrewAI's Memory embeds, then saves the records with vectors
        self.storage.save(
            [MemoryRecord(id=str(r), content=TEXTS[r], embedding=v) for r, v in zip(rows, vectors, strict=True)]
        )

    def search(self, question: str, k: int) -> list[int]:
        query = embed([question])[0]
        return [int(record.id) for record, _score in self.storage.search(query, limit=k)]

    def close(self) -> None:
        closer = getattr(self.storage, "close", None)
        if closer is not None:
            closer()


STORE: list[Store] = []
# the modules each store's constructor imports: imported before the open is timed (a reopen measures the store,
# not the library's import)
MODULES = {
    "LtmStore": ["langgraph.store.base", "ltm.integrations.langgraph"],
    "InMemoryStore": ["langgraph.store.base", "langgraph.store.memory"],
    "SqliteStore": ["langgraph.store.base", "langgraph.store.sqlite"],
    "PostgresStore": ["langgraph.store.base", "langgraph.store.postgres"],
    "LtmMemory": ["autogen_core.memory", "ltm.integrations.autogen", "llama_index.core.base.embeddings.base"],
    "ChromaDBVectorMemory": ["autogen_core.memory", "autogen_ext.memory.chromadb"],
    "ListMemory": ["autogen_core.memory"],
    "LtmStorage": ["crewai.memory.types", "ltm.integrations.crewai"],
    "LanceDBStorage": ["crewai.memory.types", "crewai.memory.storage.lancedb_storage"],
}


def open_(request: Request) -> Request:
    load(request["corpus"])
    directory = Path(request["dir"])
    framework, name = request["framework"], request["store"]
    for module in MODULES[name]:
        importlib.import_module(module)
    started = time.perf_counter()
    if framework == "langgraph":
        STORE.append(LangGraph(name, directory, request.get("url")))
    elif framework == "autogen":
        STORE.append(AutoGen(name, directory, request["k"]))
    else:
        STORE.append(CrewAI(name, directory))
    out: list[list[int]] = []
    if request.get("first") is not None:
        out.append(STORE[0].search(QUESTIONS[request["first"]], request["k"]))
    return {"times": [time.perf_counter() - started], "out": out}


def handle(request: Request) -> Request:
    store = STORE[0]
    if request["op"] == "put":
        started = time.perf_counter()
        store.put(request["rows"])
        return {"times": [time.perf_counter() - started], "out": []}
    if request["op"] == "search":
        times, out = [], []
        for row in request["rows"]:
            started = time.perf_counter()
            out.append(store.search(QUESTIONS[row], request["k"]))
            times.append(time.perf_counter() - started)
        return {"times": times, "out": out}
    raise ValueError(f"unknown op {request['op']!r}")


def close() -> None:
    if STORE:
        STORE.pop().close()


if __name__ == "__main__":
    raise SystemExit(serve(claim_stdout(), open_, handle, close))
