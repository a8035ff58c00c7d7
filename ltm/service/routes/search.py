"""Reading a namespace by meaning: search (with per-signal scores on request), find_news, search_similar,
recent messages, counts; plus embed/similarities, which let a remote client run ``find_news`` as in process."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Query, Request

from ltm.longterm import LongTermMemory
from ltm.service.auth import Readable, Writable, state_of
from ltm.service.routes.messages import check_items
from ltm.service.schemas import FindNewsIn, SearchIn, SimilarIn, TextsIn, VectorsIn, hit_out, message_out
from ltm.store import MemoryStorage

__all__ = ["router", "signal_scores"]

router = APIRouter(prefix="/v1/namespaces/{namespace:path}", tags=["search"])


def signal_scores(store: MemoryStorage, body: SearchIn) -> dict[str, dict[str, float]]:
    """Per message id, its score in each single-signal ranking (dense cosine, keyword BM25) among the
    candidates hybrid fusion looked at; a signal that did not rank the message is absent."""
    fetch = max(3 * body.k, 50)
    scores: dict[str, dict[str, float]] = {}
    for mode in ("dense", "keyword"):
        for hit in store.search(body.query, fetch, mode=mode, filters=body.filters):
            scores.setdefault(hit.message.id, {})[mode] = hit.score
    return scores


@router.post("/search")
def search(request: Request, namespace: Readable, body: SearchIn) -> dict[str, Any]:
    """The ``k`` best hits for ``query``; scores are higher-is-better (see MemoryStorage's docs per mode)."""
    store = state_of(request).store(namespace)
    hits = store.search(body.query, body.k, mode=body.mode, filters=body.filters)
    if not body.explain:
        return {"hits": [hit_out(h) for h in hits]}
    scores = signal_scores(store, body)
    return {"hits": [hit_out(h, scores.get(h.message.id, {})) for h in hits]}


@router.post("/find_news")
def find_news(request: Request, namespace: Readable, body: FindNewsIn) -> dict[str, Any]:
    """The observed messages that are news: not similar to a stored message (cosine below the threshold)
    nor to an earlier message of the same request. Nothing is stored."""
    check_items(request, len(body.messages))
    store = state_of(request).store(namespace)
    memory = LongTermMemory(memory_storage=store, settings=store.settings)
    news = memory.find_news([m.to_message() for m in body.messages], body.k)
    return {"messages": [message_out(m) for m in news]}


@router.post("/similar")
def search_similar(request: Request, namespace: Readable, body: SimilarIn) -> dict[str, Any]:
    """MetaGPT's ``search_similar``: stored messages at or above the similarity threshold, best first."""
    found = state_of(request).store(namespace).search_similar(body.text, body.k)
    return {"messages": [message_out(m) for m in found]}


@router.get("/recent")
def recent(request: Request, namespace: Readable, n: Annotated[int, Query(ge=0)] = 10) -> dict[str, Any]:
    """The ``n`` newest messages, oldest first (at most the server's page size)."""
    n = min(n, state_of(request).limits.max_page)
    return {"messages": [message_out(m) for m in state_of(request).store(namespace).recent(n)]}


@router.get("/stats")
def stats(request: Request, namespace: Readable) -> dict[str, Any]:
    """Counts of the namespace (messages, vectors, index kind, model); the server's paths are left out."""
    store = state_of(request).store(namespace)
    out = dataclasses.asdict(store.stats())
    out.pop("path", None)
    out["threshold"] = store.threshold
    return out


@router.post("/embed")
def embed(request: Request, namespace: Readable, body: TextsIn) -> dict[str, Any]:
    """Unit vectors of ``texts`` from the namespace's model (what ``embed_texts`` returns in process)."""
    check_items(request, len(body.texts), "texts")
    return {"vectors": state_of(request).store(namespace).embed_texts(body.texts).tolist()}


@router.post("/similarities")
def similarities(request: Request, namespace: Readable, body: VectorsIn) -> dict[str, Any]:
    """Each vector's best cosine to a stored message (``best_similarities``); -1 in an empty namespace."""
    check_items(request, len(body.vectors), "vectors")
    vectors = np.asarray(body.vectors, dtype=np.float32).reshape(len(body.vectors), -1)
    best = state_of(request).store(namespace).best_similarities(vectors, body.texts)
    return {"best": [float(x) for x in best]}


@router.delete("")
def clean(request: Request, namespace: Writable) -> dict[str, Any]:
    """Delete the namespace's messages and files (``MemoryStorage.clean``); a later write starts it empty."""
    state_of(request).store(namespace).clean()
    return {"cleaned": True}
