"""The store's own candidates for every public question, to measure search levers on.

Each conversation is stored once through the ordinary path (``add_batch``, cached vectors) under
``bench/data/stores/`` (git-ignored); then, for every question, the store's own keyword index (FTS5, any column
weights and query) and its stored vectors give the candidates, and :func:`ltm.store.search.fusion.fuse` ranks them, so
:func:`base` reproduces ``MemoryStorage.search`` as it was at 34e683c and :func:`shipped` as it is now (both checked
against ``python -m bench.retrieval``; :func:`shipped` again once questions name their speakers in the first person).
The levers themselves are in :mod:`bench.tuning.levers`.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.retrieval.explore import embed, is_dev
from bench.retrieval.metrics import mean, score
from bench.retrieval.run import DATA_DIR, template
from ltm.store.search import fusion
from ltm.store.search.query import STOPWORDS, query_terms, question_stems
from ltm.store.search.speakers import dense_query

STORES = DATA_DIR / "stores"
Cand = list[tuple[int, float]]


@dataclass
class Conversation:
    """One stored conversation: its log, its vectors (row i = seq i + 1), times, turn ids."""

    log: Any
    ids: list[str]
    vectors: np.ndarray
    times: dict[int, float]
    extra: dict[str, np.ndarray] = field(default_factory=dict)  # other vector sets, same rows
    speakers: list[str] = field(default_factory=list)  # row i = seq i + 1
    texts: list[str] = field(default_factory=list)  # row i = seq i + 1
    _kw: dict[tuple[str, str], Cand] = field(default_factory=dict)

    def keyword(self, match: str | None, weights: str = "1.0, 0.6, 0.6, 0.3", limit: int = 100) -> Cand:
        if match is None:
            return []
        key = (match, weights)
        if key not in self._kw:
            sql = f"SELECT rowid, -bm25(fts, {weights}) FROM fts WHERE fts MATCH ? ORDER BY 2 DESC LIMIT ?"
            self._kw[key] = [(int(s), float(v)) for s, v in self.log.db.execute(sql, [match, limit])]
        return self._kw[key]

    def dense(self, qv: np.ndarray, limit: int = 50, matrix: np.ndarray | None = None) -> Cand:
        sims = (self.vectors if matrix is None else matrix) @ qv
        order = np.argsort(-sims, kind="stable")[:limit]
        return [(int(i) + 1, float(sims[i])) for i in order]


@dataclass
class Question:
    conv: Conversation
    text: str
    vector: np.ndarray
    evidence: list[str]
    category: str
    dev: bool


def build(data: dict[str, Any], model: Any) -> list[Question]:
    """Store every conversation of ``data`` (once: reused when already under STORES) and its questions."""
    from ltm.config import Settings
    from ltm.message import Message
    from ltm.store import MemoryStorage, namespace_path
    from ltm.store.embedded import MessageLog

    root = STORES / data["name"]
    settings = Settings(storage_dir=root, embedding="local")
    out: list[Question] = []
    for conv in data["conversations"]:
        turns, qs = conv["turns"], conv["questions"]
        if not qs:
            continue
        path = namespace_path(settings, "bench", conv["id"]) / "memory.sqlite"
        if not path.exists():
            shutil.rmtree(path.parent, ignore_errors=True)
            store = MemoryStorage(conv["id"], kind="bench", settings=settings, embedding=model)
            store.add_batch(
                [
                    Message(
                        id=f"{conv['id']}/{t['id']}",
                        content=t["text"],
                        role=t["speaker"],
                        sent_from=t["speaker"],
                        created_at=t["time"],
                    )
                    for t in turns
                ]
            )
            store.close()
        log = MessageLog(path, read_only=True)
        seqs, vectors = log.vectors_after(0)
        assert list(seqs) == list(range(1, len(turns) + 1)), "a fresh store numbers turns 1..n"
        stored = embed(model, [t["text"] for t in turns])
        prev = [template(turns[i - 1]["speaker"], turns[i - 1]["text"]) + "\n" if i else "" for i in range(len(turns))]
        extra = {
            "spoken": embed(model, [template(t["speaker"], t["text"]) for t in turns]),
            "ctx": embed(model, [p + template(t["speaker"], t["text"]) for p, t in zip(prev, turns, strict=True)]),
        }
        assert np.allclose(stored, vectors, atol=2e-3), "stored vectors are the cached bare-text ones"
        c = Conversation(
            log,
            [t["id"] for t in turns],
            vectors,
            {i + 1: t["time"] for i, t in enumerate(turns)},
            extra,
            [t["speaker"] for t in turns],
            [t["text"] for t in turns],
        )
        qvecs = embed(model, [q["question"] for q in qs])
        for q, qv in zip(qs, qvecs, strict=True):
            dev = is_dev(data["name"], conv["id"], q["id"])
            out.append(Question(c, q["question"], qv, q["evidence"], q["category"], dev))
    return out


def match_of(q: Question, terms: Sequence[str] | None = None, joiner: str = " OR ") -> str | None:
    terms = query_terms(q.text) if terms is None else terms
    return joiner.join('"' + t.replace('"', '""') + '"' for t in terms) if terms else None


def weights_for(q: Question) -> Mapping[str, float]:
    return fusion.LONG_QUERY_WEIGHTS if len(query_terms(q.text)) > fusion.LONG_QUERY_TERMS else fusion.WEIGHTS


def fused(
    q: Question,
    signals: Mapping[str, Cand],
    weights: Mapping[str, float] | None = None,
    k: int = 10,
    neighbours: float = fusion.NEIGHBOUR_SHARE,
    named: Collection[int] = (),
    sitting: float | None = None,
    priors: Callable[[Sequence[int]], Mapping[int, float]] | None = None,
) -> list[int]:
    times = q.conv.times
    ranked = fusion.fuse(
        signals,
        k,
        depth=50,
        weights=weights or weights_for(q),
        neighbours=neighbours,
        times=times,
        named=named,
        sitting=fusion.SITTING_SHARE if sitting is None else sitting,
        priors=priors,
    )
    return [s for s, _, _ in ranked]


def base_signals(q: Question) -> dict[str, Cand]:
    return {"dense": q.conv.dense(q.vector), "keyword": q.conv.keyword(match_of(q))[:50]}


Lever = Callable[[Question], list[int]]


BASE_WEIGHTS = {**fusion.WEIGHTS, "dense": 0.4, "keyword": 0.6}  # a question's weights at 34e683c


def base(q: Question) -> list[int]:
    return fused(q, base_signals(q), None if len(line_vectors(q)) > 1 else BASE_WEIGHTS)


def only(name: str) -> Lever:
    return lambda q: [s for s, _ in base_signals(q)[name][:10]]


MODEL: list[Any] = []  # the embedding model, set by the command (line vectors are embedded on demand)


def line_vectors(q: Question) -> np.ndarray:
    lines = [ln for ln in q.text.split("\n") if ln.strip()]
    return embed(MODEL[0], lines) if len(lines) > 1 else q.vector[None, :]


def dense_scores(
    q: Question, whole: float, centroid: np.ndarray | None = None, beta: float = 0.0, limit: int = 50
) -> Cand:
    """max over the query's lines + whole x the whole query's cosine (single line: the cosine), plus beta x the
    feedback centroid's dot product."""
    v = q.conv.vectors
    lines = line_vectors(q)
    sims = v @ q.vector if len(lines) == 1 else (v @ lines.T).max(axis=1) + whole * (v @ q.vector)
    if centroid is not None:
        sims = sims + beta * (v @ centroid)
    order = np.argsort(-sims, kind="stable")[:limit]
    return [(int(i) + 1, float(sims[i])) for i in order]


