"""Hypothesis strategies for hostile but plausible input: any Unicode (surrogates and NUL included), deep or
non-finite metadata, odd numbers, and the invariants every fuzz case checks afterwards."""

from __future__ import annotations

import math
import os
from typing import Any

from hypothesis import strategies as st

from ltm import MemoryStorage

# any code point, unpaired surrogates and NUL included: what a broken decoder or a hostile caller can pass
ANY_CHAR = st.characters(codec=None, categories=None)
TEXT = st.one_of(st.text(ANY_CHAR, max_size=40), st.sampled_from(["", " ", "\x00", "\ud800", "a" * 5000, "ünï ☃"]))
NUMBER = st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True, allow_infinity=True))
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSONISH: st.SearchStrategy[Any] = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
CREATED_AT = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**63), 2**63))


def deep(levels: int) -> dict[str, Any]:
    """A metadata dict nested ``levels`` deep."""
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels):
        node["d"] = {}
        node = node["d"]
    return root


METADATA = st.one_of(st.dictionaries(TEXT, JSONISH, max_size=4), st.integers(20, 3000).map(lambda n: {"x": deep(n)}))
EXAMPLES = int(os.environ.get("LTM_FUZZ_EXAMPLES", "100"))  # per test; CI keeps the default (a few minutes)
DERANDOMIZE = not os.environ.get("LTM_FUZZ_RANDOM")  # CI replays the same cases; set it to explore new ones


def healthy(store: MemoryStorage, expected: int | None = None) -> None:
    """The namespace still works: it reopens, rows equal vectors, a filtered search answers."""
    namespace = store.namespace
    assert namespace is not None
    store.close()
    store.recover_memory(namespace)
    stats = store.stats()
    messages, vectors = stats.messages, stats.vectors
    assert messages == vectors, stats
    if expected is not None:
        assert messages == expected
    hits = store.search("fuzz anchor", k=3, filters={"metadata": {"anchor": True}})
    assert hits and hits[0].message.metadata.get("anchor") is True
    assert all(math.isfinite(h.score) for h in hits)
