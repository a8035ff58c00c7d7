"""Same-load A/B of the store's HNSW path: whichever ``ltm`` is first on ``sys.path`` (so one command measures any
version), ``n`` bench messages (precomputed vectors, lookup embedding) with HNSW from ``threshold``.

Prints one JSON line: store work per message in batches of 1000 (and its HNSW part, past the threshold), dense
search p50/p95 over 200 queries and recall@10 against exact search, bytes per message on disk. Run the versions
interleaved, e.g. ltm at 0703872 (``git archive 0703872 ltm | tar -x -C /tmp/base``) against this tree:

    cd /tmp/base && PYTHONPATH=/tmp/base:$REPO python -m bench.probes.hnsw_ab 60000 20000
    cd $REPO && PYTHONPATH=$REPO python -m bench.probes.hnsw_ab 60000 20000
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

from bench.data import dataset, lookup_embedding, query_set, vectors
from ltm.config import Settings
from ltm.message import Message
from ltm.store import MemoryStorage


def main(n: int, threshold: int) -> dict[str, object]:
    faiss.omp_set_num_threads(1)
    texts, topics, _, _ = dataset(n, 7)
    vecs = vectors(topics, 7)
    qtexts, qvecs = query_set(vecs, 200, 7)
    exact = faiss.IndexFlatIP(vecs.shape[1])
    exact.add(vecs)
    truth = exact.search(qvecs, 10)[1]
    emb = lookup_embedding()
    emb.register(texts, vecs)
    emb.register(qtexts, qvecs)
    root = Path(tempfile.mkdtemp(prefix="hnsw-ab-"))
    store = MemoryStorage("ab", settings=Settings(storage_dir=root, hnsw_threshold=threshold), embedding=emb)
    msgs = [Message(id=f"m{i}", content=t) for i, t in enumerate(texts)]
    start, hnsw = time.perf_counter(), 0.0
    for at in range(0, n, 1000):
        t0 = time.perf_counter()
        store.add_batch(msgs[at : at + 1000])
        hnsw += time.perf_counter() - t0 if at >= threshold else 0.0
    total = time.perf_counter() - start
    assert store.stats().index == "hnsw"
    times, hits = [], 0
    for query, want in zip(qtexts, truth, strict=True):
        t0 = time.perf_counter()
        found = store.search(query, k=10, mode="dense")
        times.append(time.perf_counter() - t0)
        hits += len({int(h.message.id[1:]) for h in found} & set(want.tolist()))
    store.close()
    files = [f for f in root.rglob("*") if f.is_file()]
    return {
        "n": n,
        "threshold": threshold,
        "add_ms_per_msg": total * 1e3 / n,
        "add_ms_per_msg_hnsw_part": hnsw * 1e3 / max(n - threshold, 1),
        "dense_p50_ms": statistics.median(times) * 1e3,
        "dense_p95_ms": float(np.percentile(times, 95)) * 1e3,
        "recall10": hits / (10 * len(qtexts)),
        "disk_bytes_per_msg": sum(f.stat().st_size for f in files) / n,
        "files": {f.name: round(f.stat().st_size / n, 1) for f in files},
        "load": os.getloadavg()[0],
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