def name_words(names: Iterable[str]) -> frozenset[str]:
    """The lower-cased words of speakers' names that can stand for a person in a question (stopwords and one-letter
    words dropped: "Bob the Builder" gives bob, builder): the store's name lookup, from the turns' speakers."""
    return frozenset(
        w
        for name in names
        for w in (t.lower() for t in re.findall(r"\w+", name or ""))
        if len(w) > 1 and w not in STOPWORDS
    )


def spoken(q: Question) -> Question:
    """``q`` with the vector search computes: its speaker names in the first person
    (:mod:`ltm.store.search.speakers`)."""
    held = {s: name_words([s]) for s in set(q.conv.speakers)}
    text = dense_query(
        q.text,
        lambda words: {
            w: {s for s, ws in held.items() if w in ws} for w in words if any(w in ws for ws in held.values())
        },
    )
    if text == q.text:
        return q
    return Question(q.conv, q.text, embed(MODEL[0], [text])[0], q.evidence, q.category, q.dev)


def shipped(
    q: Question,
    *,
    first_person: bool = True,
    feedback: bool = True,
    neighbours: float = fusion.NEIGHBOUR_SHARE,
    speaker: bool = True,
    weights: Mapping[str, float] | None = None,
    keyword: Callable[[Question], Cand] | None = None,
    sitting: float | None = None,
    prior: bool = True,
) -> list[int]:
    """What search ships now: a pasted conversation's lines, else the question's names in the first person,
    Rocchio feedback, the named speaker's boost and each candidate's prior. Each switch takes one of
    them away; ``keyword`` gives the keyword candidates from another index."""
    c, original = q.conv, q
    q = spoken(q) if first_person else q
    kw = (keyword or (lambda q: c.keyword(match_of(q))[:50]))(original)
    if len(line_vectors(q)) > 1:
        return fused(
            q,
            {"dense": dense_scores(q, fusion.LINE_WHOLE), "keyword": kw},
            weights,
            neighbours=neighbours,
            sitting=sitting,
        )
    signals = {"dense": dense_scores(q, fusion.LINE_WHOLE), "keyword": kw}
    if feedback and (not prior or question_stems(original.text) is None):  # a question gets the prior instead
        signals = with_feedback(q, signals, weights, neighbours, sitting)
    return fused(
        q,
        signals,
        weights,
        neighbours=neighbours,
        sitting=sitting,
        named=named_turns(q) if speaker else (),
        priors=priors_of(q, original.text, signals) if prior else None,
    )


