"""MemoryStorage's search half: ``search`` / ``asearch`` (hybrid, dense, keyword) and ``search_similar``.

:class:`Searching` is a base class of :class:`~ltm.store.storage.MemoryStorage`. A search by text does what needs
no query vector while the model embeds the query: the keyword side (the engine's
:meth:`~ltm.store.backend.KeywordFirst.keyword_candidates`, with the rows of its candidates) runs on a worker
thread, since SQLite and ONNX Runtime both let go of the GIL; the search then pays max(model, keyword side)
instead of their sum (docs/SEARCH_SPEED.md). Where the engine can run the keyword side without the store's lock
(:meth:`~ltm.store.backend.KeywordFirst.keyword_beside`: a large embedded namespace, through a second
connection), the search takes it as a future and does its dense side before it waits for it. A search given its
vector runs every part in line, with the same hits.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
from abc import abstractmethod
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np

from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store.backend import KeywordFirst
from ltm.store.documents import DocumentStore
from ltm.store.embedder import QUERY, TEXT
from ltm.store.records import Analysis, KeywordAhead, KeywordSide, MemoryHit, Mode
from ltm.store.search.explain import check_threshold, explained, given_query_vector
from ltm.store.search.query import analyse
from ltm.store.search.rewrite import rewritten_search
from ltm.store.search.speakers import dense_query
from ltm.store.validation import check_k, text_of

__all__ = ["Searching"]

# Runs a hybrid query's keyword side while the model embeds the query (see Searching._keyword_side).
_KEYWORD_SIDE = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ltm-keyword")


class Searching(DocumentStore):
    """search / asearch / search_similar / asearch_similar over the handle's engine."""

    threshold: float

    @abstractmethod
    def _dim(self) -> int | None:
        """The namespace's vector dimension (None before its first vector)."""

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        mode: Mode = "hybrid",
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        explain: bool = False,
        vector: Any = None,
        as_of: Any = None,
        known_at: Any = None,
        rewrite: bool = False,
    ) -> builtins.list[MemoryHit]:
        """The ``k`` best messages for a free-text ``query``; ``mode`` is hybrid, dense or keyword.

        ``filters``: the store's filter language (:mod:`ltm.store.search.filters`). Hybrid fuses dense and BM25
        scores, calibrated (see :mod:`ltm.store.search.fusion`). ``threshold``: a minimum cosine (dense, hybrid) or
        ``-bm25`` (keyword); ``explain``: each hit's per-signal scores in ``hit.explain`` (see
        :mod:`ltm.store.search.explain`). ``vector``: a query embedding computed elsewhere (e.g. by llama-index), used
        instead of embedding ``query``; with it, ``query`` may be empty in dense mode. Only memories valid now are
        found (a superseded version, or one whose ``valid_from`` is ahead, is not); ``as_of``: those valid at that
        time; ``known_at``: what the store had recorded by then, as it stood (:mod:`ltm.store.validity`).
        ``rewrite``: also search the queries the configured LLM writes for ``query`` (off by default; its cost in
        ``explain``: :mod:`ltm.store.search.rewrite`).
        """
        if rewrite:
            if vector is not None:
                raise InvalidInput("search(rewrite=True) embeds each query it searches: pass vector=None")
            one = partial(
                self.search,
                k=k,
                mode=mode,
                filters=filters,
                threshold=threshold,
                explain=explain,
                as_of=as_of,
                known_at=known_at,
            )
            from ltm.llm.base import resolve_llm  # loaded only when asked: the default search needs no LLM

            return rewritten_search(self.settings.llm, partial(resolve_llm, self.settings), query, k, one, explain)
        filters = self._visible(filters, as_of, known_at)
        query_vector = given_query_vector(query, mode, vector, self._dim)
        plan = analyse(query)  # read once: the lines here, the terms, stems and names in retrieve
        ahead: Future[KeywordSide | None] | None = None
        beside = False
        if query_vector is None and mode != "keyword" and self._dim() is not None:
            text = self._dense_text(query)
            model_done = threading.Event()
            if mode == "hybrid":  # the keyword side needs no vector: run it meanwhile
                ahead, beside = self._keyword_ahead(query, plan, check_k(k), filters, model_done)
            try:
                query_vector = self._embed([text], QUERY)
            finally:
                model_done.set()
        lines = list(plan.lines) if mode == "hybrid" and query_vector is not None else []
        line_vectors = self._embed(lines, QUERY) if lines else None
        return self._search(
            query,
            query_vector,
            check_k(k),
            mode,
            filters,
            check_threshold(threshold),
            explain,
            line_vectors,
            plan,
            None if ahead is None else ahead if beside else ahead.result(),
        )

    async def asearch(
        self,
        query: str,
        k: int = 10,
        *,
        mode: Mode = "hybrid",
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        explain: bool = False,
        vector: Any = None,
        as_of: Any = None,
        known_at: Any = None,
        rewrite: bool = False,
    ) -> builtins.list[MemoryHit]:
        """Async twin of :meth:`search` (blocking work off the event loop; the keyword side beside the model)."""
        if rewrite:
            return await self._off(
                partial(
                    self.search,
                    query,
                    k,
                    mode=mode,
                    filters=filters,
                    threshold=threshold,
                    explain=explain,
                    vector=vector,
                    as_of=as_of,
                    known_at=known_at,
                    rewrite=True,
                )
            )
        filters = await self._off(self._visible, filters, as_of, known_at)
        query_vector = await self._off(given_query_vector, query, mode, vector, self._dim)
        plan = analyse(query)
        ahead: Future[KeywordSide | None] | None = None
        beside = False
        if query_vector is None and mode != "keyword" and (await self._off(self._dim)) is not None:
            text = await self._off(self._dense_text, query)
            model_done = threading.Event()
            if mode == "hybrid":
                ahead, beside = await self._off(self._keyword_ahead, query, plan, check_k(k), filters, model_done)
            try:
                query_vector = await self._aembed([text], QUERY)
            finally:
                model_done.set()
        lines = list(plan.lines) if mode == "hybrid" and query_vector is not None else []
        line_vectors = await self._aembed(lines, QUERY) if lines else None
        keyword: KeywordAhead | None = ahead  # a future the search may wait for
        if ahead is not None and not beside:
            keyword = await asyncio.wrap_future(ahead)
        return await self._off(
            self._search,
            query,
            query_vector,
            check_k(k),
            mode,
            filters,
            check_threshold(threshold),
            explain,
            line_vectors,
            plan,
            keyword,
        )

    def search_similar(self, message: Message | str, k: int = 4) -> builtins.list[Message]:
        """Up to ``k`` stored messages whose cosine similarity to ``message`` is >= the threshold, best first."""
        text = text_of(message)
        if not text.strip() or self._dim() is None:
            return []
        return self._similar(self._embed([text], TEXT), check_k(k), text)

    async def asearch_similar(self, message: Message | str, k: int = 4) -> builtins.list[Message]:
        """Async twin of :meth:`search_similar`."""
        text = text_of(message)
        if not text.strip() or await self._off(self._dim) is None:
            return []
        return await self._off(self._similar, await self._aembed([text], TEXT), check_k(k), text)

    def _keyword_ahead(
        self, text: str, plan: Analysis, k: int, filters: Mapping[str, Any] | None, model_done: threading.Event
    ) -> tuple[Future[KeywordSide | None] | None, bool]:
        """Start a hybrid search's keyword side on a worker thread: (its future, whether it runs without the store's
        lock, so that the search may hold the lock while it waits for it); (None, False) on an engine that ranks
        the keyword side inside its search (no :class:`~ltm.store.backend.KeywordFirst`)."""
        with self._lock:
            backend = self._engine()
            if not isinstance(backend, KeywordFirst):
                return None, False
            run = backend.keyword_beside(text, plan, k, filters, model_done)
        if run is None:
            return _KEYWORD_SIDE.submit(self._keyword_side, text, plan, k, filters, model_done), False
        try:
            return _KEYWORD_SIDE.submit(run), True
        except RuntimeError:  # the worker pool is shut down (the interpreter is exiting): run it here
            done: Future[KeywordSide | None] = Future()
            done.set_result(run())
            return done, True

    def _keyword_side(
        self,
        text: str,
        plan: Analysis,
        k: int,
        filters: Mapping[str, Any] | None,
        model_done: threading.Event | None = None,
    ) -> KeywordSide | None:
        """A hybrid search's keyword side, found on a worker thread while the model embeds the query (the
        engine's :meth:`~ltm.store.backend.KeywordFirst.keyword_candidates`; None where its search ranks it);
        it reads ahead only until ``model_done`` is set."""
        with self._lock:
            backend = self._engine()
            return (
                backend.keyword_candidates(text, plan, k, filters, model_done)
                if isinstance(backend, KeywordFirst)
                else None
            )

    def _dense_text(self, query: str) -> str:
        """What a question's vector is computed from: the names of people who spoke in this namespace in the first
        person (:func:`ltm.store.search.speakers.dense_query`)."""
        return dense_query(query, self._speaker_names)

    def _speaker_names(self, words: builtins.list[str]) -> dict[str, set[str]]:
        """{word: stored names holding it} for those of ``words`` a stored message's speaker, ``sent_from`` or role
        holds."""
        with self._lock:
            return self._engine().speaker_names(words)

    def _search(
        self,
        text: str,
        vector: np.ndarray | None,
        k: int,
        mode: Mode,
        filters: Mapping[str, Any] | None,
        threshold: float | None = None,
        explain: bool = False,
        lines: np.ndarray | None = None,
        plan: Analysis | None = None,
        keyword: KeywordAhead | None = None,
    ) -> builtins.list[MemoryHit]:
        with self._lock:
            self.purge_expired()
            backend = self._engine()
            exact_key = self.embedder.keys([text])[0] if mode == "hybrid" else None
            hits = backend.search(text, vector, k, mode, filters, exact_key, lines, plan, keyword)
            return explained(hits, mode, partial(backend.signal_scores, vector=vector, text=text), threshold, explain)

    def _similar(self, vectors: np.ndarray, k: int, text: str) -> builtins.list[Message]:
        if k == 0:
            return []
        with self._lock:
            self.purge_expired()
            return self._engine().similar(vectors, k, self.threshold, self.embedder.keys([text])[0])
