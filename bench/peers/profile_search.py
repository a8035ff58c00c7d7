"""Where ltm's default search spends its time: ``python -m bench.peers.profile_search --size 10000``.

Fills a fresh store with :mod:`bench.peers.corpus`'s rows (given vectors, batches of 1,000), then times each part
of the default hybrid search of the corpus's questions separately, interleaved query by query: the model's query
embedding alone, the dense search with the query vector given, the hybrid search with the query vector given (the
store's work: keyword side, fusion, prior), the dense and the whole default ``search(text)`` (with its keyword side
beside the model, and in line after it), and the model call the peers of :mod:`bench.peers.stores` make (the same
ONNX graph through ``OnnxQuery``); then profiles the vector-given
hybrid search with cProfile and prints the functions that take the most time (cumulative and own). Before the
profile, :func:`time_stops` times each stop of the vector-given hybrid search without a profiler's overhead: what the
parts table of docs/SEARCH_SPEED.md is built from.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import inspect
import io
import pstats
import statistics
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from bench.peers import corpus
from bench.peers.embedded import OnnxQuery
from bench.peers.stores import model_files
from ltm.message import Message
from ltm.store.embedded import retrieval
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.vectors import VectorIndex
from ltm.store.search import fusion


def _p50(values: list[float]) -> float:
    return 1000.0 * statistics.median(values)


def _in_line(store: Any, query: str) -> Any:
    """The default search with its keyword side run after the model instead of beside it: the query's vector
    first (the same text and model call ``search`` makes), then the search given it, which runs every part in line."""
    vector = store._embed([store._dense_text(query)], "query")  # the purpose search embeds a query for
    return store.search(query, k=10, vector=vector)


# The stops of a hybrid search timed by time_stops(): (label, the module or class holding it, its name). Nested stops
# (the prior and the sitting share inside the fusion) are printed indented and not added to the sum again.
STOPS: tuple[tuple[str, Any, str], ...] = (
    ("keyword side: its terms planned", retrieval, "keyword_match"),
    ("keyword side: BM25 candidates (FTS5)", MessageLog, "keyword"),
    ("dense candidates (FAISS: the flat index, or the graph and its fresh segment)", VectorIndex, "_search"),
    ("the graph's candidates rescored (exact cosines from their rows)", retrieval, "_exact_cosines"),
    ("the candidates' rows, one read", MessageLog, "candidates"),
    ("who the question names", retrieval, "spoken_by_named"),
    ("fusion", retrieval, "fuse"),
    ("  of which the prior", fusion, "priors"),
    ("  of which the sitting share", fusion, "_with_sitting"),
    ("the hits' bodies not read with their rows", MessageLog, "bodies"),
    ("the hits' messages (Message.load)", Message, "load"),
)


@contextlib.contextmanager
def _timing(spent: dict[str, float]) -> Iterator[None]:
    """Every stop of :data:`STOPS` adds its time to ``spent[label]`` while inside; restored after."""
    undo: list[tuple[Any, str, Any]] = []
    for label, owner, name in STOPS:
        original = inspect.getattr_static(owner, name)  # a class's own or inherited
        function = original.__func__ if isinstance(original, classmethod) else original

        def timed(*args: Any, _f: Any = function, _label: str = label, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return _f(*args, **kwargs)
            finally:
                spent[_label] = spent.get(_label, 0.0) + time.perf_counter() - started

        setattr(owner, name, classmethod(timed) if isinstance(original, classmethod) else timed)
        undo.append((owner, name, vars(owner).get(name)))
    try:
        yield
    finally:
        for owner, name, own in reversed(undo):
            if own is None:
                delattr(owner, name)  # inherited: the base's shows through again
            else:
                setattr(owner, name, own)


@contextlib.contextmanager
def _model_watched(store: Any, ended: list[float]) -> Iterator[None]:
    """Inside, each of ``store``'s model calls appends the time it returned to ``ended``; the store's own model call
    (its class's, or one already set on it) is back after."""
    had = vars(store).get("_embed")
    embed = store._embed

    def model(*args: Any, **kwargs: Any) -> Any:
        try:
            return embed(*args, **kwargs)
        finally:
            ended.append(time.perf_counter())

    store._embed = model
    try:
        yield
    finally:
        if had is None:
            del store._embed  # the class's method shows through again
        else:
            store._embed = had


def keyword_side_wait(store: Any, questions: list[str]) -> None:
    """How long the keyword side outlasts the model (median, 0 when it ends first), and how often it was still
    running when the model returned (it then leaves its rows to the search; in a namespace that reads it beside the
    search, the search does its dense side meanwhile)."""
    from ltm.store.embedded import backend

    ends: dict[str, float] = {}
    model: list[float] = []
    names = vars(backend)  # the backend's own name for the keyword side, which both of its paths call
    side = names["keyword_side"]

    def keyword_side(*args: Any) -> Any:
        try:
            return side(*args)
        finally:
            ends["keyword"] = time.perf_counter()

    names["keyword_side"] = keyword_side
    try:
        waits = []
        with _model_watched(store, model):
            for q in questions:
                store.search(q, k=10)
                waits.append(ends["keyword"] - model[-1])
    finally:
        names["keyword_side"] = side
    late = sum(1 for w in waits if w > 0) / len(waits)
    print(
        f"the keyword side after the model: finished later in {100 * late:.0f}% of searches, by "
        f"{_p50([max(0.0, w) for w in waits]):.2f} ms (p50)"
    )


def after_model(store: Any, questions: list[str]) -> None:
    """What a search pays once the model has returned (the query's vector in hand), dense and default search in
    turn for each question (medians): the part of an end-to-end search that the store's own work decides, and what
    the default search adds to it (the dense side is in both)."""
    ended: list[float] = []
    after: dict[str, list[float]] = {"dense": [], "hybrid": []}
    with _model_watched(store, ended):
        for q in questions:
            for mode, values in after.items():
                store.search(q, k=10, mode=mode)
                values.append(time.perf_counter() - ended[-1])
    dense, hybrid = _p50(after["dense"]), _p50(after["hybrid"])
    print(
        f"after the model returns: dense search {dense:.2f} ms, default search {hybrid:.2f} ms (p50; the "
        f"default's own work after the model {hybrid - dense:.2f} ms)"
    )


def time_stops(store: Any, questions: list[str], queries: np.ndarray) -> None:
    """Mean ms per search of each stop of the vector-given hybrid search (every part runs in line), and the rest."""
    spent: dict[str, float] = {}
    started = time.perf_counter()
    with _timing(spent):
        for q, v in zip(questions, queries, strict=True):
            store.search(q, k=10, vector=v)
    total = (time.perf_counter() - started) / len(questions)
    print(f"hybrid search, query vector given: {1000 * total:.2f} ms a search (mean), of which")
    counted = 0.0
    for label, *_ in STOPS:
        each = spent.get(label, 0.0) / len(questions)
        counted += 0.0 if label.startswith(" ") else each
        print(f"  {label:66s} {1000 * each:6.2f} ms")
    print(f"  {'the rest (Python between the stops)':66s} {1000 * (total - counted):6.2f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--shape", default="blend", choices=corpus.SHAPES, help="the fill's shape (bench.peers.corpus)")
    parser.add_argument("--top", type=int, default=30, help="functions printed from the profile")
    args = parser.parse_args(argv)
    import json

    from ltm.config import Settings
    from ltm.store import MemoryStorage

    path = corpus.build(args.size + 1200, 200, args.shape)
    data = json.loads(path.read_text("utf-8"))
    arrays = np.load(path.with_suffix(".npz"))
    turns, questions, vectors, queries = data["turns"], data["questions"], arrays["vectors"], arrays["queries"]
    with tempfile.TemporaryDirectory(prefix="ltm-profile-") as tmp:
        # no query cache: every part below embeds the same questions
        store = MemoryStorage("peers", kind="bench", settings=Settings.load(storage_dir=tmp, query_cache_size=0))
        corpus.fill(store, turns, vectors, args.size)
        store.embedder.embedding.get_query_embedding("warm up")
        files = model_files()
        peers_model = OnnxQuery(files["onnx"], files["tokenizer"], files["max_tokens"])
        peers_model(["warm up"])
        parts: dict[str, list[float]] = {}
        calls: dict[str, Any] = {
            "the peers' model call (same graph)": lambda q, v: peers_model([q]),
            "model: query embedding alone": lambda q, v: store._embed([q], "query"),
            "dense, query vector given": lambda q, v: store.search(q, k=10, mode="dense", vector=v),
            "dense end to end": lambda q, v: store.search(q, k=10, mode="dense"),
            "hybrid, query vector given": lambda q, v: store.search(q, k=10, vector=v),
            "default search(text) end to end": lambda q, v: store.search(q, k=10),
            "the same, keyword side in line": lambda q, v: _in_line(store, q),
        }
        for q, v in zip(questions[: args.queries], queries[: args.queries], strict=True):
            for name, call in calls.items():
                started = time.perf_counter()
                call(q, v)
                parts.setdefault(name, []).append(time.perf_counter() - started)
        for name, values in parts.items():
            print(f"{name:40s} p50 {_p50(values):7.2f} ms  mean {1000 * statistics.fmean(values):7.2f} ms")
        keyword_side_wait(store, questions[: args.queries])
        after_model(store, questions[: args.queries])
        time_stops(store, questions[: args.queries], queries[: args.queries])
        profile = cProfile.Profile()
        profile.enable()
        for q, v in zip(questions[: args.queries], queries[: args.queries], strict=True):
            store.search(q, k=10, vector=v)
        profile.disable()
        store.close()
    for key in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(key).print_stats(args.top)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
