"""A namespace's chats (BrainMemory): append to a history, read it page by page, summarize, title.

A chat lives under the BrainMemory key :func:`ltm.service.chatkeys.chat_key` (the namespace percent-encoded, so
one namespace's key never names another's chat) in the KV backend (Redis when configured, else embedded
SQLite), with the library's TTL (``settings.brain_ttl_seconds``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from ltm.brain import BrainMemory
from ltm.service.auth import Readable, Writable, state_of
from ltm.service.chatkeys import chat_ids as _chat_ids
from ltm.service.chatkeys import chat_key, check_chat_id
from ltm.service.routes.messages import check_items, page_of
from ltm.service.schemas import ChatIn, message_out

__all__ = ["chat_key", "load_chat", "router"]

router = APIRouter(prefix="/v1/namespaces/{namespace:path}/chats", tags=["chats"])


class WordsIn(BaseModel):
    """How long a summary or title may be."""

    model_config = ConfigDict(extra="forbid")

    max_words: int = Field(200, ge=1, le=5000)


async def load_chat(request: Request, namespace: str, chat_id: str) -> BrainMemory:
    """The chat's memory as stored (a fresh, empty one for a new chat)."""
    state = state_of(request)
    key = chat_key(namespace, check_chat_id(chat_id))
    return await BrainMemory(settings=state.settings, kv=state.kv_store()).loads(key)


def chat_ids(request: Request, namespace: str) -> list[str]:
    """The ids of the namespace's chats (those whose TTL has not run out), sorted."""
    return _chat_ids(state_of(request).kv_store(), namespace)


@router.get("")
def list_chats(
    request: Request,
    namespace: Readable,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1)] = 100,
) -> dict[str, Any]:
    """A page of the namespace's chat ids, sorted; ``next_offset`` is null on the last page."""
    ids, following = page_of(request, chat_ids(request, namespace), offset, limit)
    return {"chats": ids, "next_offset": following}


@router.post("/{chat_id}/messages")
async def append(request: Request, namespace: Writable, chat_id: str, body: ChatIn) -> dict[str, Any]:
    """Append messages to the chat's history (role ``user`` is a talk, any other an answer) and save it."""
    check_items(request, len(body.messages))
    memory = await load_chat(request, namespace, chat_id)
    for item in body.messages:
        message = item.to_message()
        if message.role == "user":
            memory.add_talk(message)
        else:
            memory.add_answer(message)
    await memory.dumps()
    return {"history": len(memory.history)}


@router.get("/{chat_id}")
async def read(
    request: Request,
    namespace: Readable,
    chat_id: str,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1)] = 100,
) -> dict[str, Any]:
    """The chat's summary and a page of its history (oldest first); ``next_offset`` is null on the last page."""
    limit = min(limit, state_of(request).limits.max_page)
    memory = await load_chat(request, namespace, chat_id)
    page = memory.history[offset : offset + limit]
    end = offset + len(page)
    return {
        "chat_id": chat_id,
        "summary": memory.historical_summary,
        "summary_is_extractive": memory.summary_is_extractive,
        "total": len(memory.history),
        "history": [message_out(m) for m in page],
        "next_offset": end if end < len(memory.history) else None,
    }


@router.post("/{chat_id}/summarize")
async def summarize(request: Request, namespace: Writable, chat_id: str, body: WordsIn | None = None) -> dict[str, Any]:
    """Fold the history into the running summary (BrainMemory.summarize) and return it (no body: 200 words)."""
    body = body or WordsIn()
    memory = await load_chat(request, namespace, chat_id)
    summary = await memory.summarize(max_words=body.max_words)
    return {"summary": summary, "summary_is_extractive": memory.summary_is_extractive}


@router.post("/{chat_id}/title")
async def title(request: Request, namespace: Writable, chat_id: str, body: WordsIn | None = None) -> dict[str, Any]:
    """A short title for the chat (summarizes first, as BrainMemory.get_title does; no body: the defaults)."""
    body = body or WordsIn()
    memory = await load_chat(request, namespace, chat_id)
    return {"title": await memory.get_title(max_words=min(body.max_words, 20))}
