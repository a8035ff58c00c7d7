"""The corpus of ``python -m bench.peers.stores``: real chat turns, their vectors, and blended ones past them.

The real turns are REALTALK's (10 real messaging-app chats) then FriendsQA's (Friends transcripts), both fetched
into ``bench/data/`` by ``python -m bench.retrieval.fetch``: about 14,000 turns, embedded once by ltm's local model
(all-MiniLM-L6-v2 on ONNX Runtime) through the vector cache ``bench/data/cache/vectors.sqlite``. A store larger
than that is the real turns plus *blended* ones: turn ``i``'s first half of words and turn ``j``'s second half,
whose vector is the normalised sum of the two real vectors (so the blend sits among real ones; the model embeds
~45 texts/s on 2 cores, which would take over half an hour per 100,000). The queries are REALTALK's questions
(one line each), shuffled with a fixed seed; their vectors come from the same cache.

Two shapes of fill past the real turns (``--shape``): ``blend`` (the halves above) and ``chat``, whose texts are
drawn from the real turns' most frequent words (Zipf-weighted, stopwords kept), as a long chat repeats "yeah",
"really", "going", "today": its common terms have posting lists of tens of thousands of rows at 100,000, the case
that decides whether the keyword side's cost stays bounded. A chat-shaped store is a tenth real turns (the first
ones) and nine tenths fill at every size; the fill's vectors are blends as in the other shape.

Written to ``bench/data/peers/<n>.npz`` (``vectors``, ``queries``) and ``<n>.json`` (texts, speakers, times, query
texts; ``<n>-chat.*`` for the chat shape) for the workers, which run in other interpreters and read nothing of ltm.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT

DATA = ROOT / "bench" / "data"
OUT = DATA / "peers"
SETS = ("realtalk", "friendsqa")
SHAPES = ("blend", "chat")
CHAT_WORDS = 300  # the chat fill's vocabulary: the real turns' most frequent words


def real_turns() -> tuple[list[dict[str, Any]], list[str]]:
    """(every real turn in order, REALTALK's questions shuffled): fetched sets only."""
    turns: list[dict[str, Any]] = []
    questions: list[str] = []
    for name in SETS:
        path = DATA / f"{name}.json"
        if not path.exists():
            raise SystemExit(f"{path} is missing: run `python -m bench.retrieval.fetch` first (see its docstring)")
        data = json.loads(path.read_text("utf-8"))
        for conversation in data["conversations"]:
            turns += [
                {"text": t["text"], "speaker": t["speaker"], "time": float(t["time"])}
                for t in conversation["turns"]
                if t["text"].strip()
            ]
            if name == "realtalk":
                questions += [q["question"] for q in conversation["questions"]]
    random.Random(7).shuffle(questions)
    return turns, questions


def blended(
    turns: list[dict[str, Any]], vectors: np.ndarray, n: int, shape: str = "blend"
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """``n`` turns: the real ones first, then blends of two random real turns (summed vectors; the text halves,
    or for the ``chat`` shape words of the real turns' common vocabulary: :func:`chat_text`)."""
    if n <= len(turns):
        return turns[:n], vectors[:n]
    rng = np.random.default_rng(13)
    extra = n - len(turns)
    pairs = rng.integers(0, len(turns), size=(extra, 2))
    mixed = vectors[pairs[:, 0]] + vectors[pairs[:, 1]]
    mixed /= np.maximum(np.linalg.norm(mixed, axis=1, keepdims=True), 1e-12)
    start = max(t["time"] for t in turns)
    out = list(turns)
    chat = chat_text(turns) if shape == "chat" else None
    for row, (i, j) in enumerate(pairs.tolist()):
        a, b = turns[i]["text"].split(), turns[j]["text"].split()
        text = chat(row) if chat is not None else " ".join(a[: max(1, len(a) // 2)] + b[len(b) // 2 :])
        out.append({"text": text, "speaker": turns[i]["speaker"], "time": start + 60.0 * (row + 1)})
    return out, np.vstack([vectors, mixed.astype(np.float32)])


def chat_text(turns: list[dict[str, Any]]) -> Any:
    """row -> a chat-like text of 4-20 words drawn from the real turns' :data:`CHAT_WORDS` most frequent words with
    Zipf weights (rank r drawn ~1/r): what makes a handful of terms hold a large share of every posting list."""
    counts: dict[str, int] = {}
    for turn in turns:
        for word in turn["text"].lower().split():
            word = word.strip(".,!?\"'()")
            if word.isalpha():
                counts[word] = counts.get(word, 0) + 1
    vocabulary = sorted(counts, key=lambda w: (-counts[w], w))[:CHAT_WORDS]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    weights /= weights.sum()
    rng = np.random.default_rng(17)

    def text(row: int) -> str:
        del row  # the draws follow the rows' order
        return " ".join(rng.choice(vocabulary, size=int(rng.integers(4, 21)), p=weights).tolist())

    return text


def fill(store: Any, turns: list[dict[str, Any]], vectors: np.ndarray, n: int) -> None:
    """Add the first ``n`` rows to an ltm ``MemoryStorage`` as the stores of :mod:`bench.peers` hold them: message
    id = row, each turn's speaker as ``sent_from``, its time as ``created_at``, the given vectors, 1,000 a batch."""
    from ltm.message import Message

    for start in range(0, n, 1000):
        rows = range(start, min(start + 1000, n))
        store.add_batch(
            [
                Message(
                    id=str(r),
                    content=turns[r]["text"],
                    role="user",
                    sent_from=turns[r]["speaker"],
                    created_at=turns[r]["time"],
                )
                for r in rows
            ],
            vectors=vectors[list(rows)],
        )


def build(n: int, questions_wanted: int, shape: str = "blend") -> Path:
    """Write (or reuse) ``bench/data/peers/<n>.npz`` and ``.json`` (``<n>-chat.*`` for the ``chat`` shape);
    returns the .json's path."""
    if shape not in SHAPES:
        raise SystemExit(f"unknown corpus shape {shape!r}: use one of {', '.join(SHAPES)}")
    stem = f"{n}" if shape == "blend" else f"{n}-{shape}"
    target = OUT / f"{stem}.json"
    if target.exists() and (OUT / f"{stem}.npz").exists():
        return target
    from bench.retrieval.cache import local_model

    turns, questions = real_turns()
    questions = questions[:questions_wanted]
    model = local_model()
    vectors = np.asarray(
        model.get_text_embedding_batch([t["text"] for t in turns], show_progress=False), dtype=np.float32
    )
    queries = np.asarray([model.get_query_embedding(q) for q in questions], dtype=np.float32)
    if shape == "chat":  # a tenth real, the rest chat-like fill, at every size (10,000 included)
        turns, vectors = turns[: max(1, n // 10)], vectors[: max(1, n // 10)]
    rows, stacked = blended(turns, vectors, n, shape)
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez(OUT / f"{stem}.npz", vectors=stacked, queries=queries)
    real = min(n, len(turns))
    target.write_text(
        json.dumps(
            {
                "name": f"{real:,} real turns (REALTALK, FriendsQA)"
                + (f" + {n - real:,} {'chat-like' if shape == 'chat' else 'blended'}" if n > real else ""),
                "turns": rows,
                "questions": questions,
            }
        )
    )
    return target


if __name__ == "__main__":
    import sys

    args = sys.argv[1:]
    shape = args.pop(args.index("--shape") + 1) if "--shape" in args else "blend"
    args = [a for a in args if a != "--shape"]
    for size in args or ["10000", "100000"]:
        print(build(int(size), 200, shape))
