"""Hybrid ranking: calibrated fusion, flat-signal fallback, exact matches first, deterministic
ties, and the time window a query names."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.store import search_many
from ltm.store.search import fusion
from ltm.store.search.fusion import (
    FEATURES_MAX_CHARS,
    LINE_WHOLE,
    LONG_QUERY_TERMS,
    LONG_QUERY_WEIGHTS,
    NEIGHBOUR_GAP,
    PRIOR,
    SITTING_SHARE,
    SITTING_SPAN,
    WEIGHTS,
    fuse,
    line_scores,
    normalised_text,
    prior,
    prior_features,
    priors,
    stems,
)
from ltm.store.search.query import MAX_LINES, query_lines, question_stems
from tests.support.embeddings import ConceptEmbedding


def test_the_exact_sentence_beats_its_word_swapped_twin(settings: Settings) -> None:
    """Both sentences hold the same words, so every signal tied and the older, swapped
    one came first in hybrid mode."""
    with MemoryStorage("food", settings=settings) as store:
        store.add(Message(content="I prefer dumplings over sourdough", role="user"))
        store.add(Message(content="I prefer sourdough over dumplings", role="user"))
        store.add(Message(content="Sourdough needs a starter", role="user"))
        for query in ("I prefer sourdough over dumplings", "i prefer SOURDOUGH over dumplings!"):
            hits = store.search(query, k=3)
            assert hits[0].message.content == "I prefer sourdough over dumplings", query
        hits = store.search("I prefer dumplings over sourdough", k=3)
        assert hits[0].message.content == "I prefer dumplings over sourdough"


def test_a_flat_signal_defers_to_the_other() -> None:
    dense = [(1, 0.9), (2, 0.5), (3, 0.2)]
    flat_keyword = [(3, 4.0), (2, 4.0), (1, 4.0)]  # every candidate scored alike: no information
    assert [s for s, _, _ in fuse({"dense": dense, "keyword": flat_keyword}, 3)] == [1, 2, 3]
    assert [s for s, _, _ in fuse({"dense": dense, "keyword": []}, 3)] == [1, 2, 3]
    assert [s for s, _, _ in fuse({"keyword": [(7, 3.0), (8, 1.0)]}, 3)] == [7, 8]


def test_scores_are_calibrated_not_rank_only() -> None:
    """A message both signals rank second beats one a single signal ranks first only when the scores say so."""
    dense = [(1, 0.80), (2, 0.79)] + [(10 + i, 0.30) for i in range(48)]
    keyword = [(2, 9.0), (3, 1.0)]
    ranked = fuse({"dense": dense, "keyword": keyword}, 3, neighbours=0.0)
    assert ranked[0][0] == 2  # near the top of dense and best by keyword
    assert ranked[0][2] == ("dense", "keyword")
    assert ranked[0][1] == WEIGHTS["dense"] * (0.79 - 0.30) / (0.80 - 0.30) + WEIGHTS["keyword"] * 1.0


def test_neighbours_lend_a_share_and_long_queries_lean_on_meaning() -> None:
    dense = [(1, 0.9), (7, 0.6)] + [(20 + i, 0.2) for i in range(48)]
    keyword = [(7, 4.0), (2, 3.9)]
    alone = dict((s, v) for s, v, _ in fuse({"dense": dense, "keyword": keyword}, 50, neighbours=0.0))
    shared = dict((s, v) for s, v, _ in fuse({"dense": dense, "keyword": keyword}, 50, neighbours=0.2))
    assert shared[2] == alone[2] + 0.2 * alone[1]  # the turn after the best one
    assert shared[7] == alone[7]  # no neighbour among the candidates
    short = fuse({"dense": dense, "keyword": keyword}, 1, neighbours=0.0)
    long = fuse({"dense": dense, "keyword": keyword}, 1, neighbours=0.0, weights=LONG_QUERY_WEIGHTS)
    assert short[0][0] == 7 and long[0][0] == 1


def test_only_a_neighbour_from_the_same_sitting_lends() -> None:
    """Notes added one after the other days apart (MADial-Bench's memories) are not a conversation: the
    neighbour's share needs the two written within NEIGHBOUR_GAP (REALTALK's turns: 97.6% within 6 hours)."""
    dense = [(1, 0.9), (7, 0.6)] + [(20 + i, 0.2) for i in range(48)]
    keyword = [(7, 4.0), (2, 3.9)]
    signals = {"dense": dense, "keyword": keyword}
    alone = dict((s, v) for s, v, _ in fuse(signals, 50, neighbours=0.0))
    chat = {1: 1000.0, 2: 1000.0 + NEIGHBOUR_GAP}  # the reply came within the gap
    notes = {1: 1000.0, 2: 1000.0 + NEIGHBOUR_GAP + 1}
    shared = dict((s, v) for s, v, _ in fuse(signals, 50, neighbours=0.2, times=chat, sitting=0.0))
    assert shared[2] == alone[2] + 0.2 * alone[1]
    assert dict((s, v) for s, v, _ in fuse(signals, 50, neighbours=0.2, times=notes, sitting=0.0))[2] == alone[2]


def test_a_candidate_gets_a_share_of_the_best_other_candidate_of_its_sitting() -> None:
    """Of two turns that score alike, the one said in the sitting where the question's
    topic came up ranks first; a candidate whose time is unknown lends and gets nothing."""
    dense = [(1, 0.9), (5, 0.6), (9, 0.6)] + [(20 + i, 0.2) for i in range(47)]
    signals = {"dense": dense}
    alone = dict((s, v) for s, v, _ in fuse(signals, 50, neighbours=0.0, sitting=0.0))
    assert [s for s, _, _ in fuse(signals, 3, neighbours=0.0, sitting=0.0)] == [1, 9, 5]  # tie: the newer first
    times = {1: 1000.0, 5: 1000.0 + NEIGHBOUR_GAP, 9: 1000.0 + 3 * NEIGHBOUR_GAP}
    ranked = fuse(signals, 50, neighbours=0.0, times=times, sitting=SITTING_SHARE)
    scores = {s: v for s, v, _ in ranked}
    assert [s for s, _, _ in ranked[:3]] == [1, 5, 9]
    assert scores[5] == pytest.approx(alone[5] + SITTING_SHARE * alone[1])
    assert scores[1] == pytest.approx(alone[1] + SITTING_SHARE * alone[5])
    assert scores[9] == pytest.approx(alone[9])  # nothing else within the gap
    assert scores[20] == pytest.approx(alone[20])  # time unknown
    assert dict((s, v) for s, v, _ in fuse(signals, 50, neighbours=0.0, sitting=SITTING_SHARE)) == alone  # no times
    far = {1: 1000.0, 5 + SITTING_SPAN: 1000.0}  # same time, too many messages apart (notes of one day)
    dense = [(1, 0.9), (5 + SITTING_SPAN, 0.6)] + [(100 + i, 0.2) for i in range(48)]
    assert dict((s, v) for s, v, _ in fuse({"dense": dense}, 50, neighbours=0.0, times=far)) == dict(
        (s, v) for s, v, _ in fuse({"dense": dense}, 50, neighbours=0.0, sitting=0.0)
    )


def test_days_apart_notes_lend_nothing_through_the_store(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through search (both engines): a note's topic does not spill onto the unrelated note added right after it
    days later, while the reply said a minute after a question still gets the question's topic. (The prior, whose
    length and cosine terms differ between the two notes, is off: scores are the fusion's alone.)"""
    monkeypatch.setattr("ltm.store.search.fusion.PRIOR", {name: 0.0 for name in PRIOR})
    hour = 3600.0
    with MemoryStorage("notes", settings=settings) as store:
        store.add_batch(
            [
                Message(content="filler about the weather", role="Ann", created_at=0.0),
                Message(content="Booked the violin lesson with Mr Petrov", role="Ann", created_at=10 * hour),
                Message(content="Bought groceries for the week", role="Ann", created_at=100 * hour),
                Message(content="Paid the electricity bill", role="Ann", created_at=200 * hour),
            ]
        )
        hits = store.search("violin lesson Petrov", k=4, explain=True)
        scores = {h.message.content: h.score for h in hits}
        assert scores.get("Bought groceries for the week", 0.0) <= scores.get("Paid the electricity bill", 0.0) + 1e-9
    with MemoryStorage("chat", settings=settings) as store:
        store.add_batch(
            [
                Message(content="filler about the weather", role="Ann", created_at=0.0),
                Message(content="Booked the violin lesson with Mr Petrov", role="Ann", created_at=10 * hour),
                Message(content="Bought groceries for the week", role="Bob", created_at=10 * hour + 60),
                Message(content="Paid the electricity bill", role="Bob", created_at=200 * hour),
            ]
        )
        hits = store.search("violin lesson Petrov", k=4)
        scores = {h.message.content: h.score for h in hits}
        assert scores["Bought groceries for the week"] > scores.get("Paid the electricity bill", 0.0) + 0.05


