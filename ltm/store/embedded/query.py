"""The embedded engine's compiled search: :class:`SearchQuery` holds SQLite's clause for the filters of a
:class:`~ltm.store.request.SearchRequest` (:meth:`~ltm.store.embedded.backend.EmbeddedBackend.search` builds it,
:func:`~ltm.store.embedded.retrieval.retrieve` reads it). ``ltm.store.SearchQuery`` names it for code written
before the engines took a :class:`~ltm.store.request.SearchRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ltm.store.records import Analysis, KeywordAhead, Mode

__all__ = ["SearchQuery"]


@dataclass(frozen=True)
class SearchQuery:
    """One search's inputs (modelled on llama-index's ``VectorStoreQuery``).

    ``vector`` is the embedded ``text`` (shape (1, dim); None in keyword mode or before any vector is
    stored); ``where`` a filter clause over ``messages m`` with its ``params`` (None: unfiltered).
    """

    text: str
    vector: np.ndarray | None
    k: int
    mode: Mode = "hybrid"
    where: str | None = None
    params: tuple[Any, ...] = ()
    exact_key: bytes | None = None  # the query text's content key: messages holding it verbatim come first
    now: float | None = None  # what "yesterday" / "last week" count from (None: the newest message's time)
    lines: np.ndarray | None = None  # hybrid: a long query's lines embedded one by one (query.query_lines), (n, dim)
    analysis: Analysis | None = None  # the text's search.query.analyse, when the caller made it (else retrieve does)
    # hybrid: the keyword side, when the caller found it beside the model (a future while it may still be running)
    keyword: KeywordAhead | None = None
    # seqs the search leaves out beside ``where`` (the few versions the default view hides: ltm.store.validity)
    hidden: frozenset[int] | None = None
