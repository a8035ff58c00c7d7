"""Embedded (SQLite + FAISS) vs PostgreSQL + pgvector, side by side in one run, through the public API.

    python -m bench.backends                                  # 10k and 100k, writers 1 2 4 8
    python -m bench.backends --sizes 10000 --writers 1 2      # quicker
    python -m bench.backends --dsn postgresql://...           # an external server instead of pgserver

Content vectors are precomputed unit vectors passed to ``add_batch(vectors=...)`` (no model: this measures
the engines), clustered so that nearest neighbours mean something; contents carry rare tokens so a keyword
query has one right answer. ``hnsw_threshold`` is 20,000 for both engines, so 10k is exact search and 100k
is HNSW on both. recall@10 (dense) is against exact numpy search over the stored vectors; keyword and
hybrid "recall@10" are hit rates: the message a query was made from is in the top 10. Writer scaling:
1, 2, 4, 8 processes each adding messages one at a time (hash embedding) to ONE namespace. Prints a
Markdown table and writes bench/results/backends.json. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    messages = [Message(f"{WORDS[i % 26]} {WORDS[(i // 26) % 26]} note {i} about tok{i}x{i % 97} and more",
                        role="user", id=f"m{i}", created_at=1.7e9 + i) for i in range(n)]
    return messages, vectors


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def measure(label: str, settings: Settings, n: int) -> dict[str, Any]:
    messages, vectors = corpus(n)
    out: dict[str, Any] = {"engine": label, "n": n}
    store = MemoryStorage(f"bench{n}", settings=settings, embedding=Precomputed())
    start = time.perf_counter()
    for i in range(0, n, 1000):
        store.add_batch(messages[i:i + 1000], vectors=vectors[i:i + 1000])
    out["add_batched_per_s"] = n / (time.perf_counter() - start)
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
                truth = {ids[i] for i in np.argsort(-(stored @ qv))[:10]}
                hits += len(truth & set(got))
            else:
                hits += 10 * (messages[p].id in got)
        out[f"{mode}_p50_ms"], out[f"{mode}_p95_ms"] = pct(times, 50), pct(times, 95)
        out[f"{mode}_recall10"] = hits / (10 * len(picks))
    news = vectors[rng.choice(n, 100, replace=False)] + 0.05 * rng.standard_normal((100, DIM)).astype(np.float32)
    news /= np.linalg.norm(news, axis=1, keepdims=True)
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        store.best_similarities(news)
        runs.append((time.perf_counter() - t) * 1000)
    out["find_news100_ms"] = statistics.median(runs)
    store.close()
    recovers = []
    for _ in range(3):
        t = time.perf_counter()
        again = MemoryStorage(settings=settings)
        again.recover_memory(f"bench{n}")
        recovers.append((time.perf_counter() - t) * 1000)
        again.close()
    out["recover_ms"] = statistics.median(recovers)
    return out


def writers(label: str, settings: Settings, procs: int, each: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    if settings.store_url:
        env["LTM_STORE_URL"] = settings.store_url
    namespace = f"w{procs}-{time.time_ns()}"
    cmd = [sys.executable, "-m", "bench.backend_writer", str(settings.storage_dir), namespace, str(each)]
    running = [subprocess.Popen([*cmd, f"p{i}"], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE)
               for i in range(procs)]
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
    return {"engine": label, "writers": procs, "adds": count, "lost": procs * each - count,
            "throughput_per_s": procs * each / wall, "p50_ms": pct(latencies, 50), "p99_ms": pct(latencies, 99)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--writers", type=int, nargs="*", default=[1, 2, 4, 8])
    parser.add_argument("--each", type=int, default=200, help="adds per writer process")
    parser.add_argument("--dsn", help="external PostgreSQL (default: a private pgserver)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ltm-bench-backends-"))
    server = None
    dsn = args.dsn
    if dsn is None:
        from pgserver.postgres_server import get_server

        server = get_server(tmp / "pg", cleanup_mode="delete")
        dsn = str(server.get_uri())
    base = Settings(storage_dir=tmp / "storage", embedding="hash", hnsw_threshold=20_000)
    engines = {"embedded": base, "postgres": base.with_(store_url=dsn)}
    results: dict[str, Any] = {"load": os.getloadavg(), "sizes": [], "writers": []}
    try:
        for n in args.sizes:
            for label, settings in engines.items():
                row = measure(label, settings, n)
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
    results["load_after"] = os.getloadavg()
    out = ROOT / "bench" / "results" / "backends.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(table(results))


def table(results: dict[str, Any]) -> str:
    lines = ["| engine | n | add batched /s | add one p50 ms | dense p50/p95 ms | dense recall@10 | keyword p50/p95 ms "
             "| keyword hit@10 | hybrid p50/p95 ms | hybrid hit@10 | find_news(100) ms | recover ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["sizes"]:
        lines.append(f"| {r['engine']} | {r['n']:,} | {r['add_batched_per_s']:,.0f} | {r['add_one_p50_ms']:.2f} | "
                     f"{r['dense_p50_ms']:.2f} / {r['dense_p95_ms']:.2f} | {r['dense_recall10']:.3f} | "
                     f"{r['keyword_p50_ms']:.2f} / {r['keyword_p95_ms']:.2f} | {r['keyword_recall10']:.2f} | "
                     f"{r['hybrid_p50_ms']:.2f} / {r['hybrid_p95_ms']:.2f} | {r['hybrid_recall10']:.2f} | "
                     f"{r['find_news100_ms']:.1f} | {r['recover_ms']:.0f} |")
    lines += ["", "| engine | writers | adds stored / lost | throughput adds/s | p50 ms | p99 ms |",
              "|---|---|---|---|---|---|"]
    for r in results["writers"]:
        lines.append(f"| {r['engine']} | {r['writers']} | {r['adds']} / {r['lost']} | {r['throughput_per_s']:,.0f} | "
                     f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
