"""The ltm side of bench/run.py: MemoryStorage and LongTermMemory measured through their public API.

Precomputed-vector runs feed the store a :class:`bench_data.LookupEmbedding`, so the times are the store's
own work per message (validation, SQLite commit with FTS5, FAISS add, snapshots), not the model's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import module_cmd, module_env
from bench.baselines import dir_bytes, pct, recall_at_10
from ltm.config import Settings
from ltm.message import Message

NAMESPACE = "bench"
KIND = "role"
BATCH = 1000
THREADS = 8  # concurrent callers adding one message per call (their adds are group-committed)


def messages(texts: list[str], roles: list[str], causes: list[str], start: int = 0) -> list[Message]:
    return [
        Message(id=f"m{start + j}", content=t, role=r, cause_by=c, sent_from=r)
        for j, (t, r, c) in enumerate(zip(texts, roles, causes, strict=True))
    ]


def open_store(storage_dir: Path, embedding: Any, settings_kind: str = "hash", behind: bool = False) -> Any:
    from ltm.store import MemoryStorage

    settings = Settings(storage_dir=storage_dir, embedding=settings_kind, **({"write_behind": True} if behind else {}))
    return MemoryStorage(NAMESPACE, kind=KIND, settings=settings, embedding=embedding)


def writes_behind() -> bool:
    """True when this ltm has ``Settings.write_behind`` (the baseline's does not)."""
    return "write_behind" in Settings.model_fields


def settled(store: Any) -> float:
    """Seconds until every added message has its vector (``count`` waits for write-behind's pending ones)."""
    t0 = time.perf_counter()
    store.count()
    return time.perf_counter() - t0


def hit_index(hit: Any) -> int:
    """Dataset row of a search hit (message ids are ``m<row>``)."""
    msg = getattr(hit, "message", hit)
    return int(str(msg.id)[1:])


def add_one_at_a_time(store: Any, msgs: list[Message]) -> list[float]:
    times = []
    for m in msgs:
        t0 = time.perf_counter()
        store.add(m)
        times.append(time.perf_counter() - t0)
    return times


def add_concurrently(store: Any, msgs: list[Message], threads: int = THREADS) -> float:
    """Seconds for ``threads`` threads to add ``msgs``, one message per ``add`` call, each call returning once
    its message is durable (the store commits concurrent adds together: ltm.store.group)."""
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        added = sum(pool.map(store.add, msgs))
    elapsed = time.perf_counter() - t0
    assert added == len(msgs), f"{len(msgs) - added} concurrent adds were not stored"
    return elapsed


def per_commit(store: Any) -> float | None:
    """Adds per transaction so far (None for a store without group commit, e.g. the baseline's)."""
    grouped = getattr(store, "_adds", None)
    return grouped.items / max(grouped.groups, 1) if grouped is not None else None


def add_batches(store: Any, msgs: list[Message], batch: int = BATCH) -> float:
    t0 = time.perf_counter()
    for start in range(0, len(msgs), batch):
        store.add_batch(msgs[start : start + batch])
    return time.perf_counter() - t0


def search_latency(
    store: Any, query_texts: list[str], mode: str, k: int = 10, budget_s: float = 30.0
) -> tuple[list[float], list[list[int]]]:
    """Per-query seconds and hit rows; stops after ``budget_s`` once 20 queries ran (slow modes at 1M)."""
    times: list[float] = []
    found: list[list[int]] = []
    for q in query_texts:
        if len(times) >= 20 and sum(times) > budget_s:
            break
        t0 = time.perf_counter()
        hits = store.search(q, k=k, mode=mode)
        times.append(time.perf_counter() - t0)
        found.append([hit_index(h) for h in hits])
    return times, found


def find_news_time(store: Any, observed: list[Message]) -> tuple[float, int]:
    """``LongTermMemory.find_news`` over ``observed`` against the store (one call); (seconds, news found)."""
    from ltm.longterm import LongTermMemory

    ltm = LongTermMemory(memory_storage=store)  # empty short-term memory: every observed message reaches the store
    t0 = time.perf_counter()
    news = ltm.find_news(observed)
    return time.perf_counter() - t0, len(news)


def recover_probe(storage_dir: Path, query_text: str, query_vec: np.ndarray, tmp: Path) -> dict[str, float]:
    """Open the namespace in a fresh Python process and time open -> first answered query."""
    vec_path = tmp / "recover_query.npy"
    np.save(vec_path, query_vec.astype(np.float32))
    cmd = module_cmd(
        "run",
        "--probe",
        "ltm",
        "--probe-dir",
        str(storage_dir),
        "--probe-query",
        query_text,
        "--probe-vec",
        str(vec_path),
    )
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600, env=module_env())
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def probe_main(storage_dir: Path, query_text: str, vec_path: Path) -> dict[str, float]:
    """Run inside the fresh process: imports timed apart from open + first query."""
    t0 = time.perf_counter()
    import ltm.store  # noqa: F401  (timed as import cost)
    from bench.data import lookup_embedding

    emb = lookup_embedding()
    emb.register([query_text], np.load(vec_path)[None, :])
    t1 = time.perf_counter()
    store = open_store(storage_dir, emb)
    t2 = time.perf_counter()
    hits = store.search(query_text, k=10, mode="dense")
    t3 = time.perf_counter()
    hybrid = store.search(query_text, k=10, mode="hybrid")
    t4 = time.perf_counter()
    assert hits and hybrid, "the recovered store answered nothing"
    count = store.count()
    store.close()
    return {
        "import_s": t1 - t0,
        "open_s": t2 - t1,
        "first_query_s": t3 - t2,
        "recover_s": t3 - t1,
        "second_hybrid_s": t4 - t3,
        "count": float(count),
    }


