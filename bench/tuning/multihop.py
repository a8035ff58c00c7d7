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
    Conversation,
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
from ltm.store.search.query import query_terms, question_stems
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


_SITTINGS: dict[int, np.ndarray] = {}


def sittings(c: Conversation) -> np.ndarray:
    """Each turn's sitting number (row i = seq i + 1): a new sitting after a gap of more than NEIGHBOUR_GAP, as the
    store could tell it from the messages' times."""
    if id(c) not in _SITTINGS:
        times = np.array([c.times[i + 1] for i in range(len(c.ids))])
        _SITTINGS[id(c)] = np.concatenate([[0], np.cumsum(np.diff(times) > fusion.NEIGHBOUR_GAP)])
    return _SITTINGS[id(c)]


def sitting_cap(most: int) -> Lever:
    """Diversity by sitting: the fused order, but at most ``most`` turns of one sitting in the top 10 (the ones
    passed over fill what is left, if anything)."""

    def run(q: Question) -> list[int]:
        first, where = ranked(q), sittings(q.conv)
        taken: dict[int, int] = {}
        out: list[int] = []
        rest: list[int] = []
        for s, _ in first:
            n = taken.get(int(where[s - 1]), 0)
            (out if n < most else rest).append(s)
            taken[int(where[s - 1])] = n + 1
        return (out + rest)[:10]

    return run


def mmr(keep: float) -> Lever:
    """Maximal marginal relevance over the fused top 60 with the stored vectors: each pick maximises ``keep`` x its
    fused score (scaled 0-1 over the list) - (1 - ``keep``) x its best cosine to what is already picked."""

    def run(q: Question) -> list[int]:
        first = ranked(q)
        if len(first) < 2:
            return [s for s, _ in first]
        seqs = [s for s, _ in first]
        values = np.array([v for _, v in first])
        rel = (values - values.min()) / max(values.max() - values.min(), 1e-9)
        vec = q.conv.vectors[[s - 1 for s in seqs]]
        sim = vec @ vec.T
        picked = [0]
        best = sim[0].copy()
        while len(picked) < min(10, len(seqs)):
            gain = keep * rel - (1 - keep) * best
            gain[picked] = -np.inf
            i = int(np.argmax(gain))
            picked.append(i)
            best = np.maximum(best, sim[i])
        return [seqs[i] for i in picked]

    return run


def sitting_score(weight: float, top: int) -> Lever:
    """Session then turn: each sitting scores the sum of its ``top`` best fused scores among the candidates
    (scaled by the best sitting's), and each candidate gains ``weight`` x its sitting's score."""

    def run(q: Question) -> list[int]:
        first, where = ranked(q), sittings(q.conv)
        by: dict[int, list[float]] = {}
        for s, v in first:
            by.setdefault(int(where[s - 1]), []).append(v)
        total = {k: sum(sorted(v, reverse=True)[:top]) for k, v in by.items()}
        scale = max(max(total.values()), 1e-9)
        out = {s: v + weight * total[int(where[s - 1])] / scale for s, v in first}
        return sorted(out, key=lambda s: -out[s])[:10]

    return run


def rocchio_rerank(weight: float, seeds: int) -> Lever:
    """Feedback after the fusion, for questions too: each candidate gains ``weight`` x its cosine to the mean
    vector of the first ``seeds`` hits (no second search, no model call)."""

    def run(q: Question) -> list[int]:
        first = ranked(q)
        vectors = q.conv.vectors
        centroid = vectors[[s - 1 for s, _ in first[:seeds]]].mean(axis=0)
        centroid = centroid / max(float(np.linalg.norm(centroid)), 1e-9)
        out = {s: v + weight * float(vectors[s - 1] @ centroid) for s, v in first}
        return sorted(out, key=lambda s: -out[s])[:10]

    return run


def question_feedback(weight: float) -> Lever:
    """The dense side searched again by the Rocchio vector (the store's feedback, ``weight`` x the mean of the first
    fusion's FEEDBACK_SEEDS best) for questions too, beside the prior."""

    def run(q: Question) -> list[int]:
        c, original = q.conv, q
        q = spoken(q)
        signals = {"dense": dense_scores(q, fusion.LINE_WHOLE), "keyword": c.keyword(match_of(original))[:50]}
        seeds = [s for s, _ in ranked(original)[: fusion.FEEDBACK_SEEDS]]
        centroid = c.vectors[[s - 1 for s in seeds]].mean(axis=0)
        signals["dense"] = dense_scores(q, fusion.LINE_WHOLE, centroid, weight)
        one_line = "\n" not in original.text.strip()
        fused = fusion.fuse(
            signals,
            10,
            depth=50,
            weights=weights_for(q),
            times=c.times,
            named=named_turns(q) if one_line else (),
            priors=priors_of(q, original.text, signals) if one_line else None,
        )
        return [s for s, _, _ in fused]

    return run


