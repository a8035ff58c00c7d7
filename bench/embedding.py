"""The local model's two runtimes side by side in one run: one query at a time and batched ingest.

    python -m bench.embedding                 # 200 single queries and 2,000 texts in batches of 32, each runtime
    python -m bench.embedding --queries 50 --texts 500

Prints p50 / p95 per query (ms) and texts per second for sentence-transformers on torch (through llama-index's
HuggingFaceEmbedding, what ltm used before), ONNX Runtime, and ONNX Runtime on the int8-quantized graph (the opt-in
``local_runtime="onnx-int8"``), and their ratios. Each with one thread, as ltm runs
them. Quote medians and ratios: the machine is shared.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from bench.data import dataset
from ltm.config import Settings
from ltm.llm.embeddings import resolve_embedding


def measure(runtime: str, queries: list[str], texts: list[str]) -> dict[str, float]:
    model: Any = resolve_embedding(Settings(embedding="local", local_runtime=runtime))
    model.get_query_embedding("warm up")
    single = []
    for q in queries:
        t0 = time.perf_counter()
        model.get_query_embedding(q)
        single.append((time.perf_counter() - t0) * 1e3)
    t0 = time.perf_counter()
    model.get_text_embedding_batch(texts)
    batch_s = time.perf_counter() - t0
    single.sort()
    return {
        "p50_ms": statistics.median(single),
        "p95_ms": single[int(0.95 * (len(single) - 1))],
        "texts_per_s": len(texts) / batch_s,
    }


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--texts", type=int, default=2000)
    p.add_argument(
        "--runtimes", nargs="+", default=["torch", "onnx", "onnx-int8"], choices=["torch", "onnx", "onnx-int8"]
    )
    args = p.parse_args(argv)
    texts = dataset(args.texts + args.queries, seed=11)[0]
    queries, corpus = texts[: args.queries], texts[args.queries :]
    results = {runtime: measure(runtime, queries, corpus) for runtime in args.runtimes}
    print("| runtime | query p50 ms | query p95 ms | batched texts/s |\n|---|---|---|---|")
    for runtime, r in results.items():
        print(f"| {runtime} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['texts_per_s']:.0f} |")
    for a, b in (("onnx", "torch"), ("onnx-int8", "onnx")):
        if a in results and b in results:
            x, y = results[a], results[b]
            print(
                f"\n{a} / {b}: query p50 {x['p50_ms'] / y['p50_ms']:.2f}x, batched throughput "
                f"{x['texts_per_s'] / y['texts_per_s']:.2f}x"
            )
    return results


if __name__ == "__main__":
    main()
