"""Hybrid search's feedback step over a flat index: the pooled ranking against a second full scan (issue 15/21).

A hybrid question is searched twice on the dense side (Rocchio feedback: ``ltm.store.search.fusion.feedback_vector``).
Over a flat index the second search ranks the first search's ``FEEDBACK_POOL`` x ``fetch`` nearest instead of
scanning every vector again (``ltm.store.embedded.retrieval._hybrid``). This fills one namespace with ``--n`` real
all-MiniLM-L6-v2 vectors and their texts (made by ``python -m bench.hnsw_real --embed``, outside the repository),
asks the same questions with the pool and with ``FEEDBACK_POOL = 0`` (the full second scan), and reports how
often the top 10 differ, and each way's hybrid p50::

    python -m bench.retrieval.pool_check --texts /tmp/real/texts.txt --work /tmp/real --n 100000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.hnsw_real import HELD_OUT, corpus_embedding, embedded_questions, fill, load_vectors
from bench.ltm_runner import KIND, NAMESPACE


def ask(store: Any, texts: list[str]) -> tuple[list[list[str]], float]:
    found, times = [], []
    for text in texts:
        t0 = time.perf_counter()
        hits = store.search(text, k=10)
        times.append((time.perf_counter() - t0) * 1e3)
        found.append([h.message.id for h in hits])
    return found, statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--held-out", type=int, default=300, help="texts of the corpus never stored, asked as queries")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from ltm.config import Settings
    from ltm.store import MemoryStorage
    from ltm.store.embedded import retrieval

    texts = args.texts.read_text("utf-8").split("\n")
    vecs = load_vectors(args.work, args.n + HELD_OUT)
    queries = texts[args.n:args.n + min(args.held_out, HELD_OUT)]
    asked, asked_vecs = embedded_questions(args.questions, vecs.shape[1])
    emb = corpus_embedding(texts, vecs, asked, asked_vecs)
    out: dict[str, Any] = {"n": args.n, "pool": retrieval.FEEDBACK_POOL}
    pool = retrieval.FEEDBACK_POOL
    with tempfile.TemporaryDirectory(prefix="ltm-pool-check-") as tmp:
        settings = Settings(storage_dir=Path(tmp), embedding="hash")
        store = MemoryStorage(NAMESPACE, kind=KIND, embedding=emb, settings=settings)
        fill(store, texts, args.n)
        for name, qs in (("held-out texts", queries), ("questions", asked)):
            if not qs:
                continue
            ask(store, qs[:5])  # warm
            try:
                retrieval.FEEDBACK_POOL = 0
                full, full_ms = ask(store, qs)
            finally:
                retrieval.FEEDBACK_POOL = pool
            pooled, pooled_ms = ask(store, qs)
            same = sum(a == b for a, b in zip(full, pooled, strict=True))
            overlap = sum(len(set(a) & set(b)) for a, b in zip(full, pooled, strict=True)) / (10 * len(qs))
            out[name] = {"queries": len(qs), "same_top10": same / len(qs), "top10_overlap": overlap,
                         "full_scan_p50_ms": full_ms, "pooled_p50_ms": pooled_ms}
            print(f"{name}: {len(qs)} queries, same top 10 {same}/{len(qs)}, overlap {overlap:.4f}, "
                  f"hybrid p50 {full_ms:.2f} ms (second full scan) -> {pooled_ms:.2f} ms (pool)", flush=True)
        store.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
