"""Dense recall@10 of ltm's HNSW graph on REAL all-MiniLM-L6-v2 embeddings, not the bench's synthetic vectors.

``bench.run``'s 1M figures use generated vectors whose queries lie near stored rows; real sentence embeddings are
much harder for an approximate index (the IVF probe showed it: ``git show aa059f083a:bench/ivf_probe.py``, run with
``--realtalk``). This script fills one namespace
through the ordinary path (``MemoryStorage.add_batch`` of 1,000, a lookup embedding serving precomputed real
vectors, default ``Settings``: the flat index, its rebuild into the HNSW graph at ``hnsw_threshold``, the fresh
segment's folds), then reopens it at each ``--ef`` (``hnsw_ef_search``) and compares its dense top 10 with the exact
top 10 (brute-force inner product over the same float16 vectors the store keeps), for two query sets:

- **held-out texts**: texts of the same corpus that were never stored (in distribution, none is a duplicate);
- **questions**: REALTALK's memory questions (``bench/data/realtalk.json``, if fetched): far from any stored text,
  the case that makes a graph search work hardest.

Vectors come from ``--vectors`` (``.npy`` files, float16 or float32, rows in text order, made by the model; e.g.
``python -m bench.hnsw_real --embed`` embeds ``--texts`` first, resumable, files of 20,000 rows). No vector or text
is committed: both live outside the repository (``--work``)::

    python -m bench.hnsw_real --texts /tmp/real/texts.txt --work /tmp/real --embed --n 300000
    python -m bench.hnsw_real --texts /tmp/real/texts.txt --work /tmp/real --n 300000 --ef 128 384 768
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.baselines import pct
from bench.ltm_runner import KIND, NAMESPACE, add_batches, hit_index, messages

CHUNK = 20_000
HELD_OUT = 1_000
# The speaker of every stored text: a word no text or question holds. A stored speaker's name in a query is put
# in the first person before it is embedded (ltm.store.search.speakers), which the lookup embedding cannot serve.
ROLE = "qxvz"


def embed_corpus(texts: list[str], work: Path, rows: int) -> None:
    """Embed ``texts[:rows]`` with the local model into ``work/v_<start>.npy`` files (skips files already there)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ltm.config import Settings
    from ltm.llm.embeddings import resolve_embedding

    model = resolve_embedding(Settings(embedding="local"))
    for start in range(0, rows, CHUNK):
        path = work / f"v_{start:07d}.npy"
        if path.exists():
            continue
        t0 = time.perf_counter()
        vecs = np.asarray(model.get_text_embedding_batch(texts[start : start + CHUNK]), dtype=np.float32)
        np.save(path, vecs.astype(np.float16))
        print(f"embedded {start + len(vecs):,} ({len(vecs) / (time.perf_counter() - t0):.0f} texts/s)", flush=True)


def load_vectors(work: Path, rows: int) -> np.ndarray:
    files = sorted(work.glob("v_*.npy"))
    blocks, have = [], 0
    for f in files:
        if have >= rows:
            break
        block = np.load(f)
        blocks.append(block)
        have += len(block)
    if have < rows:
        raise SystemExit(f"only {have:,} vectors under {work}; embed more (--embed) or lower --n / the held-out set")
    return np.ascontiguousarray(np.concatenate(blocks)[:rows], dtype=np.float32)


def questions(limit: int) -> list[str]:
    path = Path(__file__).resolve().parent / "data" / "realtalk.json"
    if not path.exists():
        if limit:
            print(f"no questions: {path} is missing (python -m bench.retrieval.fetch brings it)", file=sys.stderr)
        return []
    data = json.loads(path.read_text("utf-8"))
    out = [q["question"] for c in data["conversations"] for q in c["questions"]]
    return list(dict.fromkeys(out))[:limit]


def embedded_questions(limit: int, dim: int) -> tuple[list[str], np.ndarray]:
    """:func:`questions` and their unit vectors from the local model ((0, dim) when none)."""
    asked = questions(limit)
    if not asked:
        return [], np.zeros((0, dim), dtype=np.float32)
    from ltm.config import Settings
    from ltm.llm.embeddings import resolve_embedding

    vecs = np.asarray(resolve_embedding(Settings(embedding="local")).get_text_embedding_batch(asked), dtype=np.float32)
    return asked, vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def corpus_embedding(texts: list[str], vecs: np.ndarray, qtexts: list[str], qvecs: np.ndarray) -> Any:
    """A lookup embedding serving ``vecs`` for the first ``len(vecs)`` of ``texts`` and ``qvecs`` for ``qtexts``."""
    from bench.data import lookup_embedding

    emb = lookup_embedding()
    emb.register(texts[: len(vecs)], vecs)
    if qtexts:
        emb.register(qtexts, qvecs)
    return emb


