"""What the model's time would be for the representations docs/RETRIEVAL.md weighs (issue 15), local MiniLM, no cache.

- ingest: N REALTALK turns embedded as stored today (bare text), as "speaker: text", and as the contextual text
  "prev speaker: prev text\\nspeaker: text"; plus bare + contextual (a second vector beside the first);
- a pasted-conversation query (MADial): the whole query alone (a question's cost) against the whole query plus
  its lines (what hybrid search embeds for it now).

Rounds alternate the variants; medians are printed with the ratio to the bare / whole-query time::

    python -m bench.retrieval.embed_cost --turns 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

from bench.retrieval.run import DATA_DIR, template


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Embedding time of the stored and query representations.")
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ltm.config import Settings
    from ltm.llm.embeddings import resolve_embedding
    from ltm.store.search.query import query_lines

    model = resolve_embedding(Settings(embedding="local"))
    talk = json.loads((DATA_DIR / "realtalk.json").read_text("utf-8"))
    turns = [t for c in talk["conversations"] for t in c["turns"]][: args.turns]
    bare = [t["text"] for t in turns]
    spoken = [template(t["speaker"], t["text"]) for t in turns]
    context = [(spoken[i - 1] + "\n" if i else "") + spoken[i] for i in range(len(turns))]
    madial = json.loads((DATA_DIR / "madial.json").read_text("utf-8"))
    queries = [q["question"] for c in madial["conversations"] for q in c["questions"]][: args.queries]
    model.get_text_embedding_batch(bare[:64])  # load and warm
    variants: dict[str, Callable[[], object]] = {
        "ingest bare (today)": lambda: model.get_text_embedding_batch(bare),
        "ingest speaker: text": lambda: model.get_text_embedding_batch(spoken),
        "ingest contextual (replacing)": lambda: model.get_text_embedding_batch(context),
        "ingest bare + contextual (beside)": lambda: (model.get_text_embedding_batch(bare),
                                                      model.get_text_embedding_batch(context)),
        "query whole (today)": lambda: [model.get_query_embedding(q) for q in queries],
        "query whole + lines (now)": lambda: [(model.get_query_embedding(q),
                                               model.get_text_embedding_batch(query_lines(q))) for q in queries],
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, call in variants.items():
            times[name].append(_timed(call))
    print(f"{len(turns)} turns, {len(queries)} pasted-conversation queries, {args.rounds} rounds (medians); "
          f"load {os.getloadavg()[0]:.1f}\n\n| what | seconds | ratio |\n|---|---:|---:|")
    for name, values in times.items():
        base = statistics.median(times["ingest bare (today)" if name.startswith("ingest") else "query whole (today)"])
        print(f"| {name} | {statistics.median(values):.2f} | {statistics.median(values) / base:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