def test_ties_are_broken_by_dense_then_keyword_then_newest() -> None:
    ranked = fuse({"dense": [(4, 0.5), (5, 0.5), (6, 0.1)]}, 3)
    assert [s for s, _, _ in ranked] == [5, 4, 6]  # equal cosine: the newer message first
    ranked = fuse({"dense": [(1, 0.9), (2, 0.1)], "keyword": [(2, 5.0), (1, 1.0)]}, 2, exact=[2])
    assert ranked[0][0] == 2
    assert normalised_text("  I prefer, SOURDOUGH!  ") == "i prefer sourdough"


def test_a_named_date_favours_what_was_said_that_day(settings: Settings) -> None:
    """The keyword index holds each message's UTC day as words, so a question naming the day reaches it."""

    def day(d: int) -> float:
        return datetime(2024, 1, d, 12, tzinfo=timezone.utc).timestamp()

    with MemoryStorage("days", settings=settings) as store:
        store.add_batch(
            [
                Message(content="Made pasta with pesto tonight", role="Kate", created_at=day(3)),
                Message(content="Made pasta carbonara tonight", role="Kate", created_at=day(5)),
                Message(content="Made pasta with clams tonight", role="Kate", created_at=day(8)),
            ]
        )
        hits = store.search("What pasta did Kate make on 5 January 2024?", k=3)
        assert hits[0].message.content == "Made pasta carbonara tonight"
        hits = store.search("What pasta did Kate make on January 8, 2024?", k=3)
        assert hits[0].message.content == "Made pasta with clams tonight"


