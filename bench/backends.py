"""Embedded (SQLite + FAISS) vs PostgreSQL + pgvector, side by side in one run, through the public API.

    python -m bench.backends                                  # 10k and 100k, writers 1 2 4 8
    python -m bench.backends --sizes 10000 --writers 1 2      # quicker
    python -m bench.backends --sizes 1000000 --writers --budget 1800   # 1M, each engine's load cut at 30 min
    python -m bench.backends --dsn postgresql://...           # an external server instead of pgserver
    python -m bench.backends --sizes 1000000 --writers --load bulk     # 1M loaded inside bulk_load
    python -m bench.backends --sizes 10000 --writers --engines postgres partitioned --partitions 16 \
        --namespaces 300 --ns-rows 1000 --load batched     # plain vs partitioned, among 300 indexed namespaces

Content vectors are precomputed unit vectors passed to ``add_batch(vectors=...)`` (no model: this measures
the engines), clustered so that nearest neighbours mean something; contents carry rare tokens so a keyword
query has one right answer. ``hnsw_threshold`` is 20,000 for both engines, so 10k is exact search and 100k
is HNSW on both. recall@10 (dense) is against exact numpy search over the stored vectors; keyword and
hybrid "recall@10" are hit rates: the message a query was made from is in the top 10. find_news(100) is
``best_similarities`` of 100 new vectors (what find_news asks the store), with the share of the 100 whose
best cosine equals the exact one (1e-4). ``--budget`` cuts an engine's batched load after that many
seconds: the row then records how far it got and nothing else (a partial namespace is not that size). Writer scaling:
1, 2, 4, 8 processes each adding messages one at a time (hash embedding) to ONE namespace. ``--load``: the
measured namespace is loaded with plain batches of 1,000 ("batched": on PostgreSQL each row's HNSW insert is in
its batch), inside ``bulk_load`` ("bulk": PostgreSQL builds a new namespace's index once, at the end, timed in),
or "both" (default): batched, then the same corpus bulk-loaded into a second namespace, timed and dropped
(PostgreSQL only; the embedded engine's bulk_load is its batched path). Prints Markdown tables and writes
bench/results/backends-<sizes>.json. Timings are printed, never asserted.

``--partitions N`` adds the engine "partitioned": PostgreSQL with its tables hash-partitioned by namespace into N
(``Settings.store_partitions``), in a second database of the same server. ``--namespaces K`` first fills K other
namespaces of ``--ns-rows`` rows each (inside ``bulk_load``: each gets its own HNSW index from 1,000 rows) in
every PostgreSQL engine, so the measured namespace is one among many; the fill's rows/s is reported too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from bench.measure_store import Precomputed
from ltm import MemoryStorage, Message, Settings

ROOT = Path(__file__).resolve().parent.parent
DIM = 384
WORDS = [chr(c) * 3 for c in range(ord("a"), ord("z") + 1)]  # aaa, bbb, ...: shared, common words


def corpus(n: int, seed: int = 7) -> tuple[list[Message], np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(n // 100, 8), DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    messages = [
        Message(
            f"{WORDS[i % 26]} {WORDS[(i // 26) % 26]} note {i} about tok{i}x{i % 97} and more",
            role="user",
            id=f"m{i}",
            created_at=1.7e9 + i,
        )
        for i in range(n)
    ]
    return messages, vectors


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def load(
    store: MemoryStorage, label: str, messages: list[Message], vectors: np.ndarray, budget: float | None, bulk: bool
) -> dict[str, Any]:
    """Add the corpus in batches of 1,000 (inside ``bulk_load`` when ``bulk``, the index build at its end timed
    too); the load's figures, or how far it got when ``budget`` seconds ran out (``cut``)."""
    n, out = len(messages), {}
    start = time.perf_counter()
    with store.bulk_load() if bulk else contextlib.nullcontext():
        for i in range(0, n, 1000):
            store.add_batch(messages[i : i + 1000], vectors=vectors[i : i + 1000])
            spent = time.perf_counter() - start
            if budget is not None and spent > budget and i + 1000 < n:
                print(f"{label} {n}: load cut after {spent:.0f} s at {i + 1000} rows", file=sys.stderr, flush=True)
                return {"loaded": i + 1000, "load_s": spent, "per_s": (i + 1000) / spent, "cut": True}
            if (i // 1000) % 50 == 49:
                print(f"{label} {n}: {i + 1000} rows in {spent:.0f} s", file=sys.stderr, flush=True)
        out["rows_s"] = time.perf_counter() - start  # the batches alone (bulk: before the index build)
    out["load_s"] = time.perf_counter() - start
    out["per_s"] = n / out["load_s"]
    return out


def fill(label: str, settings: Settings, namespaces: int, rows: int) -> dict[str, Any]:
    """``namespaces`` namespaces of ``rows`` rows each (one bulk_load each, batches of 1,000): the crowd the
    measured namespace sits in. Timed as a whole (index builds included)."""
    start = time.perf_counter()
    for i in range(namespaces):
        messages, vectors = corpus(rows, seed=1000 + i)
        store = MemoryStorage(f"crowd{i}", settings=settings, embedding=Precomputed())
        load(store, label, messages, vectors, None, bulk=True)
        store.close()
        if i % 50 == 49:
            print(
                f"{label}: {i + 1} crowd namespaces in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True
            )
    spent = time.perf_counter() - start
    return {
        "engine": label,
        "namespaces": namespaces,
        "rows": rows,
        "fill_s": spent,
        "fill_rows_s": namespaces * rows / spent,
    }


def partitioned_database(dsn: str, server: Any) -> str:
    """The URL of an empty database ``ltm_partitioned`` beside ``dsn``'s (created)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS ltm_partitioned")
        conn.execute("CREATE DATABASE ltm_partitioned")
    if server is not None:
        return str(server.get_uri(database="ltm_partitioned"))
    return urlunsplit(urlsplit(dsn)._replace(path="/ltm_partitioned"))


def measure(
    label: str, settings: Settings, n: int, budget: float | None = None, efs: tuple[int, ...] = (), how: str = "batched"
) -> dict[str, Any]:
    """One engine at ``n`` messages. ``how``: "batched" loads the measured namespace with plain batches (each
    row's HNSW insert in its batch), "bulk" inside ``bulk_load`` (PostgreSQL builds a new namespace's index
    after the load; the embedded engine writes as ever), "both": batched, then a bulk load of the same corpus
    into a second namespace, timed and dropped (PostgreSQL only: on the embedded engine it is the same path)."""
    messages, vectors = corpus(n)
    out: dict[str, Any] = {"engine": label, "n": n, "load_mode": how}
    store = MemoryStorage(f"bench{n}", settings=settings, embedding=Precomputed())
    loaded = load(store, label, messages, vectors, budget, bulk=how == "bulk")
    out.update(load_s=loaded["load_s"], add_batched_per_s=loaded["per_s"])
    if loaded.get("cut"):
        out.update(loaded=loaded["loaded"], cut=True)
        store.close()
        return out
    if how == "bulk":
        out["bulk_rows_s"] = loaded["rows_s"]
    singles, extra = [], corpus(200, seed=99)
    for m, v in zip(*extra, strict=True):
        m = Message(m.content + " single", id="s" + m.id, role="user")
        t = time.perf_counter()
        store.add_batch([m], vectors=v[None, :])
        singles.append((time.perf_counter() - t) * 1000)
    out["add_one_p50_ms"], out["add_one_p95_ms"] = pct(singles, 50), pct(singles, 95)
    stored = np.vstack([vectors, extra[1]])
    stored = stored.astype(np.float16).astype(np.float32)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    ids = [m.id for m in messages] + ["s" + m.id for m in extra[0]]
    rng = np.random.default_rng(3)
    picks = rng.choice(n, 100, replace=False)
    for mode in ("dense", "keyword", "hybrid"):
        times, hits = [], 0
        for p in picks:
            qv = vectors[p] + 0.3 * rng.standard_normal(DIM).astype(np.float32)
            qv /= np.linalg.norm(qv)
            text = f"tok{p}x{p % 97}" if mode != "dense" else f"dense query {p}"
            Precomputed.table[text] = qv.tolist()  # the query's "embedding" is a lookup: the engine is timed
            t = time.perf_counter()
            found = store.search(text, k=10, mode=mode)
            times.append((time.perf_counter() - t) * 1000)
            got = [h.message.id for h in found]
            if mode == "dense":
                truth = {ids[i] for i in _exact_top10(stored, qv)}
                hits += len(truth & set(got))
            else:
                hits += 10 * (messages[p].id in got)
        out[f"{mode}_p50_ms"], out[f"{mode}_p95_ms"] = pct(times, 50), pct(times, 95)
        out[f"{mode}_recall10"] = hits / (10 * len(picks))
    common = []
    for i in range(40):  # two common words: one in 1/26 of the rows, one ("note") in every row
        t = time.perf_counter()
        store.search(f"{WORDS[i % 26]} note", k=10, mode="keyword")
        common.append((time.perf_counter() - t) * 1000)
    out["keyword_common_p50_ms"], out["keyword_common_p95_ms"] = pct(common, 50), pct(common, 95)
    for ef in efs:
        swept = MemoryStorage(f"bench{n}", settings=settings.with_(hnsw_ef_search=ef), embedding=Precomputed())
        times, hits = [], 0
        for p in picks:
            qv = np.asarray(Precomputed.table[f"dense query {p}"], dtype=np.float32)
            t = time.perf_counter()
            found = swept.search(f"dense query {p}", k=10, mode="dense")
            times.append((time.perf_counter() - t) * 1000)
            hits += len({ids[i] for i in _exact_top10(stored, qv)} & {h.message.id for h in found})
        out.setdefault("ef", []).append(
            {"ef": ef, "p50_ms": pct(times, 50), "p95_ms": pct(times, 95), "recall10": hits / (10 * len(picks))}
        )
        swept.close()
    stats = []
    for _ in range(5):
        t = time.perf_counter()
        store.stats()
        stats.append((time.perf_counter() - t) * 1000)
    out["stats_ms"] = statistics.median(stats)
    news = vectors[rng.choice(n, 100, replace=False)] + 0.05 * rng.standard_normal((100, DIM)).astype(np.float32)
    news /= np.linalg.norm(news, axis=1, keepdims=True)
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        best = store.best_similarities(news)
        runs.append((time.perf_counter() - t) * 1000)
    out["find_news100_ms"] = statistics.median(runs)
    exact = np.hstack(
        [(news @ stored[i : i + 100_000].T).max(axis=1, keepdims=True) for i in range(0, len(stored), 100_000)]
    ).max(axis=1)
    out["find_news_exact"] = float(np.mean(np.abs(best - exact) < 1e-4))
    store.close()
    recovers = []
    for _ in range(3):
        t = time.perf_counter()
        again = MemoryStorage(settings=settings)
        again.recover_memory(f"bench{n}")
        recovers.append((time.perf_counter() - t) * 1000)
        again.close()
    out["recover_ms"] = statistics.median(recovers)
    if how == "both" and settings.store_url:  # last: nothing above runs beside this load (kept, not deleted:
        other = MemoryStorage(f"bulk{n}", settings=settings, embedding=Precomputed())  # a delete's vacuum would)
        bulk = load(other, label + " bulk", messages, vectors, budget, bulk=True)
        out.update(
            bulk_per_s=bulk["per_s"],
            bulk_load_s=bulk["load_s"],
            bulk_rows_s=bulk.get("rows_s"),
            bulk_cut=bool(bulk.get("cut")),
        )
        other.close()
    return out


def _exact_top10(stored: np.ndarray, qv: np.ndarray) -> np.ndarray:
    """Positions of the 10 stored vectors nearest ``qv`` (in chunks: a 1M x 384 product is 1.5 GB)."""
    scores = np.concatenate([stored[i : i + 200_000] @ qv for i in range(0, len(stored), 200_000)])
    top: np.ndarray = np.argpartition(-scores, 10)[:10]
    return top


def writers(label: str, settings: Settings, procs: int, each: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    if settings.store_url:
        env["LTM_STORE_URL"] = settings.store_url
        env["LTM_STORE_PARTITIONS"] = str(settings.store_partitions)
    namespace = f"w{procs}-{time.time_ns()}"
    cmd = [sys.executable, "-m", "bench.backend_writer", str(settings.storage_dir), namespace, str(each)]
    running = [
        subprocess.Popen([*cmd, f"p{i}"], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE) for i in range(procs)
    ]
    latencies: list[float] = []
    spans: list[tuple[float, float]] = []
    for proc in running:
        out, _ = proc.communicate(timeout=1800)
        assert proc.returncode == 0, f"writer failed: {out[-500:]}"
        report = json.loads(out.strip().splitlines()[-1])
        latencies.extend(report["latencies"])
        spans.append((report["first"], report["last"]))
    # from the first add of any writer to the last add of any: process start-up and store opening excluded
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    check = MemoryStorage(namespace, settings=settings.with_(embedding="hash"))
    count = check.count()
    check.close()
    return {
        "engine": label,
        "writers": procs,
        "adds": count,
        "lost": procs * each - count,
        "throughput_per_s": procs * each / wall,
        "p50_ms": pct(latencies, 50),
        "p99_ms": pct(latencies, 99),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--writers", type=int, nargs="*", default=[1, 2, 4, 8])
    parser.add_argument("--each", type=int, default=200, help="adds per writer process")
    parser.add_argument("--dsn", help="external PostgreSQL (default: a private pgserver)")
    parser.add_argument("--budget", type=float, help="seconds an engine may spend on its batched load per size")
    parser.add_argument("--tag", default="", help="suffix of the results file name")
    parser.add_argument("--engines", nargs="*", default=["embedded", "postgres"], help="which engines to run")
    parser.add_argument("--efs", type=int, nargs="*", default=[], help="also dense p50 / recall@10 at these ef_search")
    parser.add_argument(
        "--load",
        choices=("batched", "bulk", "both"),
        default="both",
        help="how the measured namespace is loaded (see measure)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=0,
        help="add the engine 'partitioned': PostgreSQL hash-partitioned by namespace into N",
    )
    parser.add_argument(
        "--pg-graph",
        type=int,
        nargs=2,
        metavar=("M", "EF_CONSTRUCTION"),
        help="PostgreSQL HNSW build parameters (Settings.store_hnsw_m / store_hnsw_ef_construction; "
        "default pgvector's 16 64)",
    )
    parser.add_argument("--namespaces", type=int, default=0, help="other namespaces filled first (PostgreSQL)")
    parser.add_argument("--ns-rows", type=int, default=1000, help="rows of each of those namespaces")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # kill: still stop the private server, drop the files
    tmp = Path(tempfile.mkdtemp(prefix="ltm-bench-backends-"))
    server = None
    dsn = args.dsn
    if dsn is None:
        from pgserver.postgres_server import get_server

        server = get_server(tmp / "pg", cleanup_mode="delete")
        dsn = str(server.get_uri())
    base = Settings(storage_dir=tmp / "storage", embedding="hash", hnsw_threshold=20_000)
    graph = {"store_hnsw_m": args.pg_graph[0], "store_hnsw_ef_construction": args.pg_graph[1]} if args.pg_graph else {}
    every = {"embedded": base, "postgres": base.with_(store_url=dsn, **graph)}
    if args.partitions:
        every["partitioned"] = base.with_(
            store_url=partitioned_database(dsn, server), store_partitions=args.partitions, **graph
        )
    engines = {k: v for k, v in every.items() if k in args.engines}
    results: dict[str, Any] = {"argv": sys.argv[1:], "load": os.getloadavg(), "sizes": [], "writers": [], "crowds": []}
    try:
        for label, settings in engines.items():
            if args.namespaces and settings.store_url:
                row = fill(label, settings, args.namespaces, args.ns_rows)
                results["crowds"].append(row)
                print(json.dumps(row), flush=True)
        for n in args.sizes:
            for label, settings in engines.items():
                row = measure(label, settings, n, args.budget, tuple(args.efs), args.load)
                results["sizes"].append(row)
                print(json.dumps(row), flush=True)
        for procs in args.writers:
            for label, settings in engines.items():
                row = writers(label, settings, procs, args.each)
                results["writers"].append(row)
                print(json.dumps(row), flush=True)
    finally:
        if server is not None:
            from ltm.store.pg.pool import close_pools

            close_pools()
            server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)  # the embedded namespaces: 3.5 GB at 1M
    results["load_after"] = os.getloadavg()
    out = ROOT / "bench" / "results" / ("backends-" + "-".join(str(n) for n in args.sizes) + args.tag + ".json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(table(results))


def loads(results: dict[str, Any]) -> list[str]:
    """The load table: batched (each row's HNSW insert in its batch) and bulk_load (index built at the end)."""
    lines = ["| engine | n | load | rows/s (index build included) | batches s | total s |", "|---|---|---|---|---|---|"]
    for r in results["sizes"]:
        if r.get("cut"):
            continue
        kind = "bulk_load" if r.get("load_mode") == "bulk" else "batched"
        rows_s = f"{r['bulk_rows_s']:.1f}" if kind == "bulk_load" else "–"
        lines.append(
            f"| {r['engine']} | {r['n']:,} | {kind} | {r['add_batched_per_s']:,.0f} | {rows_s} | {r['load_s']:.1f} |"
        )
        if "bulk_per_s" in r and not r.get("bulk_cut"):
            lines.append(
                f"| {r['engine']} | {r['n']:,} | bulk_load | {r['bulk_per_s']:,.0f} | "
                f"{r['bulk_rows_s']:.1f} | {r['bulk_load_s']:.1f} |"
            )
    return [*lines, ""]


def crowds(results: dict[str, Any]) -> list[str]:
    """The fill of the other namespaces (``--namespaces``), per engine."""
    if not results.get("crowds"):
        return []
    lines = [
        "| engine | namespaces x rows filled | rows/s (bulk_load, index builds included) | s |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['engine']} | {r['namespaces']:,} x {r['rows']:,} | {r['fill_rows_s']:,.0f} | {r['fill_s']:.0f} |"
        for r in results["crowds"]
    ]
    return [*lines, ""]


def table(results: dict[str, Any]) -> str:
    lines = [
        *crowds(results),
        *loads(results),
        "| engine | n | add batched /s | add one p50 ms | dense p50/p95 ms | dense recall@10 | keyword p50/p95 ms "
        "| keyword hit@10 | hybrid p50/p95 ms | hybrid hit@10 | find_news(100) ms (exact share) | recover ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["sizes"]:
        if r.get("cut"):
            lines.append(
                f"| {r['engine']} | {r['n']:,} | {r['add_batched_per_s']:,.0f} (cut: {r['loaded']:,} rows in "
                f"{r['load_s']:.0f} s) | – | – | – | – | – | – | – | – | – |"
            )
            continue
        lines.append(
            f"| {r['engine']} | {r['n']:,} | {r['add_batched_per_s']:,.0f} | {r['add_one_p50_ms']:.2f} | "
            f"{r['dense_p50_ms']:.2f} / {r['dense_p95_ms']:.2f} | {r['dense_recall10']:.3f} | "
            f"{r['keyword_p50_ms']:.2f} / {r['keyword_p95_ms']:.2f} | {r['keyword_recall10']:.2f} | "
            f"{r['hybrid_p50_ms']:.2f} / {r['hybrid_p95_ms']:.2f} | {r['hybrid_recall10']:.2f} | "
            f"{r['find_news100_ms']:.1f} ({r['find_news_exact']:.2f}) | {r['recover_ms']:.0f} |"
        )
    lines += ["", "| engine | n | keyword, two common words, p50/p95 ms | stats() ms |", "|---|---|---|---|"]
    for r in results["sizes"]:
        if not r.get("cut"):
            lines.append(
                f"| {r['engine']} | {r['n']:,} | {r['keyword_common_p50_ms']:.2f} / "
                f"{r['keyword_common_p95_ms']:.2f} | {r['stats_ms']:.2f} |"
            )
    if any(r.get("ef") for r in results["sizes"]):
        lines += ["", "| engine | n | ef_search | dense p50/p95 ms | dense recall@10 |", "|---|---|---|---|---|"]
        for r in results["sizes"]:
            for e in r.get("ef", []):
                lines.append(
                    f"| {r['engine']} | {r['n']:,} | {e['ef']} | {e['p50_ms']:.2f} / {e['p95_ms']:.2f} | "
                    f"{e['recall10']:.3f} |"
                )
    lines += [
        "",
        "| engine | writers | adds stored / lost | throughput adds/s | p50 ms | p99 ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in results["writers"]:
        lines.append(
            f"| {r['engine']} | {r['writers']} | {r['adds']} / {r['lost']} | {r['throughput_per_s']:,.0f} | "
            f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