def subject_said(weight: float, depth: int) -> Lever:
    """Implied answers: a question naming a speaker; each of that speaker's ``depth`` turns nearest the question
    (among the candidates) gains ``weight`` x its cosine rank share, so what the subject said about the topic
    anywhere comes before what others said."""

    def run(q: Question) -> list[int]:
        first = ranked(q)
        named = named_turns(q)
        if not named:
            return [s for s, _ in first[:10]]
        v = spoken(q).vector
        mine = sorted((s for s, _ in first if s in named), key=lambda s: -float(q.conv.vectors[s - 1] @ v))[:depth]
        lift = {s: weight * (1 - i / depth) for i, s in enumerate(mine)}
        out = {s: val + lift.get(s, 0.0) for s, val in first}
        return sorted(out, key=lambda s: -out[s])[:10]

    return run


_VOCABULARY: dict[int, tuple[list[str], np.ndarray]] = {}


def vocabulary(c: Conversation) -> tuple[list[str], np.ndarray]:
    """The conversation's words of four letters or more (the keyword index's terms) and each one's vector: an
    index-time facet without an LLM, one short embedding per new word."""
    if id(c) not in _VOCABULARY:
        words = sorted({w for t in c.texts for w in query_terms(t) if len(w) > 3 and w.isalpha()})
        _VOCABULARY[id(c)] = (words, embed(MODEL[0], words))
    return _VOCABULARY[id(c)]


def word_expansion(count: int, weight: float) -> Lever:
    """The words an answer would use: the ``count`` words of the conversation nearest the question (by the
    model's vectors of the words alone, the question's own left out) are searched as a third, keyword signal of
    ``weight`` ("hobbies" -> painting, hiking, ...)."""

    def run(q: Question) -> list[int]:
        c, original = q.conv, q
        words, vectors = vocabulary(c)
        q = spoken(q)
        own = {w[: fusion.STEM] for w in query_terms(original.text)} | name_words(c.speakers)
        order = np.argsort(-(vectors @ q.vector), kind="stable")
        near = [words[i] for i in order[: count * 4] if words[i][: fusion.STEM] not in own][:count]
        signals = {"dense": dense_scores(q, fusion.LINE_WHOLE), "keyword": c.keyword(match_of(original))[:50]}
        one_line = "\n" not in original.text.strip()
        if one_line and question_stems(original.text) is None:
            signals = with_feedback(q, signals)
        if near:
            signals["expansion"] = c.keyword(match_of(original, near))[:50]
        fused = fusion.fuse(
            signals,
            10,
            depth=50,
            weights={**weights_for(q), "expansion": weight},
            times=c.times,
            named=named_turns(q) if one_line else (),
            priors=priors_of(q, original.text, signals) if one_line else None,
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
        "sitting cap 2": sitting_cap(2),
        "sitting cap 3": sitting_cap(3),
        "mmr 0.9": mmr(0.9),
        "mmr 0.8": mmr(0.8),
        "mmr 0.7": mmr(0.7),
        "sitting score 0.1 x top 3": sitting_score(0.1, 3),
        "sitting score 0.2 x top 3": sitting_score(0.2, 3),
        "sitting score 0.2 x top 1": sitting_score(0.2, 1),
        "rocchio rerank 0.2 x 5": rocchio_rerank(0.2, 5),
        "rocchio rerank 0.4 x 5": rocchio_rerank(0.4, 5),
        "rocchio rerank 0.3 x 10": rocchio_rerank(0.3, 10),
        "question feedback 0.3": question_feedback(0.3),
        "question feedback 0.5": question_feedback(0.5),
        "subject said 0.2 x 10": subject_said(0.2, 10),
        "subject said 0.3 x 20": subject_said(0.3, 20),
        "word expansion 5 x 0.2": word_expansion(5, 0.2),
        "word expansion 10 x 0.2": word_expansion(10, 0.2),
        "word expansion 10 x 0.4": word_expansion(10, 0.4),
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
