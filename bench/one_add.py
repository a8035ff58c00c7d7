"""Where one caller's single-message ``add`` spends its time outside the model.

One process, the local model on ONNX Runtime (one thread): ``--n`` adds of one message each into a new
namespace, every ``session.run`` timed. Prints the mean time per add, the model's share of it and the rest
(tokenising, the store's Python and SQLite, the FAISS add), with the medians of the time before the model run
starts ("pre") and after it ends ("post"). ``--sleep-ms X`` replaces each model run by an X ms sleep that
returns the first real vector again: the store's work without the caches the model run evicts.

    python -m bench.one_add --n 400
    python -m bench.one_add --n 400 --sleep-ms 6
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class _Timed:
    """Wraps an ONNX Runtime session: the seconds spent in ``run`` and when the last run started and ended."""

    def __init__(self, session: Any, sleep_s: float | None) -> None:
        self.session, self.sleep_s = session, sleep_s
        self.seconds = self.start = self.end = 0.0
        self._first: Any = None

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.start = time.perf_counter()
        try:
            if self.sleep_s is None or self._first is None:
                out = self.session.run(*args, **kwargs)
                self._first = out
                return out
            time.sleep(self.sleep_s)
            return [a.copy() for a in self._first]
        finally:
            self.end = time.perf_counter()
            self.seconds += self.end - self.start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=400, help="single-message adds timed (after 20 untimed)")
    p.add_argument("--sleep-ms", type=float, default=None, help="a sleep of this long instead of each model run")
    args = p.parse_args()

    from bench.data import dataset
    from ltm import MemoryStorage, Message, Settings
    from ltm.llm.embeddings import resolve_embedding

    settings = Settings(storage_dir=Path(tempfile.mkdtemp(prefix="ltm-one-add-")), embedding="local")
    embedding: Any = resolve_embedding(settings)
    runtime: Any = getattr(embedding, "model", None)  # OnnxEmbedding's OnnxModel holds the ONNX session
    if not hasattr(runtime, "_session"):
        raise SystemExit("the local model is not on ONNX Runtime here (pip install onnxruntime)")
    timed = _Timed(runtime._session, None if args.sleep_ms is None else args.sleep_ms / 1000)
    runtime._session = timed
    texts = dataset(args.n + 20, seed=7)[0]
    store = MemoryStorage("one-add", settings=settings, embedding=embedding)
    for i in range(20):  # warm-up: the first runs allocate
        store.add(Message(id=f"w{i}", content=texts[i], role="user"))
    model_before, t0 = timed.seconds, time.perf_counter()
    pre, post = [], []
    for i in range(args.n):
        began = time.perf_counter()
        store.add(Message(id=f"m{i}", content=texts[20 + i], role="user"))
        ended = time.perf_counter()
        pre.append(timed.start - began)
        post.append(ended - timed.end)
    total = time.perf_counter() - t0
    store.close()
    model = timed.seconds - model_before
    label = "model" if args.sleep_ms is None else f"sleep {args.sleep_ms:g} ms"
    print(
        f"{args.n} adds: {1e3 * total / args.n:.2f} ms per add, {label} {1e3 * model / args.n:.2f} ms, "
        f"outside {1e3 * (total - model) / args.n:.3f} ms ({100 * (1 - model / total):.1f}%); "
        f"pre p50 {1e3 * statistics.median(pre):.3f} ms, post p50 {1e3 * statistics.median(post):.3f} ms"
    )


if __name__ == "__main__":
    main()