def fill(store: Any, texts: list[str], n: int) -> float:
    """Seconds to store ``texts[:n]`` through ``add_batch`` of 1,000, each spoken by :data:`ROLE`."""
    t0 = time.perf_counter()
    add_batches(store, messages(texts[:n], [ROLE] * n, [""] * n))
    return time.perf_counter() - t0


def exact_top10(stored: np.ndarray, queries: np.ndarray) -> np.ndarray:
    out = np.empty((len(queries), 10), dtype=np.int64)
    for start in range(0, len(queries), 64):
        sims = queries[start : start + 64] @ stored.T
        out[start : start + 64] = np.argsort(-sims, axis=1, kind="stable")[:, :10]
    return out


def measure(store: Any, texts: list[str], truth: np.ndarray) -> dict[str, float]:
    hits, times = 0, []
    for text, want in zip(texts, truth, strict=True):
        t0 = time.perf_counter()
        found = store.search(text, k=10, mode="dense")
        times.append(time.perf_counter() - t0)
        hits += len({hit_index(h) for h in found} & set(int(i) for i in want))
    return {"recall10": hits / (10 * len(texts)), "p50_ms": pct(times, 50) * 1e3}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=Path, required=True, help="one text per line (the corpus, already shuffled)")
    ap.add_argument("--work", type=Path, required=True, help="folder of the vector files (outside the repository)")
    ap.add_argument("--n", type=int, default=300_000, help="texts stored")
    ap.add_argument("--embed", action="store_true", help="embed what is missing of the first n + 1,000 texts first")
    ap.add_argument(
        "--ef",
        type=int,
        nargs="*",
        default=[],
        help="hnsw_ef_search values to reopen with (the default Settings' value is always measured)",
    )
    ap.add_argument("--questions", type=int, default=300, help="REALTALK questions asked (0: none)")
    ap.add_argument("--threshold", type=int, default=None, help="hnsw_threshold (default: Settings' own)")
    args = ap.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    texts = args.texts.read_text("utf-8").split("\n")
    rows = args.n + HELD_OUT
    if args.embed:
        embed_corpus(texts, args.work, rows)
    vecs = load_vectors(args.work, rows)
    stored, held = vecs[: args.n], vecs[args.n :]
    held_texts = texts[args.n : rows]

    from ltm.config import Settings

    qtexts, qvecs = embedded_questions(args.questions, vecs.shape[1])
    emb = corpus_embedding(texts, vecs, qtexts, qvecs)
    sets = {"held-out texts": (held_texts, exact_top10(stored, held))}
    if qtexts:
        sets["questions"] = (qtexts, exact_top10(stored, qvecs))

    import faiss

    faiss.omp_set_num_threads(1)
    default_ef = Settings().hnsw_ef_search
    out: dict[str, Any] = {"n": args.n, "default_ef": default_ef}
    with tempfile.TemporaryDirectory(prefix="ltm-hnsw-real-") as tmp:
        from ltm.store import MemoryStorage

        def opened(**extra: int) -> Any:
            if args.threshold is not None:
                extra["hnsw_threshold"] = args.threshold
            settings = Settings(storage_dir=Path(tmp), embedding="hash", **extra)
            return MemoryStorage(NAMESPACE, kind=KIND, embedding=emb, settings=settings)

        store = opened()
        out["fill_ms_per_msg"] = fill(store, texts, args.n) * 1e3 / args.n
        store.close()
        # the HNSW snapshot: written only once the namespace holds a graph (a flat index is replayed from SQLite)
        out["graph_bytes"] = sum(f.stat().st_size for f in Path(tmp).rglob("index.faiss"))
        for ef in dict.fromkeys([default_ef, *args.ef]):
            store = opened(hnsw_ef_search=ef)
            for name, (qs, truth) in sets.items():
                store.search(qs[0], k=10, mode="dense")  # the first query pages the graph in
                out[f"ef{ef} {name}"] = measure(store, qs, truth)
                print(
                    f"ef {ef:4d} {name:15s} recall@10 {out[f'ef{ef} {name}']['recall10']:.4f} "
                    f"p50 {out[f'ef{ef} {name}']['p50_ms']:.2f} ms",
                    flush=True,
                )
            store.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
