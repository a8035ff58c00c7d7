"""The default (hybrid) search over an HNSW graph against the same search over an exact index:
``python -m bench.peers.hybrid_quality --size 100000``.

The public sets' namespaces stay below ``hnsw_threshold`` (a flat, exact index), so their recall says nothing of
what the graph changes. This fills two stores with :mod:`bench.peers.corpus`'s rows (REALTALK and FriendsQA turns,
blended past ~14,000, given vectors in batches of 1,000): one at the default threshold (a graph at this size) and
one whose threshold is above the size (flat). It then runs REALTALK's questions through both, end to end with the
local model, and prints:

- how much the graph's top 10 overlaps the exact index's (and how many lists are identical);
- recall@10 of REALTALK's evidence turns in each (every conversation in one namespace, among the blended
  distractors: lower than per-conversation recall, and comparable only between the two stores);
- the same for the dense search alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Sequence

from bench.peers import corpus


def evidence_rows() -> dict[str, set[str]]:
    """{REALTALK question: the corpus rows (as message ids) of its evidence turns}: the real turns open the corpus,
    in the order :func:`bench.peers.corpus.real_turns` reads them."""
    data = json.loads((corpus.DATA / "realtalk.json").read_text("utf-8"))
    row = 0
    found: dict[str, set[str]] = {}
    for conversation in data["conversations"]:
        ids: dict[str, str] = {}
        for turn in conversation["turns"]:
            if turn["text"].strip():
                ids[turn["id"]] = str(row)
                row += 1
        for question in conversation["questions"]:
            found.setdefault(question["question"], {ids[e] for e in question["evidence"] if e in ids})
    return found


def compare(graph: list[list[str]], exact: list[list[str]], evidence: Sequence[set[str]]) -> dict[str, float]:
    """Overlap of each pair of top-k lists, the share of identical lists, and each side's recall of ``evidence``
    (questions without evidence are left out of the recall)."""
    asked = [i for i, want in enumerate(evidence) if want]

    def recall(lists: list[list[str]]) -> float:
        return statistics.fmean(len(set(lists[i]) & evidence[i]) / len(evidence[i]) for i in asked) if asked else 0.0

    return {
        "overlap": statistics.fmean(len(set(a) & set(b)) / max(len(b), 1) for a, b in zip(graph, exact, strict=True)),
        "identical": sum(a == b for a, b in zip(graph, exact, strict=True)) / len(exact),
        "recall_graph": recall(graph),
        "recall_exact": recall(exact),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    import numpy as np

    from ltm.config import Settings
    from ltm.store import MemoryStorage

    path = corpus.build(args.size + 1200, 200)
    data = json.loads(path.read_text("utf-8"))
    turns, questions = data["turns"], data["questions"][: args.queries]
    vectors = np.load(path.with_suffix(".npz"))["vectors"]
    wanted = evidence_rows()
    evidence = [wanted.get(q, set()) for q in questions]
    results: dict[str, dict[str, list[list[str]]]] = {}
    with tempfile.TemporaryDirectory(prefix="ltm-hybrid-quality-") as tmp:
        for name, threshold in (("graph", None), ("exact", args.size + 1)):
            extra = {} if threshold is None else {"hnsw_threshold": threshold}
            store = MemoryStorage(
                name, kind="bench", settings=Settings.load(storage_dir=tmp, query_cache_size=0, **extra)
            )
            corpus.fill(store, turns, vectors, args.size)
            results[name] = {
                mode: [[h.message.id for h in store.search(q, k=10, mode=mode)] for q in questions]
                for mode in ("hybrid", "dense")
            }
            print(f"{name}: {store.stats().index} index of {args.size:,} messages", flush=True)
            store.close()
    print(f"{len(questions)} REALTALK questions, k=10; {sum(1 for e in evidence if e)} with evidence turns")
    for mode in ("hybrid", "dense"):
        got = compare(results["graph"][mode], results["exact"][mode], evidence)
        print(
            f"{mode:6s}: overlap with the exact index {got['overlap']:.3f}, identical lists {got['identical']:.2f}, "
            f"evidence recall@10 {got['recall_graph']:.3f} (graph) / {got['recall_exact']:.3f} (exact)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