def test_the_time_window_signal_when_weighted() -> None:
    """Off by default (it did not pay on REALTALK); when weighted, messages inside the named window get the
    boost and, if the dense list missed them, their cosine on its scale."""
    weights = {**WEIGHTS, "time": 0.3}
    dense = [(1, 0.9), (2, 0.5)]
    ranked = fuse({"dense": dense, "time": [(9, 0.7), (2, 0.5)]}, 3, weights=weights, neighbours=0.0)
    assert [s for s, _, _ in ranked] == [9, 1, 2]
    assert ranked[0][2] == ("time",)


def test_query_windows() -> None:
    from ltm.store.search.when import query_window

    def iso(window: tuple[float, float] | None) -> list[str]:
        assert window is not None
        return [datetime.fromtimestamp(x, timezone.utc).date().isoformat() for x in window]

    now = datetime(2024, 3, 10, 15, tzinfo=timezone.utc).timestamp()
    assert iso(query_window("what did Elise play 5 Jan 2024?", now)) == ["2024-01-05", "2024-01-06"]
    assert iso(query_window("finished it on 02.01.2024", now)) == ["2024-01-02", "2024-01-03"]
    assert iso(query_window("on January 5th, 2024", now)) == ["2024-01-05", "2024-01-06"]
    assert iso(query_window("in March 2024", now)) == ["2024-03-01", "2024-04-01"]
    assert iso(query_window("what did I do yesterday", now)) == ["2024-03-09", "2024-03-10"]
    assert query_window("2666 by Bolano", now) is None
    assert query_window("on 31.02.2024", now) is None


def test_relative_dates_in_words() -> None:
    """Spelled-out counts, nights and weekends, and a month without its year (the latest one up to now)."""
    from ltm.store.search.when import query_window

    def iso(query: str) -> list[str] | None:
        now = datetime(2024, 3, 10, 15, tzinfo=timezone.utc).timestamp()  # a Sunday
        window = query_window(query, now)
        return None if window is None else [datetime.fromtimestamp(x, timezone.utc).date().isoformat() for x in window]

    assert iso("what did I eat last night") == ["2024-03-09", "2024-03-10"]
    assert iso("the film we saw two days ago") == iso("a couple of days ago") == ["2024-03-08", "2024-03-10"]
    assert iso("a week ago") == iso("1 week ago") == ["2024-02-29", "2024-03-08"]
    assert iso("where did we go last weekend") == ["2024-03-02", "2024-03-04"]  # not the weekend of today
    assert iso("the trip in May") == ["2023-05-01", "2023-06-01"]  # no May yet this year: last year's
    assert iso("what did she read in January?") == ["2024-01-01", "2024-02-01"]
    assert iso("every book since December") == ["2023-12-01", "2024-03-11"]  # up to today
    assert iso("May I ask what you cooked") is None and iso("you may go") is None  # the verb, no month
    assert iso("what did I do last may") is None


