"""Reading a namespace by meaning: search (with per-signal scores on request), find_news, search_similar,
recent messages, counts; plus embed/similarities, which let a remote client run ``find_news`` as in process."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Query, Request

from ltm.errors import InvalidInput, NotFound
from ltm.longterm import LongTermMemory
from ltm.service.auth import Readable, Writable, state_of
from ltm.service.routes.messages import check_items, check_times
from ltm.service.schemas import FindNewsIn, SearchIn, SimilarIn, TextsIn, VectorsIn, hit_out, message_out
from ltm.store import MemoryStorage, StoreStats, check_filters

__all__ = ["router", "signal_scores"]

router = APIRouter(prefix="/v1/namespaces/{namespace:path}", tags=["search"])


def signal_scores(store: MemoryStorage, body: SearchIn) -> dict[str, dict[str, float]]:
    """Per message id, its score in each single-signal ranking (dense cosine, keyword BM25) among the
    candidates hybrid fusion looked at; a signal that did not rank the message is absent."""
    fetch = max(3 * body.k, 50)
    scores: dict[str, dict[str, float]] = {}
    for mode in ("dense", "keyword"):
        for hit in store.search(
            body.query, fetch, mode=mode, filters=body.filters, as_of=body.as_of, known_at=body.known_at
        ):
            scores.setdefault(hit.message.id, {})[mode] = hit.score
    return scores


@router.post("/search")
def search(request: Request, namespace: Readable, body: SearchIn) -> dict[str, Any]:
    """The ``k`` best hits for ``query``; scores are higher-is-better (see MemoryStorage's docs per mode). Only
    memories valid now, or ``as_of`` a valid time, or as the store knew them ``known_at`` a time."""
    store = state_of(request).existing_store(namespace)
    if store is None:  # nothing was ever written there: no hits, and no empty namespace left behind
        check_filters(body.filters)  # the same InvalidInput for bad filters as on a namespace that exists
        check_times(body.as_of, body.known_at)
        return {"hits": []}
    hits = store.search(
        body.query, body.k, mode=body.mode, filters=body.filters, as_of=body.as_of, known_at=body.known_at
    )
    if not body.explain:
        return {"hits": [hit_out(h) for h in hits]}
    scores = signal_scores(store, body)
    return {"hits": [hit_out(h, scores.get(h.message.id, {})) for h in hits]}


@router.post("/find_news")
def find_news(request: Request, namespace: Readable, body: FindNewsIn) -> dict[str, Any]:
    """The observed messages that are news: not similar to a stored message (cosine below the threshold)
    nor to an earlier message of the same request. Nothing is stored."""
    check_items(request, len(body.messages))
    store = state_of(request).reader(namespace)
    memory = LongTermMemory(memory_storage=store, settings=store.settings)
    news = memory.find_news([m.to_message() for m in body.messages], body.k)
    return {"messages": [message_out(m) for m in news]}


@router.post("/similar")
def search_similar(request: Request, namespace: Readable, body: SimilarIn) -> dict[str, Any]:
    """MetaGPT's ``search_similar``: stored messages at or above the similarity threshold, best first."""
    store = state_of(request).existing_store(namespace)
    found = [] if store is None else store.search_similar(body.text, body.k)
    return {"messages": [message_out(m) for m in found]}


@router.get("/recent")
def recent(request: Request, namespace: Readable, n: Annotated[int, Query(ge=0)] = 10) -> dict[str, Any]:
    """The ``n`` newest messages, oldest first (at most the server's page size)."""
    n = min(n, state_of(request).limits.max_page)
    store = state_of(request).existing_store(namespace)
    return {"messages": [] if store is None else [message_out(m) for m in store.recent(n)]}


@router.get("/stats")
def stats(request: Request, namespace: Readable) -> dict[str, Any]:
    """Counts of the namespace (messages, vectors, index kind, model); the server's paths are left out.
    A namespace nothing was written to answers the counts of an empty one (as the library does)."""
    state = state_of(request)
    store = state.existing_store(namespace)
    if store is None:  # nothing opened, nothing created: what the namespace would say on its first read
        probe = MemoryStorage(None, settings=state.settings, embedding=state.embedding)
        empty = StoreStats(
            namespace=namespace,
            path="",
            messages=0,
            vectors=0,
            index="none",
            context_vectors=0,
            ghosts=0,
            last_seq=0,
            model=probe.embedder.model,
            embedding_calls=0,
        )
        return {**{k: v for k, v in dataclasses.asdict(empty).items() if k != "path"}, "threshold": probe.threshold}
    out = dataclasses.asdict(store.stats())
    out.pop("path", None)
    out["threshold"] = store.threshold
    return out


@router.post("/embed")
def embed(request: Request, namespace: Readable, body: TextsIn) -> dict[str, Any]:
    """Unit vectors of ``texts`` from the namespace's model (what ``embed_texts`` returns in process)."""
    check_items(request, len(body.texts), "texts")
    return {"vectors": state_of(request).reader(namespace).embed_texts(body.texts).tolist()}


@router.post("/similarities")
def similarities(request: Request, namespace: Readable, body: VectorsIn) -> dict[str, Any]:
    """Each vector's best cosine to a stored message (``best_similarities``); -1 in an empty namespace."""
    check_items(request, len(body.vectors), "vectors")
    store = state_of(request).reader(namespace)
    if not body.vectors:
        return {"best": []}
    vectors = _matrix(body.vectors, _dimension(store))
    best = store.best_similarities(vectors, body.texts)
    return {"best": [float(x) for x in best]}


def _dimension(store: MemoryStorage) -> int:
    """How many numbers the store's model puts in a vector (learned once per model by embedding one word)."""
    model = store.embedder.model
    if model not in _DIMENSIONS:
        _DIMENSIONS[model] = int(store.embed_texts(["dimension"]).shape[1])
    return _DIMENSIONS[model]


_DIMENSIONS: dict[str, int] = {}


def _matrix(rows: list[list[float]], dim: int) -> np.ndarray:
    """``rows`` as a float32 matrix once each row has ``dim`` finite numbers, else InvalidInput."""
    for i, row in enumerate(rows):
        if len(row) != dim:
            raise InvalidInput(
                f"vector {i} has {len(row)} numbers; this namespace's model makes {dim} (send what /embed returned)"
            )
    with np.errstate(over="ignore"):  # a number beyond float32 becomes infinity, refused just below
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), dim)
    if not np.isfinite(matrix).all():
        raise InvalidInput("vectors must hold finite numbers (no NaN, no infinity, none beyond float32's range)")
    return matrix


@router.delete("")
def clean(request: Request, namespace: Writable) -> dict[str, Any]:
    """Delete the namespace's messages and files (``MemoryStorage.clean``); a later write starts it empty.
    404 for a namespace nothing was written to (also what an unknown path under a namespace comes to)."""
    store = state_of(request).existing_store(namespace)
    if store is None:
        raise NotFound(
            "no such namespace or route; DELETE works on a namespace that holds messages (and on /messages/{id})"
        )
    store.clean()
    return {"cleaned": True}
