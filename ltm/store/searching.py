"""MemoryStorage's search half: ``search`` / ``asearch`` (hybrid, dense, keyword) and ``search_similar``.

:class:`Searching` is a base class of :class:`~ltm.store.storage.MemoryStorage`. A search crosses the seam to its
engine a fixed few times (tests/store/test_seam.py counts them): one
:meth:`~ltm.store.backend.DocumentBackend.search_context` before the model (validity, dimension, the question's
speaker names), the keyword side on an engine that finds it first, and one
:class:`~ltm.store.request.SearchRequest` that the engine compiles, ranks, reads and explains itself.

A search by text does what needs no query vector while the model embeds the query: the keyword side (the
engine's :meth:`~ltm.store.backend.KeywordFirst.keyword_ahead`, with the rows of its candidates) runs on a worker
thread, since SQLite and ONNX Runtime both let go of the GIL; the search then pays max(model, keyword side)
instead of their sum (docs/SEARCH_SPEED.md). Where the engine can run the keyword side without the store's lock (a
large embedded namespace, through a second connection), the search takes it as a future and does its dense side
before it waits for it. A search given its vector runs every part in line, with the same hits.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
from abc import abstractmethod
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store.backend import DocumentBackend, KeywordFirst
from ltm.store.documents import DocumentStore
from ltm.store.embedder import QUERY, TEXT
from ltm.store.records import KeywordAhead, KeywordSide, MemoryHit, Mode
from ltm.store.request import SearchRequest
from ltm.store.search.explain import check_threshold
from ltm.store.search.query import analyse, check_query, checked_filters
from ltm.store.search.rewrite import rewritten_search
from ltm.store.search.speakers import dense_query, name_candidates
from ltm.store.validation import check_k, normalise, text_of
from ltm.store.validity import DefaultView, visibility, with_filters

__all__ = ["Searching"]

# Runs a hybrid query's keyword side while the model embeds the query (see Searching._keyword_side).
_KEYWORD_SIDE = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ltm-keyword")


class Searching(DocumentStore):
    """search / asearch / search_similar / asearch_similar over the handle's engine."""

    threshold: float
    _backend: DocumentBackend | None  # the open namespace's engine (None: closed)

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
        ``-bm25`` (keyword); each dense or hybrid hit carries its cosine to the query in ``hit.similarity`` (no
        explanation needed); ``explain``: each hit's per-signal scores in ``hit.explain`` (see
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
        model_done = threading.Event()
        begun = self._begin(query, k, mode, filters, threshold, explain, vector, as_of, known_at, model_done)
        backend, request, text, dim, ahead, beside = begun
        vector_ = request.vector
        if text is not None:
            try:
                vector_ = self._embed([text], QUERY, dim=dim)
            finally:
                model_done.set()
        lines = list(request.plan.lines) if request.plan and mode == "hybrid" and vector_ is not None else []
        line_vectors = self._embed(lines, QUERY, dim=dim) if lines else None
        keyword = None if ahead is None else ahead if beside else ahead.result()
        return self._finish(backend, replace(request, vector=vector_, lines=line_vectors, keyword=keyword))

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
        return await self._asearched(query, k, mode, filters, threshold, explain, vector, as_of, known_at)

    async def _asearched(
        self,
        query: str,
        k: int,
        mode: Mode,
        filters: Mapping[str, Any] | None,
        threshold: float | None,
        explain: bool,
        vector: Any,
        as_of: Any,
        known_at: Any,
    ) -> builtins.list[MemoryHit]:
        """:meth:`asearch` without ``rewrite``."""
        model_done = threading.Event()
        begun = await self._off(
            self._begin, query, k, mode, filters, threshold, explain, vector, as_of, known_at, model_done
        )
        backend, request, text, dim, ahead, beside = begun
        vector_ = request.vector
        if text is not None:
            try:
                vector_ = await self._aembed([text], QUERY, dim=dim)
            finally:
                model_done.set()
        lines = list(request.plan.lines) if request.plan and mode == "hybrid" and vector_ is not None else []
        line_vectors = await self._aembed(lines, QUERY, dim=dim) if lines else None
        keyword: KeywordAhead | None = ahead  # a future the search may wait for
        if ahead is not None and not beside:
            keyword = await asyncio.wrap_future(ahead)
        return await self._off(
            self._finish, backend, replace(request, vector=vector_, lines=line_vectors, keyword=keyword)
        )

    def search_similar(self, message: Message | str, k: int = 4) -> builtins.list[Message]:
        """Up to ``k`` stored messages whose cosine similarity to ``message`` is >= the threshold, best first; of
        those valid now (a superseded version is not similar to anything: :mod:`ltm.store.validity`)."""
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

    def _begin(
        self,
        query: str,
        k: int,
        mode: Mode,
        filters: Mapping[str, Any] | None,
        threshold: float | None,
        explain: bool,
        vector: Any,
        as_of: Any,
        known_at: Any,
        model_done: threading.Event,
    ) -> tuple[DocumentBackend, SearchRequest, str | None, int | None, Future[KeywordSide | None] | None, bool]:
        """A search's input checked (InvalidInput) and what it needs of the engine asked in one call
        (:meth:`~ltm.store.backend.DocumentBackend.search_context`), and a hybrid search's keyword side started
        when the model will embed the query (:meth:`_keyword_ahead`, until ``model_done``), in one hop off an event
        loop: (the engine, the request with the caller's vector when given, the text to embed as the query (None
        when the search calls no model), the namespace's dimension, the keyword side's future and whether it runs
        beside the store's lock)."""
        view = visibility(as_of, known_at)  # the versions a read sees (InvalidInput for a bad time)
        check_query(query if vector is None or mode != "dense" else query or "-", mode)
        given = vector is not None and mode != "keyword"
        words = name_candidates(query)[0] if not given and mode != "keyword" else []
        with self._lock:
            backend = self._engine()
            context = backend.search_context(words, dimension=mode != "keyword", validity=isinstance(view, DefaultView))
        query_vector = None
        if given:
            query_vector = normalise(
                np.asarray(vector, dtype=np.float32).reshape(1, -1), context.dimension, "the query vector"
            )
        k = check_k(k)
        spec = filters if isinstance(view, DefaultView) and not context.validity else with_filters(filters, view)
        request = SearchRequest(
            query,
            k,
            mode,
            checked_filters(spec),
            spec if isinstance(spec, DefaultView) else None,
            query_vector,
            plan=analyse(query),  # read once: the lines here, the terms, stems and names in the engine
            threshold=check_threshold(threshold),
            explain=explain,
        )
        dense = query_vector is None and mode != "keyword" and context.dimension is not None
        text = dense_query(query, lambda _: context.names) if dense else None
        ahead: Future[KeywordSide | None] | None = None
        beside = False
        if text is not None and mode == "hybrid":  # the keyword side needs no vector: run it meanwhile
            ahead, beside = self._keyword_ahead(backend, request, model_done)
        return backend, request, text, context.dimension, ahead, beside

    def _keyword_ahead(
        self, backend: DocumentBackend, request: SearchRequest, model_done: threading.Event
    ) -> tuple[Future[KeywordSide | None] | None, bool]:
        """Start a hybrid search's keyword side on a worker thread: (its future, whether it runs without the store's
        lock, so that the search may hold the lock while it waits for it); (None, False) on an engine that ranks
        the keyword side inside its search (no :class:`~ltm.store.backend.KeywordFirst`)."""
        if not isinstance(backend, KeywordFirst):
            return None, False
        with self._lock:
            run, beside = backend.keyword_ahead(request, model_done)
        if not beside:
            return _KEYWORD_SIDE.submit(self._locked, backend, run), False
        try:
            return _KEYWORD_SIDE.submit(run), True
        except RuntimeError:  # the worker pool is shut down (the interpreter is exiting): run it here
            done: Future[KeywordSide | None] = Future()
            done.set_result(run())
            return done, True

    def _locked(self, backend: DocumentBackend, run: Callable[[], KeywordSide]) -> KeywordSide | None:
        """``run`` under the store's lock (a keyword side that reads through the store's connection); None when the
        handle closed ``backend`` meanwhile (the search then finds its keyword side in line, on the engine it has)."""
        with self._lock:
            return run() if self._backend is backend else None

    def _dense_text(self, query: str) -> str:
        """What a question's vector is computed from: the names of people who spoke in this namespace in the first
        person (:func:`ltm.store.search.speakers.dense_query`)."""
        return dense_query(query, self._speaker_names)

    def _speaker_names(self, words: builtins.list[str]) -> dict[str, set[str]]:
        """{word: stored names holding it} for those of ``words`` a stored message's speaker, ``sent_from`` or role
        holds."""
        with self._lock:
            return self._engine().search_context(words, dimension=False, validity=False).names

    def _finish(self, backend: DocumentBackend, request: SearchRequest) -> builtins.list[MemoryHit]:
        """The engine's hits for the request (one call: the engine purges what expired, ranks, and explains)."""
        with self._lock:
            if self._backend is not backend:  # closed meanwhile: the handle's engine now
                backend = self._engine()
            exact_key = self.embedder.keys([request.text])[0] if request.mode == "hybrid" else None
            return backend.search(replace(request, exact_key=exact_key))

    def _similar(self, vectors: np.ndarray, k: int, text: str) -> builtins.list[Message]:
        if k == 0:
            return []
        with self._lock:
            self.purge_expired()
            return self._engine().similar(vectors, k, self.threshold, self.embedder.keys([text])[0])