def test_relative_dates_count_from_the_newest_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chat imported years later reads "yesterday" as its people meant it: from its newest message, not the
    clock (measured with the time signal weighted; it is off by default, see fusion.WEIGHTS)."""
    import ltm.store.embedded.retrieval as retrieval

    monkeypatch.setattr(retrieval, "WEIGHTS", {**WEIGHTS, "time": 0.5})

    def day(d: int) -> float:
        return datetime(2021, 6, d, 12, tzinfo=timezone.utc).timestamp()

    settings = Settings(storage_dir=tmp_path / "storage", embedding="hash")
    with MemoryStorage("chat", settings=settings) as store:
        store.add_batch(
            [
                Message(content="Cooked a spicy lentil curry for dinner", role="Kate", created_at=day(2)),
                Message(content="Cooked a mild lentil soup for dinner", role="Kate", created_at=day(6)),
                Message(content="Work was long, nothing else to report", role="Kate", created_at=day(7)),
            ]
        )
        assert (
            store.search("what did Kate cook yesterday", k=1)[0].message.content
            == "Cooked a mild lentil soup for dinner"
        )
        assert (
            store.search("what did Kate cook 5 days ago", k=1)[0].message.content
            == "Cooked a spicy lentil curry for dinner"
        )


PASTED = "\n".join(
    [  # a pasted conversation: long, and only its last line is about an award
        "Lisa: hey there, guess what happened to me this morning at school",
        "Assistant: tell me everything, I am listening",
        "Lisa: first there was thunder all night long and I barely slept",
        "Assistant: oh no, that sounds exhausting",
        "Lisa: then the exam started right after breakfast",
        "Assistant: and how did it go in the end",
        "Lisa: later I practised guitar for hours",
        "Lisa: and then, a trophy",
    ]
)


def test_a_pasted_conversation_reaches_the_memory_one_line_is_about(settings: Settings) -> None:
    """Embedded whole, the conversation is closest to the memories that mix
    its main topics; each line embedded too, the one line about an award reaches the one memory about it (no
    word in common: the keyword index cannot help). Dense mode stays the whole query's cosine."""
    memories = [
        "medal",
        "rain homework",
        "homework piano",
        "rain piano",
        "storm quiz",
        "quiz song",
        "storm song",
        "rain homework piano",
    ]
    with MemoryStorage("lisa", settings=settings, embedding=ConceptEmbedding()) as store:
        store.add_batch(
            [Message(content=m, role="user", created_at=1000.0 + 86400 * i) for i, m in enumerate(memories)]
        )
        assert store.search(PASTED, k=1)[0].message.content == "medal"
        assert store.search(PASTED, k=8, mode="dense")[-1].message.content == "medal"
        short = "Lisa: a trophy\nAssistant: well done"  # a question, not a pasted conversation: one vector
        assert store.search(short, k=1)[0].message.content == "medal"


def test_query_lines_and_line_scores() -> None:
    assert query_lines("what did Lisa win at the school concert last spring?") == []
    assert query_lines("Lisa: a trophy\nAssistant: well done") == []  # two lines, but a short query
    lines = query_lines(PASTED)
    assert lines[0].startswith("Lisa: hey") and lines[-1] == "Lisa: and then, a trophy" and len(lines) == 8
    many = "\n".join(f"line {i} about topic{i} and subject{i}" for i in range(MAX_LINES + 5))
    assert query_lines(many) == many.splitlines()[-MAX_LINES:]
    vectors = np.eye(3, dtype=np.float32)
    whole = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    line_vectors = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    expected = [(1.0 + LINE_WHOLE * 0.6), (0.0 + LINE_WHOLE * 0.8), (1.0 + 0.0)]
    assert np.allclose(line_scores(vectors, whole, line_vectors), np.array(expected) / (1 + LINE_WHOLE))


