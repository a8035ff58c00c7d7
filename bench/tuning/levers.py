"""Search levers measured on the store's own candidates, dev / test halves (docs/search.md).

"base" is search at 34e683c and "shipped" is search now (each reproduces ``python -m bench.retrieval``); every other
row changes one thing (see :mod:`bench.retrieval.harness`). Chosen on dev (REALTALK chats 1-5, MADial even-numbered
dialogues), confirmed on test (the rest). FriendsQA (its dev and test files as the halves) was added after every
lever was chosen: :func:`sixth_round` takes each one away from what ships, to see what it does there::

    python -m bench.tuning.levers                       # every lever on every set
    LEVERS='^(base|shipped|rocchio)' SETS=realtalk python -m bench.tuning.levers
    LEVERS='^(shipped|keyword$|dense|base$)' SETS=friendsqa python -m bench.tuning.levers
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from bench.retrieval.harness import (
    MODEL,
    Cand,
    Lever,
    Question,
    base,
    base_signals,
    build,
    dense_scores,
    evaluate,
    fused,
    line_vectors,
    match_of,
    only,
    shipped,
    spoken,
    weights_for,
)
from bench.retrieval.run import DATA_DIR
from ltm.store.embedded.keywords import BM25_WEIGHTS
from ltm.store.search import fusion
from ltm.store.search.query import query_terms


def bm25_weights(weights: str) -> Lever:
    def run(q: Question) -> list[int]:
        return fused(q, {"dense": q.conv.dense(q.vector), "keyword": q.conv.keyword(match_of(q), weights)[:50]})

    return run


def context_vector(name: str, weight: float, replace: bool = False) -> Lever:
    """A second dense signal over another vector set of the same turns (or the dense signal replaced)."""

    def run(q: Question) -> list[int]:
        signals = base_signals(q)
        other = q.conv.dense(q.vector, matrix=q.conv.extra[name])
        if replace:
            signals["dense"] = other
        else:
            signals["context"] = other
        return fused(q, signals, {**weights_for(q), "context": weight})

    return run


def smoothed(lam: float, weight: float | None) -> Lever:
    """A free context vector: each turn's vector plus ``lam`` x its previous turn's (same sitting), re-normalised."""

    def run(q: Question) -> list[int]:
        c = q.conv
        if "smooth" + str(lam) not in c.extra:
            v = c.vectors.copy()
            t = np.array([c.times[i + 1] for i in range(len(v))])
            near = np.zeros(len(v), dtype=bool)
            near[1:] = np.abs(t[1:] - t[:-1]) <= fusion.NEIGHBOUR_GAP
            v[1:][near[1:]] += lam * c.vectors[:-1][near[1:]]
            c.extra["smooth" + str(lam)] = v / np.linalg.norm(v, axis=1, keepdims=True)
        signals = base_signals(q)
        other = c.dense(q.vector, matrix=c.extra["smooth" + str(lam)])
        if weight is None:
            signals["dense"] = other
            return fused(q, signals)
        signals["context"] = other
        return fused(q, signals, {**weights_for(q), "context": weight})

    return run


def rocchio(beta: float, top: int, source: str = "fused", weight: float | None = None) -> Lever:
    """Dense pseudo-relevance feedback: q + beta x mean(vectors of the top ``top`` hits), re-searched, re-fused."""

    def run(q: Question) -> list[int]:
        signals = base_signals(q)
        seeds = fused(q, signals, k=top) if source == "fused" else [s for s, _ in signals[source][:top]]
        if not seeds:
            return fused(q, signals)
        centroid = q.conv.vectors[[s - 1 for s in seeds]].mean(axis=0)
        qv = q.vector + beta * centroid
        qv = qv / np.linalg.norm(qv)
        if weight is None:
            signals["dense"] = q.conv.dense(qv)
            return fused(q, signals)
        signals["context"] = q.conv.dense(qv)
        return fused(q, signals, {**weights_for(q), "context": weight})

    return run


_WORD = re.compile(r"\w+", re.UNICODE)


def rm3(terms_n: int, top: int, beta: float, source: str = "keyword") -> Lever:
    """Keyword pseudo-relevance feedback: the top hits' most distinctive words as a second keyword query, its
    scores added with weight ``beta``."""

    def run(q: Question) -> list[int]:
        signals = base_signals(q)
        seeds = fused(q, signals, k=top) if source == "fused" else [s for s, _ in signals["keyword"][:top]]
        if not seeds:
            return fused(q, signals)
        bodies = q.conv.log.bodies(seeds)
        have = set(query_terms(q.text))
        counts: dict[str, float] = {}
        for s in seeds:
            words = [w for w in query_terms(json.loads(bodies[s])["content"]) if w not in have and len(w) > 2]
            for w in set(words):
                counts[w] = counts.get(w, 0.0) + 1.0
        expansion = sorted(counts, key=lambda w: (-counts[w], w))[:terms_n]
        extra = q.conv.keyword(match_of(q, expansion)) if expansion else []
        merged = dict(signals["keyword"][:50])
        scale = (signals["keyword"][0][1] if signals["keyword"] else 1.0) / (extra[0][1] if extra else 1.0)
        for s, v in extra[:50]:
            merged[s] = merged.get(s, 0.0) + beta * v * scale
        signals["keyword"] = sorted(merged.items(), key=lambda x: -x[1])[:50]
        return fused(q, signals)

    return run


def confidence(power: float) -> Lever:
    """Each signal's weight times (its top score's margin over its 10th, on its own scale) ** power."""

    def run(q: Question) -> list[int]:
        signals = base_signals(q)
        w = dict(weights_for(q))
        for name in ("dense", "keyword"):
            hits = signals[name]
            if len(hits) >= 10 and hits[0][1] > 0:
                floor = hits[min(len(hits), 50) - 1][1] if name == "dense" else 0.0
                gap = (hits[0][1] - hits[9][1]) / max(1e-9, hits[0][1] - floor)
                w[name] *= gap**power
        total = w["dense"] + w["keyword"]
        if total > 0:
            base_total = weights_for(q)["dense"] + weights_for(q)["keyword"]
            w["dense"], w["keyword"] = w["dense"] / total * base_total, w["keyword"] / total * base_total
        return fused(q, signals, w)

    return run


def stopwords(extra: str) -> Lever:
    drop = set(extra.split())

    def run(q: Question) -> list[int]:
        terms = [t for t in query_terms(q.text) if t not in drop] or query_terms(q.text)
        return fused(q, {"dense": q.conv.dense(q.vector), "keyword": q.conv.keyword(match_of(q, terms))[:50]})

    return run


QUESTION_WORDS = "tell remember recall mention mentioned say said talk talked about ask asked know think"


def multi_line(kind: str, whole: float = 0.0, then_rocchio: float = 0.0) -> Lever:
    """A multi-line query (a pasted conversation): each line embedded; dense by the mean line vector (plus
    ``whole`` x the whole query's), or by each memory's best line ("max")."""

    def run(q: Question) -> list[int]:
        lines = line_vectors(q)
        signals = base_signals(q)
        if len(lines) > 1:
            if kind == "mean":
                qv = lines.mean(axis=0) + whole * q.vector
                qv = qv / np.linalg.norm(qv)
                signals["dense"] = q.conv.dense(qv)
            else:
                sims = (q.conv.vectors @ lines.T).max(axis=1) + whole * (q.conv.vectors @ q.vector)
                order = np.argsort(-sims, kind="stable")[:50]
                signals["dense"] = [(int(i) + 1, float(sims[i])) for i in order]
        if then_rocchio:
            seeds = fused(q, signals, k=5)
            qv = signals_query(q, signals) + then_rocchio * q.conv.vectors[[s - 1 for s in seeds]].mean(axis=0)
            signals["dense"] = q.conv.dense(qv / np.linalg.norm(qv))
        return fused(q, signals)

    return run


def signals_query(q: Question, signals: Mapping[str, Cand]) -> np.ndarray:
    lines = line_vectors(q)
    if len(lines) > 1:
        v = lines.mean(axis=0) + q.vector
        return np.asarray(v / np.linalg.norm(v))
    return q.vector


def combined(whole: float, beta: float, top: int = 5) -> Lever:
    def run(q: Question) -> list[int]:
        signals = {"dense": dense_scores(q, whole), "keyword": q.conv.keyword(match_of(q))[:50]}
        if beta:
            seeds = fused(q, signals, k=top)
            if seeds:
                c = q.conv.vectors[[s - 1 for s in seeds]].mean(axis=0)
                signals["dense"] = dense_scores(q, whole, c, beta)
        return fused(q, signals)

    return run


def neighbourhood(shares: Sequence[float]) -> Lever:
    """Neighbours at distance d (same sitting) lend shares[d - 1] of their score (base: shares (0.3,))."""

    def run(q: Question) -> list[int]:
        ranked = fusion.fuse(base_signals(q), 10_000, depth=50, weights=weights_for(q), neighbours=0.0)
        score = {s: v for s, v, _ in ranked}
        t = q.conv.times

        def lent(i: int, j: int) -> float:
            return score.get(j, 0.0) if j in t and abs(t[i] - t[j]) <= fusion.NEIGHBOUR_GAP else 0.0

        out = {
            i: v + sum(w * max(lent(i, i - d), lent(i, i + d)) for d, w in enumerate(shares, 1))
            for i, v in score.items()
        }
        return sorted(out, key=lambda i: (-out[i], -i))[:10]

    return run


def segment(width: int, weight: float, feedback: bool = True) -> Lever:
    """A third signal: the cosine of the query to the mean vector of the turns within ``width`` of each turn
    (same sitting only): a topical segment (SeCom-like, without a model), beside the turn's own."""

    def run(q: Question) -> list[int]:
        c = q.conv
        key = f"seg{width}"
        if key not in c.extra:
            v = c.vectors
            t = np.array([c.times[i + 1] for i in range(len(v))])
            seg = np.zeros_like(v)
            for i in range(len(v)):
                lo, hi = max(0, i - width), min(len(v), i + width + 1)
                near = [j for j in range(lo, hi) if abs(t[j] - t[i]) <= fusion.NEIGHBOUR_GAP]
                seg[i] = v[near].mean(axis=0)
            c.extra[key] = seg / np.linalg.norm(seg, axis=1, keepdims=True)
        signals = {"dense": dense_scores(q, 1.0), "keyword": q.conv.keyword(match_of(q))[:50]}
        if feedback and len(line_vectors(q)) == 1:
            seeds = fused(q, signals, k=5)
            signals["dense"] = dense_scores(q, 1.0, c.vectors[[s - 1 for s in seeds]].mean(axis=0), 0.3)
        signals["context"] = c.dense(q.vector, matrix=c.extra[key])
        return fused(q, signals, {**weights_for(q), "context": weight})

    return run


def speaker_boost(boost: float, who: str = "0.6") -> Lever:
    """Turns by a speaker the query names get ``boost`` added to their fused score (on top of what ships)."""

    def run(q: Question) -> list[int]:
        c = q.conv
        words = set(query_terms(q.text))
        named = {s for s in set(c.speakers) if set(query_terms(s)) & words}
        signals = {"dense": dense_scores(q, 1.0), "keyword": c.keyword(match_of(q), f"1.0, {who}, 0.6, 0.3")[:50]}
        if len(line_vectors(q)) == 1:
            seeds = fused(q, signals, k=5)
            signals["dense"] = dense_scores(q, 1.0, c.vectors[[s - 1 for s in seeds]].mean(axis=0), 0.3)
        ranked = fusion.fuse(signals, 200, depth=50, weights=weights_for(q), times=c.times)
        score = {s: v + (boost if c.speakers[s - 1] in named else 0.0) for s, v, _ in ranked}
        return sorted(score, key=lambda i: (-score[i], -i))[:10]

    return run


_INDEXES: dict[tuple[int, str], sqlite3.Connection] = {}


def other_index(tokenize: str, days: str = "kept") -> Callable[[Question], Cand]:
    """Keyword candidates from a copy of the conversation's FTS5 index (same columns and rows) built with another
    tokenizer, or with its *at* column (the message's day in words) emptied (``days="none"``) or replaced by as many
    words that match no question (``"filler"``: FTS5's bm25 normalises by the length of all columns together, so
    this keeps the lengths and takes only the dates away): the stemming and day-word levers."""

    def at(text: str) -> str:
        return text if days == "kept" else "" if days == "none" else " ".join("qqzx" for _ in text.split())

    def run(q: Question) -> Cand:
        key = (id(q.conv), f"{tokenize}/{days}")
        if key not in _INDEXES:
            db = sqlite3.connect(":memory:")
            db.execute(f"CREATE VIRTUAL TABLE fts USING fts5(content, who, at, context, tokenize='{tokenize}')")
            rows = q.conv.log.db.execute("SELECT rowid, content, who, at, context FROM fts").fetchall()
            db.executemany(
                "INSERT INTO fts(rowid, content, who, at, context) VALUES (?, ?, ?, ?, ?)",
                [(r, c, w, at(a), x) for r, c, w, a, x in rows],
            )
            _INDEXES[key] = db
        match = match_of(q)
        if match is None:
            return []
        sql = f"SELECT rowid, -bm25(fts, {BM25_WEIGHTS}) FROM fts WHERE fts MATCH ? ORDER BY 2 DESC LIMIT 50"
        return [(int(r), float(v)) for r, v in _INDEXES[key].execute(sql, [match])]

    return run


def rrf_of_shipped(q: Question) -> list[int]:
    """Shipped's signals (first-person dense, keyword) fused by equal-weight reciprocal ranks (k = 60), as at
    fb8cae6: no neighbour share, no speaker bonus, no feedback."""
    c, q2 = q.conv, spoken(q)
    lists = [[s for s, _ in dense_scores(q2, fusion.LINE_WHOLE)], [s for s, _ in c.keyword(match_of(q))[:50]]]
    score: dict[int, float] = {}
    for ranking in lists:
        for rank, s in enumerate(ranking, 1):
            score[s] = score.get(s, 0.0) + 1.0 / (60 + rank)
    return sorted(score, key=lambda s: (-score[s], -s))[:10]


PORTER = "porter unicode61 remove_diacritics 2"  # the store's own tokenizer (ltm.store.embedded.keywords.FTS_SPEC)


def sixth_round() -> dict[str, Lever]:
    """Shipped with one lever taken away (or varied), to see what each does on a set none was tuned on (FriendsQA)."""
    out: dict[str, Lever] = {
        "shipped": shipped,
        "shipped, no stemming (unicode61)": lambda q: shipped(q, keyword=other_index("unicode61 remove_diacritics 2")),
        "shipped, no day words": lambda q: shipped(q, keyword=other_index(PORTER, days="none")),
        "shipped, day words as filler": lambda q: shipped(q, keyword=other_index(PORTER, days="filler")),
        "shipped, equal RRF (fb8cae6 fusion)": rrf_of_shipped,
        "shipped, no neighbour share": lambda q: shipped(q, neighbours=0.0),
        "shipped, no Rocchio": lambda q: shipped(q, feedback=False),
        "shipped, no speaker bonus": lambda q: shipped(q, speaker=False),
        "shipped, no first person": lambda q: shipped(q, first_person=False),
        "keyword": only("keyword"),
        "dense": only("dense"),
        "dense first person": lambda q: [s for s, _ in dense_scores(spoken(q), fusion.LINE_WHOLE)[:10]],
    }

    def weighted(**changed: float) -> Lever:
        return lambda q: shipped(q, weights={**weights_for(q), **changed})

    def shared(share: float) -> Lever:
        return lambda q: shipped(q, neighbours=share)

    for dense in (0.3, 0.4, 0.6, 0.7):
        out[f"shipped, dense {dense} / keyword {1 - dense:.1f}"] = weighted(dense=dense, keyword=round(1 - dense, 2))
    for share in (0.15, 0.5):
        out[f"shipped, neighbour share {share}"] = shared(share)
    for bonus in (0.1, 0.5):
        out[f"shipped, speaker bonus {bonus}"] = weighted(speaker=bonus)
    return out


def levers() -> dict[str, Lever]:
    """Every lever docs/search.md reports, by name."""
    out: dict[str, Lever] = {"base": base, "shipped": shipped, "keyword": only("keyword"), "dense": only("dense")}
    for kind in ("mean", "max"):
        for whole in (0.0, 0.5, 1.0, 2.0):
            out[f"lines {kind} whole={whole}"] = multi_line(kind, whole)
    out["lines max whole=1 dense only"] = lambda q: [s for s, _ in dense_scores(q, 1.0)[:10]]
    for whole in (0.5, 1.0):
        for beta in (0.0, 0.3, 0.6):
            for top in (3, 5):
                out[f"combined whole={whole} b={beta} top={top}"] = combined(whole, beta, top)
    for beta in (0.3, 0.6, 1.0):
        for top in (3, 5, 10):
            out[f"rocchio b={beta} top={top}"] = rocchio(beta, top)
        out[f"rocchio b={beta} top=5 beside w=0.3"] = rocchio(beta, 5, weight=0.3)
        out[f"rocchio b={beta} top=5 dense-seeds"] = rocchio(beta, 5, source="dense")
    for boost in (0.05, 0.1, 0.2, 0.3, 0.5, 1.0):
        out[f"speaker boost={boost}"] = speaker_boost(boost)
    for who in ("0.2", "0.6", "1.0"):
        for at in ("0.3", "0.6", "1.0"):
            out[f"bm25 who={who} at={at}"] = bm25_weights(f"1.0, {who}, {at}, 0.3")
    out["stop +question words"] = stopwords(QUESTION_WORDS)
    for name in ("ctx", "spoken"):
        out[f"{name} replace"] = context_vector(name, 0.0, replace=True)
        for w in (0.1, 0.2, 0.35):
            out[f"{name} beside w={w}"] = context_vector(name, w)
    for lam in (0.3, 0.5):
        out[f"smooth lam={lam} replace"] = smoothed(lam, None)
        for w in (0.2, 0.35):
            out[f"smooth lam={lam} beside w={w}"] = smoothed(lam, w)
    for n in (5, 10):
        for beta in (0.2, 0.4):
            out[f"rm3 n={n} top=5 b={beta}"] = rm3(n, 5, beta)
            out[f"rm3 n={n} top=5 b={beta} fused"] = rm3(n, 5, beta, source="fused")
    for p in (0.5, 1.0):
        out[f"confidence p={p}"] = confidence(p)
    for shares in ((0.3, 0.15), (0.3, 0.2), (0.3, 0.1, 0.05), (0.2, 0.1)):
        out[f"window {shares}"] = neighbourhood(shares)
    for width in (1, 2, 3):
        for weight in (0.1, 0.2):
            out[f"segment w={width} weight={weight}"] = segment(width, weight)
    return {**out, **sixth_round()}


def main(table: Callable[[], dict[str, Lever]] | None = None) -> int:
    """Measure ``table()``'s levers (default: :func:`levers`) on every set, or those ``LEVERS`` / ``SETS`` name."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bench.retrieval.cache import local_model

    model = local_model()
    MODEL.append(model)
    chosen = (table or levers)()
    pattern = os.environ.get("LEVERS")
    if pattern:
        chosen = {k: v for k, v in chosen.items() if re.search(pattern, k)}
    for path in sorted(DATA_DIR.glob(os.environ.get("SETS", "*") + ".json")):
        data = json.loads(path.read_text("utf-8"))
        questions = build(data, model)
        dev = [q for q in questions if q.dev]
        test = [q for q in questions if not q.dev]
        print(f"## {data['name']}: dev {len(dev)}, test {len(test)}", flush=True)
        cats = sorted({q.category for q in questions})
        for name, lever in chosen.items():
            d, t = evaluate(dev, lever), evaluate(test, lever)
            a = evaluate(questions, lever)
            per = {c: evaluate([q for q in questions if q.category == c], lever)["recall@10"] for c in cats}
            print(
                f"{name:34s} dev {d['recall@10']:.3f} mrr {d['mrr']:.3f} | test {t['recall@10']:.3f} "
                f"mrr {t['mrr']:.3f} | all {a['recall@10']:.3f} | " + " ".join(f"{c} {v:.3f}" for c, v in per.items()),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
