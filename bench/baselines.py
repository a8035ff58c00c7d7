"""Baselines for bench/run.py, measured on the same texts and vectors as ltm.

- A, the llama-index way MetaGPT uses: ``VectorStoreIndex`` over ``FaissVectorStore(faiss.IndexFlatL2)`` with
  the default docstore and index store, one ``insert_nodes([node])`` per arriving message (MetaGPT's
  ``SimpleEngine.add_objs`` -> ``FAISSRetriever.add_nodes``), the message JSON in node metadata excluded from
  the embedded text (as MetaGPT's ``ObjectNode`` does), persisted with ``StorageContext.persist`` and loaded
  with ``load_index_from_storage``.
- B, raw FAISS on the same vectors: ``IndexFlatIP`` (exact) and ``IndexHNSWFlat``: the floor for index work.
- C, the embedding model alone on the same texts, batched: the ceiling for ingest.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HNSW_M = 32
HNSW_EF_SEARCH = (64, 128)


def dir_bytes(path: str | Path) -> int:
    """Bytes of all regular files below ``path`` (what the namespace costs on disk)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
    return total


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


# ---------------------------------------------------------------- A: llama-index VectorStoreIndex + FAISS


def _node(text: str, node_id: str, payload: str) -> Any:
    from llama_index.core.schema import TextNode

    meta = {"obj_json": payload, "is_obj": True, "obj_cls_name": "Message", "obj_mod_name": "metagpt.schema"}
    keys = list(meta)
    return TextNode(
        text=text, id_=node_id, metadata=meta, excluded_embed_metadata_keys=keys, excluded_llm_metadata_keys=keys
    )


def a_new_index(embed_model: Any, dim: int) -> Any:
    """An empty MetaGPT-style index: FaissVectorStore over IndexFlatL2, default docstore/index store."""
    import faiss
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.vector_stores.faiss import FaissVectorStore

    storage = StorageContext.from_defaults(vector_store=FaissVectorStore(faiss_index=faiss.IndexFlatL2(dim)))
    return VectorStoreIndex(nodes=[], storage_context=storage, embed_model=embed_model)


def a_add_one_at_a_time(index: Any, texts: Sequence[str], payloads: Sequence[str], start: int = 0) -> list[float]:
    """Insert one node per message, as messages arrive; returns seconds per insert."""
    times = []
    for j, (text, payload) in enumerate(zip(texts, payloads, strict=True)):
        node = _node(text, f"m{start + j}", payload)
        t0 = time.perf_counter()
        index.insert_nodes([node])
        times.append(time.perf_counter() - t0)
    return times


def a_add_batch(index: Any, texts: Sequence[str], payloads: Sequence[str], start: int = 0) -> float:
    """One ``insert_nodes`` for all; returns seconds."""
    nodes = [_node(t, f"m{start + j}", p) for j, (t, p) in enumerate(zip(texts, payloads, strict=True))]
    t0 = time.perf_counter()
    index.insert_nodes(nodes)
    return time.perf_counter() - t0


def a_persist(index: Any, persist_dir: str | Path) -> float:
    t0 = time.perf_counter()
    index.storage_context.persist(persist_dir=str(persist_dir))
    return time.perf_counter() - t0


def a_search(
    index: Any, query_texts: Sequence[str], query_vecs: np.ndarray, k: int = 10
) -> tuple[list[float], list[list[str]]]:
    """Retrieve top-k per query with the query embedding given (excluded from the time); seconds and node ids."""
    from llama_index.core.schema import QueryBundle

    retriever = index.as_retriever(similarity_top_k=k)
    times, ids = [], []
    for text, vec in zip(query_texts, query_vecs, strict=True):
        bundle = QueryBundle(query_str=text, embedding=vec.tolist())
        t0 = time.perf_counter()
        hits = retriever.retrieve(bundle)
        times.append(time.perf_counter() - t0)
        ids.append([h.node.node_id for h in hits])
    return times, ids


def a_find_news(index: Any, observed_texts: Sequence[str], threshold: float = 0.1, k: int = 4) -> tuple[float, int]:
    """MetaGPT's long-term ``find_news`` filter: one similarity retrieve per observed message (the embedding is
    looked up through the index's embed_model); a message is news when no hit is within L2 ``threshold``.
    Returns (seconds, number of news)."""
    retriever = index.as_retriever(similarity_top_k=k)
    t0 = time.perf_counter()
    news = 0
    for text in observed_texts:
        hits = retriever.retrieve(text)
        if not [h for h in hits if h.score is not None and h.score < threshold]:
            news += 1
    return time.perf_counter() - t0, news


