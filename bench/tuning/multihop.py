"""Levers for questions whose evidence spans several turns, or whose answer is implied, on the store's own candidates.

Each lever changes one thing in what search ships (:func:`bench.retrieval.harness.shipped`, rebuilt here so that it
also hands back the fused scores), without an LLM; each is measured on the dev and test halves of every set
(:func:`bench.retrieval.explore.is_dev`), per category, and for questions with one evidence turn against those with
two or more (docs/search.md, *Multi-evidence and implied questions*)::

    python -m bench.tuning.multihop                    # every lever on REALTALK and FriendsQA
    SETS=realtalk LEVERS='^(shipped|second_hop)' python -m bench.tuning.multihop
    python -m bench.tuning.multihop --pool             # where the evidence is: top 10, candidates, their neighbours
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from bench.retrieval.explore import embed
from bench.retrieval.harness import (
    MODEL,
    Question,
    build,
    dense_scores,
    match_of,
    name_words,
    named_turns,
    priors_of,
    spoken,
    weights_for,
    with_feedback,
)
from bench.retrieval.metrics import mean, score
from bench.retrieval.run import DATA_DIR
from ltm.store.search import fusion
from ltm.store.search.query import question_stems
from ltm.store.search.speakers import dense_query

Scored = list[tuple[int, float]]
Lever = Callable[[Question], list[int]]


def ranked(q: Question, extra_dense: Sequence[tuple[int, float]] = (), k: int = 60) -> Scored:
    """What search ranks for ``q`` (the harness's ``shipped``) as (seq, fused score), ``k`` deep; ``extra_dense``:
    more dense candidates (seq, cosine), each at least at the dense list's floor."""
    c, original = q.conv, q
    q = spoken(q)
    dense = dense_scores(q, fusion.LINE_WHOLE)
    signals = {"dense": dense, "keyword": c.keyword(match_of(original))[:50]}
    one_line = "\n" not in original.text.strip()
    if one_line and question_stems(original.text) is None:
        signals = with_feedback(q, signals)
    if extra_dense:
        have = {s for s, _ in dense}
        signals["dense"] = dense + [(s, max(v, dense[-1][1])) for s, v in extra_dense if s not in have]
    fused = fusion.fuse(
        signals,
        k,
        depth=50,
        weights=weights_for(q),
        times=c.times,
        named=named_turns(q) if one_line else (),
        priors=priors_of(q, original.text, signals) if one_line else None,
    )
    return [(s, v) for s, v, _ in fused]


def shipped(q: Question) -> list[int]:
    return [s for s, _ in ranked(q)[:10]]


def second_hop(seeds: int, weight: float, other_sittings: bool = True) -> Lever:
    """A second stage over the first hits' neighbourhood in meaning: each candidate gains ``weight`` x its best
    cosine to one of the first ``seeds`` hits (not itself; with ``other_sittings``, only a seed more than
    SITTING_SPAN messages away, since the sitting share already lends within one)."""

    def run(q: Question) -> list[int]:
        first = ranked(q)
        if len(first) < 2:
            return [s for s, _ in first[:10]]
        vectors = q.conv.vectors
        top = [s for s, _ in first[:seeds]]
        seed_vectors = vectors[[s - 1 for s in top]]
        out = {}
        for s, value in first:
            near = seed_vectors @ vectors[s - 1]
            lent = [
                float(near[i])
                for i, t in enumerate(top)
                if t != s and (not other_sittings or abs(s - t) > fusion.SITTING_SPAN)
            ]
            out[s] = value + weight * (max(lent) if lent else 0.0)
        return sorted(out, key=lambda s: -out[s])[:10]

    return run


def speaker_pool(depth: int) -> Lever:
    """A question naming a speaker also takes the ``depth`` nearest of that speaker's turns as dense candidates."""

    def run(q: Question) -> list[int]:
        named = sorted(named_turns(q))
        if not named:
            return shipped(q)
        rows = np.array(named) - 1
        cosines = q.conv.vectors[rows] @ spoken(q).vector
        best = np.argsort(-cosines)[:depth]
        return [s for s, _ in ranked(q, [(int(rows[i]) + 1, float(cosines[i])) for i in best])[:10]]

    return run


def alternate(q: Question) -> list[int]:
    """A question naming two or more speakers: the top 10 takes their turns in turn (the fused order within each)."""
    first = ranked(q)
    words = {w.lower() for w in re.findall(r"\w+", q.text)}
    people = [p for p in dict.fromkeys(q.conv.speakers) if name_words([p]) & words]
    if len(people) < 2:
        return [s for s, _ in first[:10]]
    queues = {p: [s for s, _ in first if q.conv.speakers[s - 1] == p] for p in people}
    lead = q.conv.speakers[first[0][0] - 1]
    order = [lead, *(p for p in people if p != lead)] if lead in people else people
    out: list[int] = []
    while len(out) < 10 and any(queues.values()):
        out += [queues[p].pop(0) for p in order if queues[p]][: 10 - len(out)]
    return out


LEAD = frozenset(
    (
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "can",
        "could",
        "would",
        "should",
        "will",
        "kind",
        "type",
        "sort",
        "of",
        "the",
        "a",
        "an",
        "any",
        "some",
    )
)


def declarative(text: str) -> str:
    """The question without its leading wh-words and auxiliaries ("What are my hobbies?" -> "my hobbies")."""
    words = text.rstrip(" ?").split()
    i = 0
    while i < len(words) and words[i].lower().strip(",") in LEAD:
        i += 1
    return " ".join(words[i:]) or text


def statement(mix: float) -> Lever:
    """The dense side from the first-person question and its :func:`declarative` remainder, ``mix`` of the latter
    (a second query vector: what an answer would say rather than what the question asks)."""

    def run(q: Question) -> list[int]:
        held = {p: name_words([p]) for p in set(q.conv.speakers)}
        text = dense_query(
            q.text,
            lambda ws: {w: {p for p, n in held.items() if w in n} for w in ws if any(w in n for n in held.values())},
        )
        first_person = spoken(q)
        vectors = q.conv.vectors
        cosines = (1 - mix) * (vectors @ first_person.vector) + mix * (
            vectors @ embed(MODEL[0], [declarative(text)])[0]
        )
        best = np.argsort(-cosines, kind="stable")[:50]
        signals = {
            "dense": [(int(i) + 1, float(cosines[i])) for i in best],
            "keyword": q.conv.keyword(match_of(q))[:50],
        }
        fused = fusion.fuse(
            signals,
            10,
            depth=50,
            weights=weights_for(q),
            times=q.conv.times,
            named=named_turns(first_person),
            priors=priors_of(first_person, q.text, signals),
        )
        return [s for s, _, _ in fused]

    return run


def levers() -> dict[str, Lever]:
    return {
        "shipped": shipped,
        "second_hop 3 x 0.1": second_hop(3, 0.1),
        "second_hop 3 x 0.2": second_hop(3, 0.2),
        "second_hop 3 x 0.2, any sitting": second_hop(3, 0.2, other_sittings=False),
        "second_hop 5 x 0.2": second_hop(5, 0.2),
        "second_hop 5 x 0.3": second_hop(5, 0.3),
        "second_hop 8 x 0.2": second_hop(8, 0.2),
        "speaker_pool 50": speaker_pool(50),
        "alternate named speakers": alternate,
        "statement 0.3": statement(0.3),
        "statement 0.5": statement(0.5),
    }


def groups(questions: Sequence[Question], lever: Lever) -> dict[str, tuple[float, int]]:
    """recall@10 and count: dev, test, all, each category, one evidence turn, two or more."""
    rows = [(q, score([q.conv.ids[s - 1] for s in lever(q)], q.evidence)) for q in questions]

    def of(chosen: Iterable[tuple[Question, dict[str, float]]]) -> tuple[float, int]:
        picked = [r for _, r in chosen]
        return mean(picked)["recall@10"], len(picked)

    out = {"dev": of(r for r in rows if r[0].dev), "test": of(r for r in rows if not r[0].dev), "all": of(rows)}
    for category in sorted({q.category for q in questions}):
        out[category] = of(r for r in rows if r[0].category == category)
    out["1 turn"] = of(r for r in rows if len(r[0].evidence) < 2)
    out["2+ turns"] = of(r for r in rows if len(r[0].evidence) > 1)
    return out


def pool(questions: Sequence[Question]) -> None:
    """Share of the evidence in the top 10, among the candidates (each index's 50 best) and among those and their
    neighbouring turns, by category and evidence count: how much a reranking of the candidates could find."""
    table: dict[str, list[float]] = {}
    for q in questions:
        c = q.conv
        evidence = {c.ids.index(e) + 1 for e in q.evidence}
        found = {s for s, _ in dense_scores(spoken(q), fusion.LINE_WHOLE)} | {s for s, _ in c.keyword(match_of(q))[:50]}
        near = found | {s + d for s in found for d in (-1, 1)}
        row = table.setdefault(f"{q.category}, {'2+ turns' if len(evidence) > 1 else '1 turn'}", [0, 0, 0, 0])
        row[0] += 1
        for i, where in enumerate((set(shipped(q)), found, near), 1):
            row[i] += len(evidence & where) / len(evidence)
    for name, (n, top, cands, nb) in sorted(table.items()):
        print(f"{name:28s} n {n:5.0f}  top 10 {top / n:.3f}  candidates {cands / n:.3f}  with neighbours {nb / n:.3f}")


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bench.retrieval.cache import local_model

    MODEL.append(local_model())
    chosen = levers()
    pattern = os.environ.get("LEVERS")
    if pattern:
        chosen = {k: v for k, v in chosen.items() if re.search(pattern, k)}
    for name in os.environ.get("SETS", "realtalk,friendsqa").split(","):
        questions = build(json.loads((DATA_DIR / f"{name}.json").read_text("utf-8")), MODEL[0])
        print(f"## {name}: {len(questions)} questions", flush=True)
        if "--pool" in (sys.argv[1:] if argv is None else argv):
            pool(questions)
            continue
        for label, lever in chosen.items():
            cells = groups(questions, lever)
            print(f"{label:34s} " + " | ".join(f"{k} {v:.3f}" for k, (v, _) in cells.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