def test_feedback_brings_what_the_best_hits_share(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rocchio feedback, for a query that gets no prior (here a pasted conversation of two short lines):
    the best hits for "trophy" were all also about storms, so the storm note (nothing in common with the query
    itself) comes before a chatty note that merely names a medal. A one-line question gets the prior instead, and
    no second dense search (with the prior, feedback added nothing to questions: docs/search.md)."""
    from ltm.store.embedded import retrieval

    chatter = " ".join(f"word{i}" for i in range(20))
    notes = ["trophy rain", "prize storm", "medal rain", "trophy storm", "thunder", f"medal {chatter}"]
    with MemoryStorage("lisa", settings=settings, embedding=ConceptEmbedding()) as store:
        store.add_batch([Message(content=n, role="user", created_at=1000.0 + 86400 * i) for i, n in enumerate(notes)])
        found = [h.message.content for h in store.search("trophy\ntrophy", k=6)]
        assert found.index("thunder") < found.index(f"medal {chatter}")
        dense = [h.message.content for h in store.search("trophy", k=6, mode="dense")]  # the query alone: the medal
        assert dense.index("thunder") > dense.index(f"medal {chatter}")
        engines: list[object] = [retrieval]
        try:  # the PostgreSQL engine's copy of the names, where its driver is installed (not at MetaGPT's pins)
            from ltm.store.pg import searches

            engines.append(searches)
        except ImportError:
            pass
        for engine in engines:
            monkeypatch.setattr(engine, "FEEDBACK_WEIGHT", 0.0)
        without = [h.message.content for h in store.search("trophy\ntrophy", k=6)]
        assert without.index("thunder") > without.index(f"medal {chatter}")  # so feedback moved it

        def no_feedback(*args: object) -> None:
            raise AssertionError("a one-line question is searched by the Rocchio vector")

        for engine in engines:
            monkeypatch.setattr(engine, "FEEDBACK_WEIGHT", 0.3)
            monkeypatch.setattr(engine, "feedback_vector", no_feedback)
        assert len(store.search("trophy", k=6)) == 6


def test_a_question_naming_a_speaker_favours_what_they_said(settings: Settings) -> None:
    """Elise's turn says
    more of the question's words, but the question asks about Kevin, so Kevin's own turn gains on hers (the bonus,
    WEIGHTS["speaker"]) against the same question naming nobody; a word of a longer name is enough ("Fahim" names
    "Fahim Khan"). Keyword mode, which has no bonus, puts Elise's turn first."""
    filler = [
        "Good morning",
        "How was work",
        "The movie was long",
        "I walked the dog",
        "Traffic was bad",
        "Let us call later",
        "The train was late",
        "My phone died",
    ]
    turns = [("elise" if i % 2 else "Kevin", text) for i, text in enumerate(filler)] + [
        ("elise", "Kevin loves sushi, sushi is his favourite"),
        ("Kevin", "Sushi with family"),
        ("Fahim Khan", "Sushi again tonight"),
    ]
    with MemoryStorage("chat", settings=settings) as store:
        store.add_batch(
            [
                Message(content=text, role=who, sent_from=who, created_at=1000.0 + 86400 * i)
                for i, (who, text) in enumerate(turns)
            ]
        )

        def lead(query: str, content: str) -> float:  # how far ``content`` is ahead of Elise's turn
            scores = {h.message.content: h.score for h in store.search(query, k=11)}
            return scores[content] - scores["Kevin loves sushi, sushi is his favourite"]

        assert (
            lead("Where did Kevin eat sushi?", "Sushi with family")
            > lead("Where did they eat sushi?", "Sushi with family") + 0.2
        )
        assert store.search("Where did Fahim eat sushi?", k=3)[0].message.sent_from == "Fahim Khan"
        assert store.search("Where did Kevin eat sushi?", k=3, mode="keyword")[0].message.sent_from == "elise"


@pytest.mark.embedded_only
def test_feedback_over_a_flat_index_ranks_the_first_searchs_pool_as_a_second_scan_would(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hybrid question's feedback search over a flat index ranks the first search's nearest (4 x 50) instead
    of scanning every vector again. Where the pool holds the whole namespace the two give the same hits and
    scores (ties aside: a float's last bits may order two equal scores the other way), with a filter and after a
    delete too; and the second search computes the pool's scores only, not every vector's."""
    from ltm.store.embedded import retrieval
    from ltm.store.embedded.vectors import VectorIndex

    words = ["storm", "trophy", "rain", "medal", "garden", "river", "train", "coffee", "violin", "winter"]
    rng = np.random.default_rng(5)
    notes = [" ".join(rng.choice(words, size=4)) + f" note {i}" for i in range(180)]
    # two-line queries (pasted, short): they get feedback; a one-line question gets the prior instead
    questions = ["storm\ntrophy", "coffee\nin winter", "the violin\nby the river", "medal\ngarden rain"]
    with MemoryStorage("pool", settings=settings) as store:
        store.add_batch(
            [
                Message(content=n, role="user", cause_by="even" if i % 2 else "odd", created_at=1000.0 + 60 * i)
                for i, n in enumerate(notes)
            ]
        )
        store.delete(store.search("storm trophy", k=1, mode="dense")[0].message.id)

        def ranked(pool: int, **kw: object) -> list[list[tuple[float, str]]]:
            monkeypatch.setattr(retrieval, "FEEDBACK_POOL", pool)  # 0: the second full scan
            return [
                sorted((round(-h.score, 5), h.message.id) for h in store.search(q, k=10, **kw))  # type: ignore[arg-type]
                for q in questions
            ]

        assert ranked(4) == ranked(0)
        filtered = ranked(4, filters={"cause_by": "even"})
        assert filtered == ranked(0, filters={"cause_by": "even"}) and all(len(r) == 10 for r in filtered)

        store.add_batch(
            [Message(content=" ".join(rng.choice(words, size=4)) + f" more {i}", role="user") for i in range(300)]
        )
        scanned: list[tuple[int, int | None]] = []  # per search of the content index: k, the seqs it was limited to
        search = VectorIndex.search

        def counted(
            self: VectorIndex,
            queries: np.ndarray,
            k: int,
            allowed: np.ndarray | None = None,
            excluded: frozenset[int] | None = None,
        ) -> object:
            scanned.append((k, None if allowed is None else len(allowed)))
            return search(self, queries, k, allowed, excluded)

        monkeypatch.setattr(VectorIndex, "search", counted)
        for pool, searches in ((4, [(200, None), (50, 200)]), (0, [(50, None), (50, None)])):
            monkeypatch.setattr(retrieval, "FEEDBACK_POOL", pool)  # the pool of 4 x 50: no second scan of 479
            scanned.clear()
            store.search("coffee\nin winter", k=10)
            assert scanned == searches
        scanned.clear()
        store.search("coffee in winter", k=10)  # a question: one scan of 50, then the prior's cosines of the
        assert scanned[0] == (50, None)  # keyword side's candidates it did not rank, over those alone
        assert all(limit is not None and k == limit <= 50 for k, limit in scanned[1:])


def test_the_sitting_share_matches_its_definition_on_random_candidates() -> None:
    """The share is computed over a band of seqs (O(n x SITTING_SPAN) for any k); it must equal the definition: the
    best score among the other candidates within NEIGHBOUR_GAP and SITTING_SPAN messages, none for an unknown time."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 120))
        seqs = [int(s) for s in rng.choice(np.arange(1, 400), size=n, replace=False)]
        dense = sorted(((s, float(rng.random())) for s in seqs), key=lambda h: -h[1])
        times = {s: float(rng.choice([0.0, 1e4, 3e4, 9e4]) + 100 * rng.random()) for s in seqs if rng.random() < 0.9}
        alone = {s: v for s, v, _ in fuse({"dense": dense}, n, neighbours=0.0, sitting=0.0)}
        shared = {s: v for s, v, _ in fuse({"dense": dense}, n, neighbours=0.0, times=times, sitting=0.2)}
        for s in seqs:
            others = [
                alone[o]
                for o in seqs
                if o != s
                and s in times
                and o in times
                and abs(times[s] - times[o]) <= NEIGHBOUR_GAP
                and abs(s - o) <= SITTING_SPAN
            ]
            assert shared[s] == pytest.approx(alone[s] + 0.2 * max(others, default=0.0))


def test_the_prior_is_what_the_fusion_does_not_see() -> None:
    """The prior (docs/search.md): the query's own cosine, the length, a question mark and the share of the
    question's words (by their first letters) a candidate holds, weighed by PRIOR."""
    terms = stems(["recipes", "travel"])
    assert terms == {"recip", "trave"}
    statement = prior(0.4, "Her recipe book, from travelling", terms)
    assert statement == pytest.approx(PRIOR["cosine"] * 0.4 + PRIOR["length"] * math.log1p(5) + PRIOR["coverage"] * 1.0)
    question = prior(0.4, "Her recipe book, from travelling?", terms)
    assert question == pytest.approx(statement + PRIOR["question"])
    assert prior(0.4, "", terms) == pytest.approx(PRIOR["cosine"] * 0.4)
    assert prior(0.4, "x", frozenset()) == pytest.approx(PRIOR["cosine"] * 0.4 + PRIOR["length"] * math.log1p(1))
    assert priors({1: 0.5, 2: 0.1}, {2: "b", 3: "c"}, terms) == {2: prior(0.1, "b", terms)}  # both known, else none


def test_prior_features_are_kept_for_short_texts_only() -> None:
    """A content's prior features are a pure function of its text, kept for recent short texts (a search's
    candidates recur); a long text is worked out each time, so the kept texts stay bounded in memory."""
    short, long = "Did you see the pottery class flyer?", "pottery " * (FEATURES_MAX_CHARS // 8 + 1)
    fusion._kept_features.cache_clear()
    assert prior_features(short) == (
        math.log1p(7),
        True,
        stems(["did", "you", "see", "the", "pottery", "class", "flyer"]),
    )
    assert fusion._kept_features.cache_info().currsize == 1
    assert prior_features(long)[0] == math.log1p(FEATURES_MAX_CHARS // 8 + 1)
    assert fusion._kept_features.cache_info().currsize == 1
    assert prior_features(short + " ") == prior_features(short)
    assert fusion._kept_features.cache_info().currsize == 2


@pytest.mark.parametrize(
    "text",
    [
        "Café déjà-vu: naïve_words 2024-04-09, x1y2z3!",
        "Straße ÉCOLE ab a",
        "",
        "...?",
        "recipes, recipe; RECIPE_book travelling travelled",
        "日本語のテキスト 123456789",
    ],
)
def test_prior_features_are_the_words_stems(text: str) -> None:
    """Each word (a run of word characters of the lower-cased text) counts once for the length, and its first
    STEM letters are its stem."""
    words = re.findall(r"\w+", text.lower())
    fusion._kept_features.cache_clear()
    assert prior_features(text) == (math.log1p(len(words)), text.rstrip().endswith("?"), stems(words))


def test_priors_are_added_after_the_fusion() -> None:
    dense = [(1, 0.8), (2, 0.8), (3, 0.2)]
    assert [s for s, _, _ in fuse({"dense": dense}, 3, neighbours=0.0)] == [2, 1, 3]  # a tie: the newer first
    ranked = fuse({"dense": dense}, 3, neighbours=0.0, priors=lambda seqs: {1: 0.05})
    assert [s for s, _, _ in ranked] == [1, 2, 3]
    assert ranked[0][1] == pytest.approx(WEIGHTS["dense"] + 0.05)
    assert [s for s, _, _ in fuse({"dense": dense}, 3, neighbours=0.0, priors=lambda seqs: {3: 0.6})][0] == 3


def test_only_a_one_line_question_has_stems() -> None:
    assert question_stems("Which recipes did Elise share?") == frozenset({"recip", "elise", "share"})
    assert question_stems("Kevin: hi\nElise: which recipes?") is None  # a pasted conversation
    assert question_stems(" ".join(f"word{i}" for i in range(LONG_QUERY_TERMS + 1))) is None


def test_an_answer_comes_before_a_question_that_repeats_the_words(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The question turn holds the query's words in fewer words, so both signals put it first; the prior (a question
    asks, a longer turn holds more) puts the answer first, in one namespace and across two."""
    filler = [
        "The weather was grey",
        "My phone died again",
        "Traffic was bad",
        "The train was late",
        "Let us call later",
        "I walked the dog",
        "Lunch was cold",
        "The movie was long",
    ]
    turns = ["Which board games do you like?", "Board games with my cousins every Friday: chess, Catan, Carcassonne"]
    query = "Which board games does she play?"
    with MemoryStorage("chat", settings=settings) as store, MemoryStorage("other", settings=settings) as other:
        store.add_batch(
            [Message(content=t, role="user", created_at=1000.0 + 60 * i) for i, t in enumerate(filler + turns)]
        )
        other.add_batch([Message(content=t, role="user") for t in filler])
        assert store.search(query, k=2)[0].message.content == turns[1]
        assert store.search(query, k=2, mode="keyword")[0].message.content == turns[0]
        assert store.search(query, k=2, mode="dense")[0].message.content == turns[0]
        monkeypatch.setattr("ltm.store.search.fusion.PRIOR", {name: 0.0 for name in PRIOR})
        assert store.search(query, k=2)[0].message.content == turns[0]  # without the prior: the question
        assert search_many([store, other], query, k=2)[0].message.content == turns[0]
        # across namespaces the prior is added too: a question mark costing 5 sends the question turn last
        monkeypatch.setattr("ltm.store.search.fusion.PRIOR", {**{name: 0.0 for name in PRIOR}, "question": -5.0})
        assert search_many([store, other], query, k=20)[-1].message.content == turns[0]
        assert store.search(query, k=20)[-1].message.content == turns[0]


def _fuse_by_definition(
    signals: dict[str, list[tuple[int, float]]],
    k: int,
    *,
    depth: int,
    weights: dict[str, float],
    times: dict[int, float],
    named: set[int],
    exact: list[int],
    bonus: dict[int, float],
) -> list[tuple[int, float, tuple[str, ...]]]:
    """fuse as its docstring states it, one step after the other over whole dicts (no time signal)."""

    def scaled(hits: list[tuple[int, float]], zero_floor: bool) -> dict[int, float]:
        if not hits:
            return {}
        top = hits[0][1]
        floor = 0.0 if zero_floor and len(hits) < depth else hits[-1][1]
        if not zero_floor and len(hits) < depth:
            floor = min(floor, top - fusion.MIN_COSINE_SPREAD)
        if top - floor <= 1e-9 * max(1.0, abs(top)):
            return {}
        return {s: (v - floor) / (top - floor) for s, v in hits}

    found: dict[int, list[str]] = {}
    score: dict[int, float] = {}
    for name, hits in signals.items():
        scale = scaled(hits, name == "keyword")
        for s, _ in hits:
            found.setdefault(s, []).append(name)
            score[s] = score.get(s, 0) + weights.get(name, 0.0) * scale.get(s, 0.0)

    def lent(s: int, other: int) -> float:
        value = score.get(other)
        if value is None or abs(times.get(s, 0.0) - times.get(other, float("inf"))) > NEIGHBOUR_GAP:
            return 0.0
        return value

    score = {s: v + fusion.NEIGHBOUR_SHARE * max(lent(s, s - 1), lent(s, s + 1)) for s, v in score.items()}
    score = {s: v + (weights["speaker"] if s in named else 0.0) for s, v in score.items()}
    shared = {}
    for s, v in score.items():
        others = [
            score[o]
            for o in score
            if o != s
            and s in times
            and o in times
            and abs(times[s] - times[o]) <= NEIGHBOUR_GAP
            and abs(s - o) <= SITTING_SPAN
        ]
        shared[s] = v + (SITTING_SHARE * max(others) if others else 0.0)
    score = shared
    head = sorted(score, key=lambda s: (-score[s], -s))[: fusion.PRIOR_DEPTH]
    score = {s: v + (bonus[s] if s in head and s in bonus else 0.0) for s, v in score.items()}
    for s in exact:
        if s not in found:
            found[s], score[s] = ["exact"], 0.0
    dense, keyword = dict(signals.get("dense", [])), dict(signals.get("keyword", []))
    order = sorted(score, key=lambda s: (-(s in exact), -score[s], -dense.get(s, -2.0), -keyword.get(s, -1.0), -s))
    return [(s, score[s], tuple(found[s])) for s in order[:k]]


def test_the_fusion_equals_its_definition_on_random_candidates() -> None:
    """The fusion's passes (scaling, neighbours, speaker, sitting, prior, order) give exactly, to the last bit, the
    scores and order of the definition computed step by step, ties included."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        depth = int(rng.choice([10, 50]))
        pool = [int(s) for s in rng.choice(np.arange(1, 300), size=120, replace=False)]
        signals: dict[str, list[tuple[int, float]]] = {}
        for name, scale in (("dense", 1.0), ("keyword", 12.0), ("context", 1.0)):
            if rng.random() < 0.8:
                seqs = (
                    pool[: int(rng.integers(0, depth + 1))]
                    if name == "dense"
                    else [int(s) for s in rng.choice(pool, size=int(rng.integers(0, depth + 1)), replace=False)]
                )
                values = np.round(rng.random(len(seqs)) * scale, 1)  # ties on purpose
                signals[name] = sorted(zip(seqs, values.tolist(), strict=True), key=lambda h: -h[1])
        every = {s for hits in signals.values() for s, _ in hits}
        times = {s: float(rng.choice([0.0, 1e4, 5e4])) for s in every if rng.random() < 0.9}
        named = {s for s in every if rng.random() < 0.2}
        exact = [int(s) for s in rng.choice(pool, size=int(rng.integers(0, 2)))]
        bonus = {s: float(rng.random()) for s in every if rng.random() < 0.7}
        k = int(rng.integers(1, 40))

        def priors(seqs: Sequence[int], bonus: dict[int, float] = bonus) -> dict[int, float]:
            return {s: bonus[s] for s in seqs if s in bonus}

        got = fuse(signals, k, depth=depth, weights=WEIGHTS, times=times, named=named, exact=exact, priors=priors)
        assert got == _fuse_by_definition(
            signals, k, depth=depth, weights=dict(WEIGHTS), times=times, named=named, exact=exact, bonus=bonus
        )
