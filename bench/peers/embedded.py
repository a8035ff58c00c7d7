"""One embedded store in its own process, driven by :mod:`bench.peers.stores` over JSON lines (stdin -> stdout).

    python -m bench.peers.embedded ltm       # in the project's venv
    python -m bench.peers.embedded chroma    # in bench/.venvs/chroma (likewise qdrant, lancedb)

This module imports no ltm code outside :class:`Ltm`: it runs under each store's interpreter. Every store gets
the corpus's precomputed vectors for ingest (``bench/data/peers/<n>.npz``, by row) and embeds a text query with the
same ONNX graph of all-MiniLM-L6-v2 (:class:`OnnxQuery`; ltm runs that graph itself), so the model costs the same
everywhere. Every figure is timed here around the store's own call. Requests: ``open`` (``dir``, ``corpus``,
``onnx``, ``tokenizer``, ``max_tokens``, ``model``: load the query model too), ``add_batch`` (``rows``),
``add_one`` (``rows``), ``add_texts`` (``rows``: the store embeds the texts with the model), ``search``
(``rows`` of the query set, ``kind``: ``vector`` (store alone), ``text`` (dense, end to end) or ``hybrid``
(ltm's default, end to end), ``k``), ``close``. Answers: ``{"times": [...], "out": [...]}``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import time
from typing import Any

import numpy as np

from bench.peers.serve import Request, claim_stdout, serve


class OnnxQuery:
    """all-MiniLM-L6-v2's exported ONNX graph (pooling and normalisation inside) on one thread."""

    def __init__(self, graph: str, tokenizer: str, max_tokens: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(tokenizer)
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.no_padding()

    def __call__(self, texts: list[str]) -> np.ndarray:
        out = []
        for text in texts:  # one at a time, unpadded: ltm's own path for a single text
            enc = self._tokenizer.encode(text)
            feed = {
                "input_ids": np.array([enc.ids], dtype=np.int64),
                "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([enc.type_ids], dtype=np.int64),
            }
            out.append(np.asarray(self._session.run(None, feed)[0], dtype=np.float32)[0])
        return np.stack(out)


class Store:
    """What every store answers to. Ids are the corpus rows, as strings."""

    def __init__(self, directory: str, embed: OnnxQuery | None) -> None:
        self.embed = embed

    def add(self, rows: list[int], texts: list[str], vectors: np.ndarray, meta: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def search(self, vector: np.ndarray, k: int) -> list[int]:
        raise NotImplementedError

    def search_text(self, text: str, k: int, hybrid: bool) -> list[int]:
        assert self.embed is not None, "opened without the model"
        return self.search(self.embed([text])[0], k)

    def close(self) -> None:
        """Release files."""


class Chroma(Store):
    """Chroma's ``PersistentClient`` (SQLite + its HNSW index), cosine space, no embedding function of its own."""

    def __init__(self, directory: str, embed: OnnxQuery | None) -> None:
        super().__init__(directory, embed)
        import chromadb

        self._client = chromadb.PersistentClient(path=directory)
        self._col = self._client.get_or_create_collection(
            "peers", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )

    def add(self, rows: list[int], texts: list[str], vectors: np.ndarray, meta: list[dict[str, Any]]) -> None:
        self._col.add(ids=[str(r) for r in rows], embeddings=vectors, documents=texts, metadatas=meta)

    def search(self, vector: np.ndarray, k: int) -> list[int]:
        got = self._col.query(query_embeddings=vector.reshape(1, -1), n_results=k, include=["documents"])
        return [int(i) for i in got["ids"][0]]


class Qdrant(Store):
    """qdrant-client's local mode (``QdrantClient(path=...)``: in-process, numpy search, pickled on disk)."""

    def __init__(self, directory: str, embed: OnnxQuery | None) -> None:
        super().__init__(directory, embed)
        from qdrant_client import QdrantClient, models

        self._models = models
        self._client = QdrantClient(path=directory)
        if not self._client.collection_exists("peers"):
            self._client.create_collection(
                "peers", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE)
            )

    def add(self, rows: list[int], texts: list[str], vectors: np.ndarray, meta: list[dict[str, Any]]) -> None:
        points = [
            self._models.PointStruct(id=r, vector=v.tolist(), payload=dict(m, text=t))
            for r, t, v, m in zip(rows, texts, vectors, meta, strict=True)
        ]
        self._client.upsert("peers", points=points)

    def search(self, vector: np.ndarray, k: int) -> list[int]:
        return [int(p.id) for p in self._client.query_points("peers", query=vector.tolist(), limit=k).points]

    def close(self) -> None:
        self._client.close()


class Lance(Store):
    """LanceDB's embedded table (Lance files on disk); its default search, a scan (no index is built unless asked)."""

    def __init__(self, directory: str, embed: OnnxQuery | None) -> None:
        super().__init__(directory, embed)
        import lancedb

        self._db = lancedb.connect(directory)
        self._table: Any = self._db.open_table("peers") if "peers" in self._db.table_names() else None

    def add(self, rows: list[int], texts: list[str], vectors: np.ndarray, meta: list[dict[str, Any]]) -> None:
        data = [
            {"id": r, "vector": v.tolist(), "text": t, **m}
            for r, t, v, m in zip(rows, texts, vectors, meta, strict=True)
        ]
        if self._table is None:
            self._table = self._db.create_table("peers", data=data)
        else:
            self._table.add(data)

    def search(self, vector: np.ndarray, k: int) -> list[int]:
        got = self._table.search(vector.tolist()).metric("cosine").limit(k).select(["id"]).to_list()
        return [int(r["id"]) for r in got]


class Ltm(Store):
    """ltm's embedded store (SQLite + FAISS + FTS5), default settings; the given vectors through ``add_batch``."""

    def __init__(self, directory: str, embed: OnnxQuery | None, model: bool = False) -> None:
        super().__init__(directory, None)
        from ltm.config import Settings
        from ltm.message import Message
        from ltm.store import MemoryStorage

        self._message = Message
        self._store = MemoryStorage("peers", kind="bench", settings=Settings.load(storage_dir=directory))
        if model:  # ltm's own model runtime (the same ONNX graph), loaded now as the others' is
            self._store.embed_texts(["warm up the model"])  # the store's own path: no llama-index wrapper

    def _messages(self, rows: list[int], texts: list[str], meta: list[dict[str, Any]]) -> list[Any]:
        return [
            self._message(id=str(r), content=t, role="user", sent_from=m["speaker"], created_at=m["time"])
            for r, t, m in zip(rows, texts, meta, strict=True)
        ]

    def add(self, rows: list[int], texts: list[str], vectors: np.ndarray, meta: list[dict[str, Any]]) -> None:
        self._store.add_batch(self._messages(rows, texts, meta), vectors=vectors)

    def add_texts(self, rows: list[int], texts: list[str], meta: list[dict[str, Any]]) -> None:
        self._store.add_batch(self._messages(rows, texts, meta))

    def search(self, vector: np.ndarray, k: int) -> list[int]:
        return [int(h.message.id) for h in self._store.search("", k=k, mode="dense", vector=vector)]

    def search_text(self, text: str, k: int, hybrid: bool) -> list[int]:
        return [int(h.message.id) for h in self._store.search(text, k=k, mode="hybrid" if hybrid else "dense")]

    def close(self) -> None:
        self._store.close()


STORES: dict[str, type[Store]] = {"ltm": Ltm, "chroma": Chroma, "qdrant": Qdrant, "lancedb": Lance}


# what each store's open imports: done (and timed) when the process starts, not counted in the open; for ltm, its
# store and engine modules (``ltm.store`` alone loads them on first use) and its local model's runtime: the module
# that holds it without llama-index, or (an older ltm, --baseline) ltm.llm.embeddings, which brings llama-index
IMPORTS = {
    "ltm": ("ltm.store.storage", "ltm.store.embedded.backend", "ltm.llm.onnx_model|ltm.llm.embeddings"),
    "chroma": ("chromadb",),
    "qdrant": ("qdrant_client",),
    "lancedb": ("lancedb",),
}


class Session:
    """One worker's state: the corpus it reads rows from (loaded untimed), then the store (:meth:`open`, timed)."""

    def __init__(self, kind: str, request: dict[str, Any]) -> None:
        with open(request["corpus"], encoding="utf-8") as source:
            corpus = json.load(source)
        arrays = np.load(request["corpus"][: -len(".json")] + ".npz")
        self.turns, self.questions = corpus["turns"], corpus["questions"]
        self.vectors, self.queries = arrays["vectors"], arrays["queries"]
        self.kind = kind
        self.store: Store | None = None

    def open(self, request: dict[str, Any]) -> None:
        if self.kind == "ltm":  # ltm loads the same graph itself: a session of OnnxQuery would be paid twice
            self.store = Ltm(request["dir"], None, model=bool(request.get("model")))
            return
        embed = (
            OnnxQuery(request["onnx"], request["tokenizer"], int(request["max_tokens"]))
            if request.get("model")
            else None
        )
        if embed is not None:
            embed(["warm up the model"])
        self.store = STORES[self.kind](request["dir"], embed)

    @property
    def opened(self) -> Store:
        assert self.store is not None, "open first"
        return self.store

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        store = self.opened
        op, times, out = request["op"], [], []
        if op in ("add_batch", "add_one", "add_texts"):
            rows = [int(r) for r in request["rows"]]
            chunks = [rows] if op != "add_one" else [[r] for r in rows]
            for chunk in chunks:
                turns = [self.turns[r % len(self.turns)] for r in chunk]
                texts = [
                    t["text"] if r < len(self.turns) else f"{t['text']} ({r})"
                    for r, t in zip(chunk, turns, strict=True)
                ]
                meta = [{"speaker": t["speaker"], "time": t["time"]} for t in turns]
                started = time.perf_counter()
                if op == "add_texts":
                    if isinstance(store, Ltm):
                        store.add_texts(chunk, texts, meta)
                    else:
                        assert store.embed is not None
                        store.add(chunk, texts, store.embed(texts), meta)
                else:
                    store.add(chunk, texts, self.vectors[[r % len(self.vectors) for r in chunk]], meta)
                times.append(time.perf_counter() - started)
        elif op == "search":
            kind, k = request["kind"], int(request["k"])
            for row in request["rows"]:
                started = time.perf_counter()
                if kind == "vector":
                    got = store.search(self.queries[row], k)
                else:
                    got = store.search_text(self.questions[row], k, kind == "hybrid")
                times.append(time.perf_counter() - started)
                out.append(got)
        else:
            raise ValueError(f"unknown op {op!r}")
        return {"times": times, "out": out}


def main(argv: list[str] | None = None) -> int:
    kind = (sys.argv[1:] if argv is None else argv)[0]
    protocol = claim_stdout()
    started = time.perf_counter()
    for modules in IMPORTS[kind]:  # the library's import is not the store's open: timed apart (see open's answer)
        names = modules.split("|")  # the first of these alternatives that exists
        importlib.import_module(next((n for n in names if importlib.util.find_spec(n) is not None), names[-1]))
    imported = time.perf_counter() - started
    sessions: list[Session] = []

    def open_(request: Request) -> Request:  # timed: open (with the model when asked), and the first query if given
        session = Session(kind, request)
        sessions[:] = [session]
        started = time.perf_counter()
        session.open(request)
        first = request.get("first")
        if first is not None:
            row = int(first["row"])
            if first["kind"] == "vector":
                session.opened.search(session.queries[row], 10)
            else:
                session.opened.search_text(session.questions[row], 10, first["kind"] == "hybrid")
        return {"times": [time.perf_counter() - started], "import": imported}

    def close() -> None:
        if sessions and sessions[0].store is not None:
            sessions[0].store.close()

    return serve(protocol, open_, lambda request: sessions[0].handle(request), close)


if __name__ == "__main__":
    raise SystemExit(main())
