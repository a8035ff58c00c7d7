"""Worker processes of bench/run.py. Each worker runs one system at one size in its own process, so its
peak RSS is its own, and prints one JSON line. Data is regenerated from the seed in every worker (cheap and
deterministic) instead of being shipped between processes.
"""

from __future__ import annotations

import json
import resource
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import module_cmd, module_env
from bench.baselines import (
    a_add_batch,
    a_add_one_at_a_time,
    a_find_news,
    a_new_index,
    a_persist,
    a_search,
    b_measure,
    c_query_ms,
    c_throughput,
    dir_bytes,
    exact_top10,
    pct,
    recall_at_10,
)
from bench.data import DIM, dataset, lookup_embedding, query_set, vectors

N_QUERIES = 200
N_NEW = 50


def _rss_mb() -> float:
    """Peak RSS of this process image (VmHWM). Not ru_maxrss: Linux carries the forked parent's high-water
    mark across exec into it, so every worker would report at least the orchestrator's size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _current_rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


def worker_data(rows: int, seed: int) -> dict[str, Any]:
    """``rows`` dataset rows + ``N_NEW`` never-stored rows, vectors for all, queries near stored rows."""
    texts, topics, roles, causes = dataset(rows + N_NEW, seed)
    vecs = vectors(topics, seed)
    qtexts, qvecs = query_set(vecs[:rows], N_QUERIES, seed)
    emb = lookup_embedding()
    emb.register(texts, vecs)
    emb.register(qtexts, qvecs)
    return {
        "texts": texts[:rows],
        "roles": roles,
        "causes": causes,
        "vecs": vecs[:rows],
        "new_texts": texts[rows:],
        "query_texts": qtexts,
        "query_vecs": qvecs,
        "embedding": emb,
    }


def _faiss_one_thread() -> None:
    import faiss

    faiss.omp_set_num_threads(1)  # ltm's store runs FAISS on one thread; every system gets the same


def run_ltm(n: int, seed: int, extra: int, one_max: int) -> dict[str, float]:
    from bench import ltm_runner as bench_ltm

    _faiss_one_thread()
    data = worker_data(n + extra, seed)
    data["truth"] = exact_top10(data["vecs"], data["query_vecs"])
    base_rss = _current_rss_mb()
    data["extra_texts"] = data["texts"][n:]
    data["extra_roles"], data["extra_causes"] = data["roles"][n:], data["causes"][n:]
    with tempfile.TemporaryDirectory(prefix="ltm-bench-") as tmp:
        out = bench_ltm.run_precomputed(n, seed, Path(tmp), data, one_max, extra)
    out["rss_before_mb"] = base_rss
    out["peak_rss_mb"] = _rss_mb()
    return out


def run_a(n: int, seed: int, one_max: int, marginal: int) -> dict[str, float]:
    """A at size n: one-at-a-time from empty when n <= one_max, else one batch insert then ``marginal``
    one-at-a-time inserts at size n (A's insert cost grows with n: the index store re-serialises its whole
    node map on every insert)."""
    from ltm.message import Message

    _faiss_one_thread()
    extra = 0 if n <= one_max else marginal
    data = worker_data(n + extra, seed)
    texts = data["texts"]
    payloads = [
        Message(id=f"m{i}", content=t, role=r, cause_by=c).dump()
        for i, (t, r, c) in enumerate(zip(texts, data["roles"], data["causes"], strict=False))
    ]
    truth = exact_top10(data["vecs"], data["query_vecs"])
    base_rss = _current_rss_mb()
    index = a_new_index(data["embedding"], DIM)
    out: dict[str, float] = {"n": float(n)}
    if n <= one_max:
        times = a_add_one_at_a_time(index, texts[:n], payloads[:n])
        out["add_one_total_s"] = sum(times)
        out["add_one_ms_mean"] = float(np.mean(times)) * 1e3
        out["add_one_at_n_ms_p50"] = pct(times[-max(1, n // 10) :], 50) * 1e3  # the last tenth: cost at size ~n
    else:
        out["add_batch_ms_per_msg"] = a_add_batch(index, texts[:n], payloads[:n]) * 1e3 / n
        times = a_add_one_at_a_time(index, texts[n:], payloads[n:], start=n)
        out["add_one_at_n_ms_p50"] = pct(times, 50) * 1e3
    times, found = a_search(index, data["query_texts"], data["query_vecs"])
    out["search_dense_p50_ms"] = pct(times, 50) * 1e3
    out["search_dense_p95_ms"] = pct(times, 95) * 1e3
    out["recall10_dense"] = recall_at_10([[int(x[1:]) for x in f] for f in found], truth)
    stored = len(texts)
    observed = texts[:: max(1, stored // 50)][:50] + data["new_texts"][:N_NEW]
    secs, news = a_find_news(index, observed)
    out["find_news_100_ms"], out["find_news_news"] = secs * 1e3, float(news)
    with tempfile.TemporaryDirectory(prefix="a-bench-") as tmp:
        out["persist_s"] = a_persist(index, tmp)
        out["disk_bytes_per_msg"] = dir_bytes(tmp) / stored
        vec_path = Path(tmp) / "q.npy"
        np.save(vec_path, data["query_vecs"][0])
        cmd = [
            *module_cmd("run"),
            "--probe",
            "a",
            "--probe-dir",
            tmp,
            "--probe-query",
            data["query_texts"][0],
            "--probe-vec",
            str(vec_path),
        ]
        res = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800, env=module_env())
        out.update({f"recover_{k}": v for k, v in json.loads(res.stdout.strip().splitlines()[-1]).items()})
    out["rss_before_mb"] = base_rss
    out["peak_rss_mb"] = _rss_mb()
    return out


def probe_a(persist_dir: str, query_text: str, vec_path: str) -> dict[str, float]:
    """Fresh process: load A from its persist dir and answer one query."""
    t0 = time.perf_counter()
    from llama_index.core import StorageContext, load_index_from_storage
    from llama_index.vector_stores.faiss import FaissVectorStore

    emb = lookup_embedding()
    emb.register([query_text], np.load(vec_path)[None, :])
    t1 = time.perf_counter()
    storage = StorageContext.from_defaults(
        persist_dir=persist_dir, vector_store=FaissVectorStore.from_persist_dir(persist_dir)
    )
    index = load_index_from_storage(storage, embed_model=emb)
    t2 = time.perf_counter()
    hits = index.as_retriever(similarity_top_k=10).retrieve(query_text)
    t3 = time.perf_counter()
    assert hits, "A answered nothing"
    return {"import_s": t1 - t0, "open_s": t2 - t1, "first_query_s": t3 - t2, "recover_s": t3 - t1}


def run_b(n: int, seed: int, hnsw: bool) -> dict[str, float]:
    _faiss_one_thread()
    data = worker_data(n, seed)
    truth = exact_top10(data["vecs"], data["query_vecs"])
    with tempfile.TemporaryDirectory(prefix="b-bench-") as tmp:
        out = b_measure(data["vecs"], data["query_vecs"], truth, 1000, hnsw, tmp)
    out["n"] = float(n)
    return out


def run_model(n: int, seed: int, a_local: int) -> dict[str, float]:
    """C (model alone, batched) vs ltm ingest with the same model on the same texts; query embedding time;
    optionally A with the model, one message at a time as MetaGPT embeds them."""
    from bench import ltm_runner as bench_ltm
    from ltm.config import Settings
    from ltm.llm.embeddings import resolve_embedding

    _faiss_one_thread()
    texts, _topics, roles, causes = dataset(n, seed)
    qtexts = [f"what went wrong with {t.split(' ')[3]} {j}" for j, t in enumerate(texts[:50])]
    emb = resolve_embedding(Settings(embedding="local"))
    emb.get_text_embedding_batch(texts[:32])  # warm-up: load weights, first-call allocations
    out: dict[str, float] = {"n": float(n), "c_texts_per_s": c_throughput(emb, texts)}
    out["query_embed_p50_ms"] = pct(c_query_ms(emb, qtexts), 50)
    with tempfile.TemporaryDirectory(prefix="ltm-local-") as tmp:
        out.update(bench_ltm.run_local_model(n, texts, roles, causes, Path(tmp), qtexts))
    out["ltm_vs_c"] = out["ltm_local_texts_per_s"] / out["c_texts_per_s"]
    if a_local:
        index = a_new_index(emb, DIM)
        times = a_add_one_at_a_time(index, texts[:a_local], ["{}"] * a_local)
        out["a_local_one_texts_per_s"] = a_local / sum(times)
    out["peak_rss_mb"] = _rss_mb()
    return out
