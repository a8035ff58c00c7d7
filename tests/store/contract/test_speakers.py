"""A question's speaker names in the first person before it is embedded (docs/search.md).

Stored turns are embedded as their bare text ("I went for a run"), never with who said them, so the dense side of
"When did Fahim go for a run?" is computed from "When did I go for a run?" (REALTALK dense recall@10 0.409 ->
0.531; docs/search.md). Which words are names is asked of the namespace itself: the keyword index's *who*
column on the embedded engine, the rows' own names on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.store.search.speakers import dense_query, first_person, name_candidates

NAMES = frozenset({"fahim", "khan", "elise", "kevin", "user"})  # the lower-cased words of the speakers' names


@pytest.mark.parametrize(
    ("query", "dense"),
    [
        ("When did Fahim go for a morning run after the rain?", "When did I go for a morning run after the rain?"),
        ("When did Fahim Khan go for a run?", "When did I go for a run?"),
        ("What are Fahim's hobbies?", "What are my hobbies?"),
        ("What are Fahim\u2019s hobbies?", "What are my hobbies?"),
        ("What games do Kevin and Elise play together?", "What games do we play together?"),
        ("Do Kevin and Elise's parents meet?", "Do I and my parents meet?"),
        ("What did Kevin tell Elise about sushi?", "What did I tell I about sushi?"),
        ("What issues did Fahim have with his girlfriend?", "What issues did I have with my girlfriend?"),
        ("How did Elise feel after she moved? Did it suit her?", "How did I feel after I moved? Did it suit my?"),
        ("Who did Kevin tell about himself and him?", "Who did I tell about myself and me?"),
        ("Do Kevin and Elise like his dog?", "Do we like his dog?"),  # two people: whose dog is unknown
    ],
)
def test_names_become_the_first_person(query: str, dense: str) -> None:
    assert first_person(query, NAMES) == dense


@pytest.mark.parametrize(
    "query",
    [
        "what did the user ask about the deadline?",  # a lower-case word is a role, not a name
        "When did Alice go for a run?",  # not a speaker of this namespace
        "Fahim?",  # nothing left to search by
        "Kevin and Elise",
        "Kevin: " + " ".join(f"word{i}" for i in range(30)) + "\nElise: yes",  # a pasted conversation
    ],
)
def test_left_alone(query: str) -> None:
    assert first_person(query, NAMES) == query


def test_which_words_are_looked_up() -> None:
    assert name_candidates("When did Fahim tell Elise about The Shining?") == (["fahim", "elise", "shining"], False)
    assert name_candidates("when did fahim tell elise?") == (["fahim", "tell", "elise"], True)  # no capital at all
    assert name_candidates("What did the user say?") == ([], False)
    asked: list[list[str]] = []

    def lookup(words: list[str]) -> dict[str, set[str]]:
        asked.append(words)
        return {}

    assert dense_query("What did they say?", lookup) == "What did they say?"
    assert asked == []  # no candidate: the store is not asked


STORED = {"fahim": {"Fahim Khan"}, "khan": {"Fahim Khan"}, "user": {"user"}, "elise": {"elise", "Kevin"}}


def _lookup(words: list[str]) -> dict[str, set[str]]:
    return {w: STORED[w] for w in words if w in STORED}


def test_a_question_in_lower_case_names_only_who_is_stored_capitalised() -> None:
    assert dense_query("what are fahim's hobbies?", _lookup) == "what are my hobbies?"
    assert dense_query("what did the user say about fahim khan?", _lookup) == "what did the user say about I?"
    assert dense_query("what did elise eat?", _lookup) == "what did elise eat?"  # stored as "elise"
    assert dense_query("What did the user say?", _lookup) == "What did the user say?"
    assert dense_query("What did Elise eat?", _lookup) == "What did I eat?"  # capitalised: any stored case


def _chat(store: MemoryStorage) -> None:
    store.add_batch(
        [
            Message(
                content="I went for a morning run after the rain",
                role="Fahim Khan",
                sent_from="Fahim Khan",
                created_at=1000.0,
            ),
            Message(content="Hey Fahim! How was your week?", role="elise", sent_from="elise", created_at=1060.0),
            Message(
                content="Kevin said the Monday meeting moved",
                role="user",
                created_at=1120.0,
                metadata={"speaker": "Kevin", "session": "Planning Monday"},
            ),
        ]
    )


def test_the_store_knows_who_spoke(settings: Settings) -> None:
    with MemoryStorage("chat", settings=settings) as store:
        _chat(store)
        found = store._speaker_names(["fahim", "khan", "elise", "kevin", "user", "monday", "planning", "rain"])
        assert set(found) == {"fahim", "khan", "elise", "kevin", "user"}  # the session's words are when, not who
        assert "Fahim Khan" in found["fahim"] and "Kevin" in found["kevin"]
        assert store._dense_text("When did Fahim go for a run?") == "When did I go for a run?"
        assert store._dense_text("When did Kevin move the Monday meeting?") == "When did I move the Monday meeting?"
        assert store._dense_text("What did the user say?") == "What did the user say?"
        assert store._dense_text("When did Alice run?") == "When did Alice run?"
        assert store._dense_text("when did fahim go for a run?") == "when did I go for a run?"
        assert store._dense_text("what did the user say?") == "what did the user say?"  # stored lower case: a role


def test_a_deleted_speaker_is_no_longer_a_name(settings: Settings) -> None:
    with MemoryStorage("chat", settings=settings) as store:
        _chat(store)
        for hit in store.search("morning run", k=10, mode="keyword"):
            if hit.message.sent_from == "Fahim Khan":
                store.delete(hit.message.id)
        assert set(store._speaker_names(["fahim", "elise"])) == {"elise"}


@pytest.mark.embedded_only
def test_names_looked_up_before_a_write_are_looked_up_again_after_it(settings: Settings) -> None:
    """The answers are kept between searches, never across a write: this handle's, or another process's."""
    with MemoryStorage("chat", settings=settings) as store:
        _chat(store)
        assert set(store._speaker_names(["zara", "quinn", "elise"])) == {"elise"}  # zara and quinn: no one, kept
        store.add(Message(content="hello there", role="Zara", sent_from="Zara"))
        assert set(store._speaker_names(["zara", "quinn"])) == {"zara"}
        code = (
            "import sys; from ltm import MemoryStorage, Message, Settings; "
            "s = MemoryStorage('chat', settings=Settings(storage_dir=sys.argv[1], embedding='hash')); "
            "s.add(Message(content='hi all', role='Quinn', sent_from='Quinn')); s.close()"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
        subprocess.run(
            [sys.executable, "-c", code, str(settings.storage_dir)],
            check=True,
            env=env,
            timeout=120,
            cwd=Path(__file__).resolve().parents[3],
        )
        assert set(store._speaker_names(["zara", "quinn"])) == {"zara", "quinn"}
        assert store._dense_text("What did Quinn say?") == "What did I say?"


def test_search_embeds_the_first_person_question(settings: Settings) -> None:
    """The vector search compares is the rewritten question's: searching with it given explicitly gives the same
    hits and scores as searching by the question."""
    with MemoryStorage("chat", settings=settings) as store:
        _chat(store)
        question = "When did Fahim go for a run after the rain?"
        rewritten = store.embed_texts(["When did I go for a run after the rain?"])
        original = store.embed_texts([question])
        assert not np.allclose(rewritten, original)
        for mode in ("dense", "hybrid"):
            hits = store.search(question, k=3, mode=mode)
            given = store.search(question, k=3, mode=mode, vector=rewritten[0])
            assert [(h.message.id, round(h.score, 5)) for h in hits] == [
                (h.message.id, round(h.score, 5)) for h in given
            ], mode


@pytest.mark.embedded_only
def test_a_speaker_added_with_write_behind_is_known_at_the_next_search(settings: Settings) -> None:
    with MemoryStorage("chat", settings=settings.with_(write_behind=True)) as store:
        store.add(Message(content="I went for a morning run", role="Fahim Khan", sent_from="Fahim Khan"))
        assert store._dense_text("When did Fahim run?") == "When did I run?"
