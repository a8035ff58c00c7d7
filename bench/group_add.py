"""Concurrent single-message adds, the store's work alone (50x the llama-index way at 10k).

``--callers`` threads add ``--n`` of the bench's chat messages into a new namespace, one message per ``add``,
each call returning once its message is durable (group commit: ltm.store.group); the vectors are precomputed
and served by the bench's lookup embedding, so the time is the store's: validation, SQLite with its fsync, FTS5,
history, FAISS. Prints one line per repeat: seconds, ms per add, adds per commit. A baseline ltm runs from its
tree with ``PYTHONPATH=<tree> python -m bench.group_add`` (as bench.run does).

    python -m bench.group_add --n 10000 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10_000, help="messages added, one per add call")
    p.add_argument("--callers", type=int, default=8, help="threads adding at once")
    p.add_argument("--repeats", type=int, default=3, help="namespaces filled, one after another")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()

    from bench.ltm_runner import add_concurrently, messages, open_store, per_commit
    from bench.workers import worker_data

    data = worker_data(args.n, args.seed)
    msgs = messages(data["texts"], data["roles"][: args.n], data["causes"][: args.n])
    seconds = []
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="ltm-group-add-") as tmp:
            store = open_store(Path(tmp) / "store", data["embedding"])
            elapsed = add_concurrently(store, msgs, args.callers)
            grouped = per_commit(store)
            store.close()
        seconds.append(elapsed)
        commits = f"{grouped:.2f} adds per commit" if grouped is not None else "no group commit"
        print(
            f"repeat {repeat + 1}: {args.n} adds from {args.callers} callers in {elapsed:.2f} s, "
            f"{1e3 * elapsed / args.n:.3f} ms per add, {commits}",
            flush=True,
        )
    print(f"median: {statistics.median(seconds):.2f} s, {1e3 * statistics.median(seconds) / args.n:.3f} ms per add")


if __name__ == "__main__":
    main()
