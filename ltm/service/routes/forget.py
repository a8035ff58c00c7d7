"""Forgetting over HTTP: a namespace's memories with every copy (``MemoryStorage.forget``), or one user across
every memory kind (``ltm.forget_user``). Both answer the receipt.

``POST /v1/namespaces/{namespace}/forget`` needs a key that may write the namespace; ``POST
/v1/users/{user_id}/forget`` reaches every namespace, so it needs a write key whose patterns include ``*``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from ltm.service.auth import Writable, caller, state_of
from ltm.service.errors import Forbidden
from ltm.service.routes.messages import check_items

__all__ = ["router"]

router = APIRouter(tags=["forget"])


class ForgetIn(BaseModel):
    """What to forget: ``ids``, a ``filters`` object (the search filters), or both (the ids the filter matches)."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] | None = None
    filters: dict[str, Any] | None = None
    reason: str | None = Field(None, description="kept in each FORGET history event; no content is kept")


class ForgetUserIn(BaseModel):
    """Why the user is erased (kept in each FORGET history event)."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = None


@router.post("/v1/namespaces/{namespace:path}/forget")
def forget(request: Request, namespace: Writable, body: ForgetIn) -> dict[str, Any]:
    """Erase the messages and every copy the store keeps of them; the receipt (``removed``, where, ``not_found``)."""
    check_items(request, len(body.ids or ()), "ids")
    receipt = state_of(request).store(namespace).forget(body.ids, filters=body.filters, reason=body.reason)
    return receipt.to_dict()


@router.post("/v1/users/{user_id}/forget")
def forget_user(request: Request, user_id: str, body: ForgetUserIn | None = None) -> dict[str, Any]:
    """Erase one user from every memory kind of the server (store namespaces, chats, memory files); the receipt."""
    from ltm.forget import forget_user as erase_user

    who = caller(request)
    if "*" not in who.namespaces or who.read_only:
        raise Forbidden("forgetting a user reaches every namespace: it needs a write key for '*'")
    state = state_of(request)
    return erase_user(user_id, state.settings, reason=body.reason if body else None, kv=state.kv_store()).to_dict()
