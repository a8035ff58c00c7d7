"""One writer process of ``bench.backends``: adds N messages one at a time to a namespace, then prints its
per-add latencies (ms) and the wall-clock times of its first and last add as JSON on its last line.
``LTM_STORE_URL`` in the environment selects PostgreSQL.

    python -m bench.backend_writer DIR NAMESPACE N PREFIX
"""

from __future__ import annotations

import json
import sys
import time

from ltm import MemoryStorage, Message, Settings


def main(directory: str, namespace: str, n: int, prefix: str) -> None:
    store = MemoryStorage(namespace, settings=Settings.load(storage_dir=directory, embedding="hash"))
    store.embed_texts(["warm up"])  # open the namespace and load the embedding before the clock starts
    latencies = []
    first = time.time()
    for i in range(n):
        message = Message(f"{prefix} writes item {i} token{prefix}x{i}", role="writer")
        start = time.perf_counter()
        store.add(message)
        latencies.append((time.perf_counter() - start) * 1000)
    last = time.time()
    store.close()
    print(json.dumps({"latencies": latencies, "first": first, "last": last}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
