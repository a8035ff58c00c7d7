"""The offline extractive summarizer, titler, relatedness and token budgets."""

from __future__ import annotations

import asyncio
import sys

import pytest

from ltm.llm import tokens
from ltm.llm.extractive import ExtractiveLLM, ExtractiveText, split_sentences
from ltm.llm.tokens import count_tokens, split_tokens, tokenizer_name, truncate_tokens

TEXT = (
    "The Redis server stores each chat's history as a list. "
    "Appending a message to the Redis list is constant time. "
    "My cat likes to sleep in the sun. "
    "The summary of a chat is written to the chat's own Redis key. "
    "Redis keeps the chat history until the key expires."
)


def test_summary_selects_central_sentences_and_says_extractive() -> None:
    summary = ExtractiveLLM().summarize(TEXT, max_words=25)
    assert isinstance(summary, ExtractiveText) and summary.metadata["extractive"] is True
    assert "cat" not in summary  # the off-topic sentence is the least central
    assert all(s in TEXT for s in split_sentences(summary))  # only sentences of the input
    assert len(summary.split()) <= 25


def test_short_text_is_kept_verbatim() -> None:
    assert ExtractiveLLM().summarize("Lily is a girl.", 200) == "Lily is a girl."


def test_repeated_history_collapses() -> None:
    summary = ExtractiveLLM().summarize("Lily is a girl.\n" * 500, 200)
    assert summary == "Lily is a girl."


def test_title_keyphrases() -> None:
    llm = ExtractiveLLM()
    assert llm.title("Lily is a girl.\n" * 3, 5) == "Lily"  # one phrase; a name ranks first
    assert "Redis" in llm.title(TEXT, 3)
    assert llm.title("", 5) == "New conversation"


def test_related_and_rewrite() -> None:
    llm = ExtractiveLLM()
    assert not llm.is_related("apple", "moon")
    assert llm.is_related("I ate apples", "the apple was sweet")
    assert "Lily" in llm.rewrite("apple Lily eating", "")
    assert llm.rewrite("Lily eats", "Lily is a girl. The moon is far.") == "Lily eats (Lily is a girl.)"


def test_protocol_ask_honours_word_limit() -> None:
    answer = asyncio.run(ExtractiveLLM().aask(TEXT, system="Return less than 12 words."))
    assert len(answer.split()) <= 12


def test_tokens_windows_cover_the_text() -> None:
    text = "word " * 1000 + "\n" + "x" * 400
    windows = split_tokens(text, 100)
    assert "".join(windows) == text
    assert all(count_tokens(w) <= 100 for w in windows)
    overlapped = split_tokens(text, 100, overlap=20)
    assert len(overlapped) > len(windows)
    assert count_tokens(truncate_tokens(text, 50)) <= 50
    assert split_tokens("", 10) == []


def test_token_counts_are_exact_cl100k_offline() -> None:
    """llama-index-core ships the cl100k table, so counts are exact without a download."""
    assert tokenizer_name() == "tiktoken:cl100k_base"
    assert count_tokens("hello world") == 2  # "hello", " world"
    assert count_tokens("tiktoken is great!") == 6  # "t", "ik", "token", " is", " great", "!"


def test_estimate_only_when_the_tokenizer_cannot_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken -> ImportError
    tokens._encoding.cache_clear()
    try:
        assert tokenizer_name() == "estimate"
        assert count_tokens("hello world") == 4  # "hell", "o", "worl", "d"
        text = "word " * 300
        assert "".join(split_tokens(text, 100)) == text
    finally:
        tokens._encoding.cache_clear()