# ------------------------------------------------------------------------------------------ B: raw FAISS


def b_measure(
    vecs: np.ndarray, queries: np.ndarray, truth: np.ndarray, one_at_a_time: int, hnsw: bool, tmp: str | Path
) -> dict[str, float]:
    """Raw FAISS floor on ``vecs``: batch and single adds, single-query search p50/p95, recall, bytes/vector."""
    import faiss

    n, dim = vecs.shape
    out: dict[str, float] = {}
    flat = faiss.IndexFlatIP(dim)
    t0 = time.perf_counter()
    flat.add(vecs)
    out["flat_add_batch_ms_per_msg"] = (time.perf_counter() - t0) * 1e3 / n
    single = faiss.IndexFlatIP(dim)
    m = min(one_at_a_time, n)
    t0 = time.perf_counter()
    for i in range(m):
        single.add(vecs[i : i + 1])
    out["flat_add_one_ms"] = (time.perf_counter() - t0) * 1e3 / m
    times = []
    for q in queries:
        t0 = time.perf_counter()
        flat.search(q[None, :], 10)
        times.append(time.perf_counter() - t0)
    out["flat_search_p50_ms"] = pct(times, 50) * 1e3
    out["flat_search_p95_ms"] = pct(times, 95) * 1e3
    path = Path(tmp) / "b_flat.faiss"
    faiss.write_index(flat, str(path))
    out["flat_bytes_per_msg"] = path.stat().st_size / n
    path.unlink()
    if hnsw:
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        t0 = time.perf_counter()
        index.add(vecs)
        out["hnsw_add_batch_ms_per_msg"] = (time.perf_counter() - t0) * 1e3 / n
        for ef in HNSW_EF_SEARCH:
            index.hnsw.efSearch = ef
            times, found = [], []
            for q in queries:
                t0 = time.perf_counter()
                _d, ids = index.search(q[None, :], 10)
                times.append(time.perf_counter() - t0)
                found.append(ids[0])
            out[f"hnsw_ef{ef}_search_p50_ms"] = pct(times, 50) * 1e3
            out[f"hnsw_ef{ef}_search_p95_ms"] = pct(times, 95) * 1e3
            out[f"hnsw_ef{ef}_recall10"] = recall_at_10(found, truth)
    return out


def rescored_recall(ids: np.ndarray, vecs: np.ndarray, queries: np.ndarray, truth: np.ndarray) -> float:
    """recall@10 against ``truth`` of each query's candidates ``ids`` (rows of ``vecs``; -1 pads) rescored with
    ``vecs``: what ltm's dense search answers from an approximate index's candidates."""
    hits = 0
    for row, query, true in zip(ids, queries, truth, strict=True):
        cand = row[row >= 0]
        hits += len(set(cand[np.argsort(-(vecs[cand] @ query))][:10].tolist()) & set(true.tolist()))
    return hits / 10 / len(queries)


def exact_top10(vecs: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Exact inner-product top-10 row indices per query (the ground truth for recall)."""
    import faiss

    index = faiss.IndexFlatIP(vecs.shape[1])
    index.add(vecs)
    _d, ids = index.search(queries, 10)
    return np.asarray(ids)


def recall_at_10(found: Sequence[Sequence[int]], truth: np.ndarray) -> float:
    pairs = zip(found, truth, strict=True)
    hits = sum(len({int(x) for x in f[:10]} & {int(x) for x in t[:10]}) for f, t in pairs)
    return hits / (10 * len(truth))


# ------------------------------------------------------------------------------- C: the embedding model


def c_throughput(embed_model: Any, texts: Sequence[str]) -> float:
    """Texts per second of the model alone, in its own batches (``get_text_embedding_batch``)."""
    t0 = time.perf_counter()
    embed_model.get_text_embedding_batch(list(texts))
    return len(texts) / (time.perf_counter() - t0)


def c_query_ms(embed_model: Any, queries: Sequence[str]) -> list[float]:
    """Milliseconds per single query embedding (the part ltm's search latency excludes)."""
    out = []
    for q in queries:
        t0 = time.perf_counter()
        embed_model.get_query_embedding(q)
        out.append((time.perf_counter() - t0) * 1e3)
    return out
