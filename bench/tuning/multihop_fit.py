"""How far a reranking of the store's own candidates could go without a model reading question and turn together.

Every candidate of the shipped search (its 60 best, fused scores included: :func:`bench.tuning.multihop.ranked`)
gets features the store could compute from what it keeps (its vectors, texts, speakers, times), and a classifier
of "this candidate is evidence" is fitted on the dev halves of REALTALK and FriendsQA together, then ranks the
test halves; a linear model (what a search could ship as weights) and gradient-boosted trees (a bound on what
these features hold)::

    python -m bench.tuning.multihop_fit                      # both models, dev -> test, per set, type and shape
    SETS=realtalk,friendsqa,madial python -m bench.tuning.multihop_fit

recall@10 on each set's test half (MADial-Bench: its odd dialogues), per category and evidence shape, beside the
shipped order of the same questions.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence

import numpy as np

from bench.retrieval.harness import MODEL, Question, build, match_of, named_turns, spoken
from bench.retrieval.metrics import mean, score
from bench.retrieval.run import DATA_DIR
from bench.tuning.multihop import ranked, sittings
from ltm.store.search import fusion
from ltm.store.search.query import question_stems

FEATURES = (
    "fused",
    "fused / top",
    "1 / (1 + rank)",
    "cosine",
    "cosine, question as asked",
    "keyword / top",
    "named speaker",
    "log length",
    "asks",
    "coverage",
    "cosine to the top 5's mean",
    "log candidates of its sitting",
    "its sitting's top 3 / best sitting's",
    "neighbours' best cosine",
    "answers a question",
    "best cosine to a top-5 hit of another sitting",
)
DEPTH = 60


def features(q: Question) -> tuple[list[int], np.ndarray]:
    """The shipped search's DEPTH best for ``q`` and a row of :data:`FEATURES` for each."""
    c = q.conv
    first = ranked(q, k=DEPTH)
    seqs = [s for s, _ in first]
    values = np.array([v for _, v in first])
    v = spoken(q).vector
    rows = np.array(seqs) - 1
    vec = c.vectors[rows]
    cos, cos_raw = vec @ v, vec @ q.vector
    kw = dict(c.keyword(match_of(q))[:50])
    kw_top = max(kw.values(), default=1.0) or 1.0
    named = named_turns(q)
    terms = question_stems(q.text) or frozenset()
    where = sittings(c)
    centroid = c.vectors[rows[:5]].mean(axis=0)
    centroid /= max(float(np.linalg.norm(centroid)), 1e-9)
    by: dict[int, list[float]] = {}
    for s, val in first:
        by.setdefault(int(where[s - 1]), []).append(val)
    top3 = {k: sum(sorted(x, reverse=True)[:3]) for k, x in by.items()}
    best_sitting = max(top3.values()) or 1.0
    n = len(c.ids)
    seeds = rows[:5]
    seed_vec = c.vectors[seeds]
    out = []
    for i, s in enumerate(seqs):
        text = c.texts[s - 1]
        length, asks, held = fusion.prior_features(text)
        sit = int(where[s - 1])
        near = [float(c.vectors[j] @ v) for j in (s - 2, s) if 0 <= j < n and where[j] == sit]
        prev_asks = s >= 2 and where[s - 2] == sit and c.texts[s - 2].rstrip().endswith("?")
        other = [float(seed_vec[j] @ vec[i]) for j, t in enumerate(seeds) if where[t] != sit]
        out.append(
            [
                values[i],
                values[i] / (values[0] or 1.0),
                1 / (1 + i),
                cos[i],
                cos_raw[i],
                kw.get(s, 0.0) / kw_top,
                float(s in named),
                length,
                float(asks),
                len(terms & held) / len(terms) if terms else 0.0,
                float(vec[i] @ centroid),
                math.log1p(len(by[sit])),
                top3[sit] / best_sitting,
                max(near, default=0.0),
                float(prev_asks),
                max(other, default=0.0),
            ]
        )
    return seqs, np.array(out, dtype=np.float64)


def recall(qs: Sequence[Question], orders: Sequence[list[int]]) -> float:
    return mean([score([q.conv.ids[s - 1] for s in o[:10]], q.evidence) for q, o in zip(qs, orders, strict=True)])[
        "recall@10"
    ]


def report(name: str, qs: Sequence[Question], orders: dict[str, list[list[int]]]) -> None:
    groups: dict[str, list[int]] = {"test": list(range(len(qs)))}
    for i, q in enumerate(qs):
        groups.setdefault(q.category, []).append(i)
        groups.setdefault("2+ turns" if len(q.evidence) > 1 else "1 turn", []).append(i)
    for label, order in orders.items():
        cells = " | ".join(
            f"{g} {recall([qs[i] for i in idx], [order[i] for i in idx]):.3f} ({len(idx)})" for g, idx in groups.items()
        )
        print(f"{name:10s} {label:10s} {cells}", flush=True)


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from bench.retrieval.cache import local_model

    MODEL.append(local_model())
    sets = {}
    for name in os.environ.get("SETS", "realtalk,friendsqa").split(","):
        qs = build(json.loads((DATA_DIR / f"{name}.json").read_text("utf-8")), MODEL[0])
        rows = []
        for q in qs:
            seqs, x = features(q)
            wanted = {q.conv.ids.index(e) + 1 for e in q.evidence if e in q.conv.ids}
            rows.append((q, seqs, x, np.array([s in wanted for s in seqs], dtype=int)))
        sets[name] = rows
        print(f"## {name}: {len(qs)} questions", flush=True)
    fit_sets = os.environ.get("FIT", "realtalk,friendsqa").split(",")
    train = [r for n in fit_sets if n in sets for r in sets[n] if r[0].dev]
    x = np.vstack([r[2] for r in train])
    y = np.concatenate([r[3] for r in train])
    scaler = StandardScaler().fit(x)
    linear = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced").fit(scaler.transform(x), y)
    trees = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15).fit(x, y)
    coef = linear.coef_[0]
    print("linear, per standard deviation: " + ", ".join(f"{f} {c:+.2f}" for f, c in zip(FEATURES, coef, strict=True)))
    for name, rows in sets.items():
        test = [r for r in rows if not r[0].dev]
        qs = [r[0] for r in test]
        orders: dict[str, list[list[int]]] = {"shipped": [r[1] for r in test]}
        for label, model, scaled in (("linear", linear, True), ("trees", trees, False)):
            orders[label] = []
            for _, seqs, xs, _ in test:
                p = model.decision_function(scaler.transform(xs)) if scaled else model.predict_proba(xs)[:, 1]
                orders[label].append([seqs[i] for i in np.argsort(-p, kind="stable")])
        report(name, qs, orders)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
