"""What a search hands an engine: one :class:`SearchRequest` (as chroma's segments take one ``VectorQuery``), and
what the engine tells the search before the model embeds its query (:class:`SearchContext`).

The facade checks the caller's input, parses the filters into the one tree every engine compiles
(:mod:`ltm.store.search.filters`), embeds the query and starts the keyword side beside the model; the engine
compiles the tree into its own query language, gathers and scores its candidates, reads their rows and applies
``threshold`` / ``explain`` itself, so that a search crosses the seam a fixed, small number of times
(:mod:`ltm.store.searching`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import numpy as np

from ltm.store.records import Analysis, KeywordAhead, MemoryHit, Mode
from ltm.store.search.explain import explained
from ltm.store.search.filters import Compare, Filter
from ltm.store.validity import DefaultView

__all__ = ["SearchContext", "SearchRequest", "answered", "context_of", "expire"]


@dataclass(frozen=True)
class SearchRequest:
    """One search, as the facade hands it to :meth:`~ltm.store.backend.DocumentBackend.search`.

    ``filters`` is the parsed tree of the caller's filters AND what a read sees of the versions
    (:func:`ltm.store.validity.visibility`); ``view`` is set when that tree is the default view alone, which an
    engine may serve otherwise than as a clause (the embedded one leaves out the few rows it hides).
    """

    text: str
    k: int
    mode: Mode = "hybrid"
    filters: Filter | None = None
    view: DefaultView | None = None
    vector: np.ndarray | None = None  # the embedded query, (1, dim); None in keyword mode or before any vector
    lines: np.ndarray | None = None  # hybrid: a long query's lines embedded one by one (search.query.query_lines)
    exact_key: bytes | None = None  # hybrid: the query text's content key (messages holding it verbatim first)
    plan: Analysis | None = None  # the text's search.query.analyse, when the facade made it
    keyword: KeywordAhead | None = None  # hybrid: the keyword side found beside the model (KeywordFirst engines)
    threshold: float | None = None  # a minimum score on each mode's scale (search.explain)
    explain: bool = False  # fill each hit's per-signal scores (search.explain)


@dataclass(frozen=True)
class SearchContext:
    """What a search learns from the engine in one call before the model embeds its query
    (:meth:`~ltm.store.backend.DocumentBackend.search_context`)."""

    dimension: int | None = None  # the stored vectors' dimension (None: none stored, or not asked)
    validity: bool = True  # whether any row carries validity (True when not asked: the read adds the clause)
    names: dict[str, set[str]] = field(default_factory=dict)  # {word: stored names holding it}


class _Searched(Protocol):
    """What :func:`context_of` and :func:`expire` / :func:`answered` read of an engine (its own members)."""

    def has_validity(self) -> bool: ...
    def dimension(self) -> int | None: ...
    def speaker_names(self, words: Sequence[str]) -> dict[str, set[str]]: ...
    def due(self, now: float) -> bool: ...
    def remove(self, tree: Filter | None, history_limit: int) -> int: ...
    def signal_scores(
        self, ids: Sequence[str], vector: np.ndarray | None, text: str | None
    ) -> dict[str, dict[str, float]]: ...


def context_of(engine: _Searched, words: Sequence[str], dimension: bool, validity: bool) -> SearchContext:
    """An engine's :class:`SearchContext`: whether a row carries validity (when ``validity``), the dimension (when
    ``dimension``) and the stored names holding ``words`` (none when the dimension was asked and no vector is
    stored: the search then has no dense side to put them in)."""
    valid = engine.has_validity() if validity else True
    dim = engine.dimension() if dimension else None
    names = engine.speaker_names(words) if words and (dim is not None or not dimension) else {}
    return SearchContext(dim, valid, names)


def expire(engine: _Searched, history_limit: int) -> None:
    """Delete the messages whose expiry has passed before a read, as
    :meth:`~ltm.store.documents.DocumentStore.purge_expired` does (one index probe when none has)."""
    now = time.time()
    if engine.due(now):
        engine.remove(Compare("expires_at", "lte", now), history_limit)


def answered(engine: _Searched, request: SearchRequest, hits: list[MemoryHit]) -> list[MemoryHit]:
    """``hits`` with the request's ``explain`` and ``threshold`` applied (:func:`ltm.store.search.explain.explained`,
    the per-signal scores read from the engine for the final hits only)."""
    signals = partial(engine.signal_scores, vector=request.vector, text=request.text)
    return explained(hits, request.mode, signals, request.threshold, request.explain)