def run_precomputed(
    n: int, seed: int, tmp: Path, data: dict[str, Any], one_at_a_time_max: int, extra_one: int
) -> dict[str, float]:
    """ltm with precomputed vectors at size ``n`` (data from bench.workers.worker_data)."""
    texts, roles, causes = data["texts"], data["roles"], data["causes"]
    emb = data["embedding"]
    out: dict[str, float] = {"n": float(n)}
    base = tmp / "ltm"
    msgs = messages(texts[:n], roles[:n], causes[:n])
    extra = messages(
        data["extra_texts"][:extra_one], data["extra_roles"][:extra_one], data["extra_causes"][:extra_one], start=n
    )

    if n <= one_at_a_time_max:  # one-at-a-time from empty, the MetaGPT arrival pattern
        store = open_store(base / "one", emb)
        times = add_one_at_a_time(store, msgs)
        out["add_one_total_s"] = sum(times)
        out["add_one_ms_mean"] = float(np.mean(times)) * 1e3
        out["add_one_ms_p50"] = pct(times, 50) * 1e3
        store.close()
        store = open_store(base / "threads", emb)  # the same arrivals from THREADS callers at once
        out["add_threads_total_s"] = add_concurrently(store, msgs)
        if (grouped := per_commit(store)) is not None:
            out["add_threads_per_commit"] = grouped
        store.close()
        if writes_behind():  # the same two with write_behind, timed until the last vector is in
            store = open_store(base / "one_behind", emb, behind=True)
            out["add_one_behind_total_s"] = sum(add_one_at_a_time(store, msgs)) + settled(store)
            store.close()
            store = open_store(base / "threads_behind", emb, behind=True)
            out["add_threads_behind_total_s"] = add_concurrently(store, msgs) + settled(store)
            store.close()

    store = open_store(base / "batch", emb)
    total = add_batches(store, msgs)
    out["add_batch_ms_per_msg"] = total * 1e3 / n
    times = add_one_at_a_time(store, extra)  # marginal one-at-a-time cost at size n
    out["add_one_at_n_ms_p50"] = pct(times, 50) * 1e3
    out["add_one_at_n_ms_mean"] = float(np.mean(times)) * 1e3

    qtexts, truth = data["query_texts"], data["truth"]
    for mode in ("dense", "hybrid", "keyword"):
        times, found = search_latency(store, qtexts, mode)
        out[f"search_{mode}_p50_ms"] = pct(times, 50) * 1e3
        out[f"search_{mode}_p95_ms"] = pct(times, 95) * 1e3
        out[f"search_{mode}_queries"] = float(len(times))
        if mode == "dense":
            out["recall10_dense"] = recall_at_10(found, truth[: len(found)])

    seen = msgs[:: max(1, n // 50)][:50]
    observed = [Message(id=f"o{j}", content=m.content, role=m.role, cause_by=m.cause_by) for j, m in enumerate(seen)]
    observed += messages(data["new_texts"][:50], roles[:50], causes[:50], start=10 * n + 10_000_000)
    try:
        secs, news = find_news_time(store, observed)
        out["find_news_100_ms"] = secs * 1e3
        out["find_news_news"] = float(news)
    except Exception as exc:  # report, don't hide: the table shows the field missing and the log says why
        print(f"find_news not measured: {exc!r}", file=sys.stderr)

    del_times = []
    for m in msgs[1 : n : max(1, n // 100)][:100]:
        t0 = time.perf_counter()
        store.delete(m.id)
        del_times.append(time.perf_counter() - t0)
    out["delete_ms_p50"] = pct(del_times, 50) * 1e3
    t0 = time.perf_counter()
    store.persist()
    out["persist_s"] = time.perf_counter() - t0
    store.close()
    live = n + len(extra) - len(del_times)
    out["disk_bytes_per_msg"] = dir_bytes(base / "batch") / live
    for f in (base / "batch").rglob("*"):
        if f.is_file():  # where the bytes go (memory.sqlite, index.faiss, manifest.json, WAL)
            out[f"disk_{f.name}_bytes_per_msg"] = f.stat().st_size / live
    qi = 0
    probe = recover_probe(base / "batch", qtexts[qi], data["query_vecs"][qi], tmp)
    out.update({f"recover_{k}": v for k, v in probe.items()})
    return out


class _TimedSession:
    """Wraps an ONNX Runtime session: counts the seconds spent in the model itself."""

    def __init__(self, session: Any) -> None:
        self.session, self.seconds = session, 0.0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.session.run(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0


def run_local_model(
    n: int, texts: list[str], roles: list[str], causes: list[str], tmp: Path, query_texts: list[str], singles: int = 200
) -> dict[str, float]:
    """ltm ingest with the real local model, as texts/s: ``add_batch`` (batches of 1000), one message per
    ``add`` call from one thread, and from THREADS threads at once; plus end-to-end hybrid search. With the
    ONNX runtime, the share of each ingest spent outside the model run (tokenising included) is reported too."""
    from ltm.llm.embeddings import resolve_embedding

    settings = Settings(storage_dir=tmp / f"ltm_local_{n}", embedding="local")
    emb: Any = resolve_embedding(settings)
    runtime: Any = getattr(emb, "model", None)  # OnnxEmbedding's OnnxModel holds the ONNX session
    timed = _TimedSession(runtime._session) if hasattr(runtime, "_session") else None
    if timed is not None:
        runtime._session = timed
    from ltm.store import MemoryStorage

    out: dict[str, float] = {}

    def ingest(name: str, count: int, add: Any, behind: bool = False) -> None:
        chosen = settings.model_copy(update={"write_behind": True}) if behind else settings
        store = MemoryStorage(f"{NAMESPACE}-{name}", kind=KIND, settings=chosen, embedding=emb)
        model_before = timed.seconds if timed is not None else 0.0
        total = add(store) + (settled(store) if behind else 0.0)  # write-behind: until the last vector is in
        out[f"ltm_local_{name}texts_per_s"] = count / total
        if timed is not None:
            out[f"ltm_local_{name}outside_model_share"] = 1 - (timed.seconds - model_before) / total
        if name == "":
            times, _found = search_latency(store, query_texts[:50], "hybrid")
            out["ltm_local_search_hybrid_p50_ms"] = pct(times, 50) * 1e3
        store.close()

    ingest("", n, lambda store: add_batches(store, messages(texts[:n], roles[:n], causes[:n])))
    one = messages(texts[:singles], roles[:singles], causes[:singles], start=n)
    ingest("one_", singles, lambda store: sum(add_one_at_a_time(store, one)))
    more = messages(texts[: 2 * singles], roles[: 2 * singles], causes[: 2 * singles], start=2 * n)
    ingest("threads_", 2 * singles, lambda store: add_concurrently(store, more))
    if writes_behind():
        again = messages(texts[:singles], roles[:singles], causes[:singles], start=3 * n)
        ingest("one_behind_", singles, lambda store: sum(add_one_at_a_time(store, again)), behind=True)
        most = messages(texts[: 2 * singles], roles[: 2 * singles], causes[: 2 * singles], start=4 * n)
        ingest("threads_behind_", 2 * singles, lambda store: add_concurrently(store, most), behind=True)
    if timed is not None:
        runtime._session = timed.session
    return out
