"""The offline summary and title (ltm.llm.summary): central, non-redundant, in order, within budget."""

from __future__ import annotations

import numpy as np
import pytest

import ltm.llm.summary as summary
from ltm.llm.extractive import ExtractiveLLM, split_sentences
from ltm.llm.summary import split_units, summarize_units, title_phrase

CHAT = """Alice: Hi Bob.
Bob: Hi.
Alice: We need to decide where the game stores its high scores before Friday.
Bob: I would keep the high scores in SQLite, one table with the player and the score.
Alice: Could we store the high scores in a JSON file instead?
Bob: A JSON file breaks when two games write at once; SQLite handles that.
Alice: OK, thanks.
Alice: Then SQLite it is, and the menu shows the top ten high scores.
Bob: Sure."""


def test_units_keep_speakers_and_titles_of_people() -> None:
    units = split_units("#Person1#: Ms. Dawson, take a memo. It is urgent!\nno speaker here")
    assert [(u.speaker, u.text) for u in units] == [
        ("#Person1#", "Ms. Dawson, take a memo."),
        ("#Person1#", "It is urgent!"),
        ("", "no speaker here"),
    ]


def test_summary_is_central_in_order_within_budget_without_fillers() -> None:
    result = summarize_units(split_units(CHAT), 200)
    words = sum(len(u.text.split()) for u in result.units)
    assert result.budget == max(
        summary.MIN_WORDS, round(summary.SHARE * sum(len(u.text.split()) for u in split_units(CHAT)))
    )
    assert words <= result.budget * 1.25
    positions = [u.position for u in result.units]
    assert positions == sorted(positions)  # said order
    texts = " ".join(u.text for u in result.units)
    assert "SQLite" in texts and "Hi" not in texts and "OK, thanks" not in texts
    assert all(u.speaker in ("Alice", "Bob") for u in result.units)
    assert len(result.text.split("\n")) == len(result.units)


def test_summary_is_shorter_than_a_short_chat() -> None:
    # a summary of a chat under max_words is still a summary, not the chat joined together
    text = str(ExtractiveLLM().summarize(CHAT, 200))
    assert len(text.split()) < len(CHAT.split()) / 2


def test_repeats_are_chosen_once() -> None:
    text = "Lily is a girl who likes apples.\n" * 50 + "The moon is far away from the earth.\n" * 50
    chosen = summarize_units(split_units(text), 200).units
    expected = ["Lily is a girl who likes apples.", "The moon is far away from the earth."]
    assert sorted(u.text for u in chosen) == expected


def test_long_history_stays_linear(monkeypatch: object) -> None:
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(3000)]
    text = "\n".join(" ".join(rng.choice(words, 12)) + "." for _ in range(4000))
    result = summarize_units(split_units(text), 120)
    assert 0 < sum(len(u.text.split()) for u in result.units) <= 150
    assert result.method == "tfidf-centrality-mmr" and result.of == 4000


def test_embedding_vectors_are_used_when_given() -> None:
    calls: list[int] = []

    def embed(texts: object) -> np.ndarray:
        items = list(texts)  # type: ignore[call-overload]
        calls.append(len(items))
        return np.eye(len(items), 8, dtype=np.float32) + 0.1

    result = summarize_units(split_units(CHAT), 200, embed=embed)
    assert calls == [len(split_units(CHAT))] and result.method == "embedding-centrality-mmr"


def test_title_is_one_readable_phrase() -> None:
    assert title_phrase(CHAT, 5) in ("High scores", "SQLite", "Game stores")
    assert len(title_phrase(CHAT, 5).split()) <= 4
    assert title_phrase("", 5) == "New conversation"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "We run MySQL 5.7 in production. The 1.9 cache layer is slow.",
            ["We run MySQL 5.7 in production.", "The 1.9 cache layer is slow."],
        ),
        (
            "Dr. Smith moved the handbook to https://wiki.example.com/ops/handbook.html today. Check it.",
            ["Dr. Smith moved the handbook to https://wiki.example.com/ops/handbook.html today.", "Check it."],
        ),
        (
            "Upgrade to v2.3.1 first, e.g. with pip. Then restart.",
            ["Upgrade to v2.3.1 first, e.g. with pip.", "Then restart."],
        ),
        (
            "It costs $3.50 per unit. We met at 5 p.m. on Friday!",
            ["It costs $3.50 per unit.", "We met at 5 p.m. on Friday!"],
        ),
        ("我们用MySQL 5.7。它很慢！", ["我们用MySQL 5.7。", "它很慢！"]),
    ],
)
def test_sentences_end_where_sentences_end(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected
    assert [u.text for u in split_units("Alice: " + text)] == expected
    assert {u.speaker for u in split_units("Alice: " + text)} == {"Alice"}