def with_feedback(
    q: Question,
    signals: dict[str, Cand],
    weights: Mapping[str, float] | None = None,
    neighbours: float = fusion.NEIGHBOUR_SHARE,
    sitting: float | None = None,
) -> dict[str, Cand]:
    """``signals`` with the dense side searched again by the Rocchio vector (the first fusion's best 5)."""
    seeds = fused(q, signals, weights, k=fusion.FEEDBACK_SEEDS, neighbours=neighbours, sitting=sitting)
    centroid = q.conv.vectors[[s - 1 for s in seeds]].mean(axis=0)
    return {**signals, "dense": dense_scores(q, fusion.LINE_WHOLE, centroid, fusion.FEEDBACK_WEIGHT)}


def priors_of(
    q: Question,
    text: str,
    signals: Mapping[str, Cand],
) -> Callable[[Sequence[int]], dict[int, float]] | None:
    """:func:`ltm.store.search.fusion.prior` of the candidates, as search computes it for a one-line question ``text``
    (``q`` holds the vector search used: the question in the first person)."""
    terms = question_stems(text)
    if terms is None:
        return None
    c = q.conv
    return fusion.prior_source(
        lambda seqs: dict(zip(seqs, (c.vectors[[s - 1 for s in seqs]] @ q.vector).tolist(), strict=True)),
        lambda seqs: {s: c.texts[s - 1] for s in seqs},
        terms,
    )


def named_turns(q: Question) -> set[int]:
    """Seqs of the turns by a speaker the question names (ltm.store.search.speakers' rule)."""
    words = set(query_terms(q.text))
    return {i + 1 for i, who in enumerate(q.conv.speakers) if set(query_terms(who)) & words}


def evaluate(questions: Sequence[Question], lever: Lever) -> dict[str, float]:
    return mean([score([q.conv.ids[s - 1] for s in lever(q)], q.evidence) for q in questions])
