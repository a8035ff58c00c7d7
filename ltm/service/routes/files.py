"""A namespace's memory files (MemoryFS scope ``agent:<namespace>``): list, read, propose, approve, reject.

Every proposal waits for approval: a person (or a key allowed to write) approves it, which is the guard
against an agent writing instructions into its own memory unseen.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict

from ltm.files.records import Change
from ltm.service.auth import Readable, Writable, state_of
from ltm.service.routes.messages import page_of
from ltm.service.schemas import ChangeIn

__all__ = ["change_out", "router"]

router = APIRouter(prefix="/v1/namespaces/{namespace:path}/files", tags=["files"])


class RejectIn(BaseModel):
    """Why a change was rejected (kept in the audit log)."""

    model_config = ConfigDict(extra="forbid")

    reason: str = ""


def change_out(change: Change, diff: str | None = None) -> dict[str, Any]:
    """A change as JSON, with its unified diff when given."""
    out = asdict(change)
    if diff is not None:
        out["diff"] = diff
    return out


@router.get("")
def list_files(
    request: Request,
    namespace: Readable,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1)] = 100,
) -> dict[str, Any]:
    """A page of the approved files (by path) with their size, version and hash."""
    files, following = page_of(request, sorted(state_of(request).files(namespace).files().items()), offset, limit)
    return {"files": [{"path": path, **asdict(info)} for path, info in files], "next_offset": following}


@router.get("/content/{path:path}")
def read_file(
    request: Request, namespace: Readable, path: str, version: Annotated[int | None, Query(ge=1)] = None
) -> dict[str, Any]:
    """An approved file's text (a past ``version`` when given)."""
    return {"path": path, "text": state_of(request).files(namespace).read(path, version)}


@router.get("/changes")
def pending(
    request: Request,
    namespace: Readable,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1)] = 100,
) -> dict[str, Any]:
    """A page of the pending changes, oldest first, each with its diff against the approved files."""
    fs = state_of(request).files(namespace)
    changes, following = page_of(request, fs.pending(), offset, limit)
    return {"changes": [change_out(c, fs.diff(c.id)) for c in changes], "next_offset": following}


@router.post("/changes")
def propose(request: Request, namespace: Writable, body: ChangeIn) -> dict[str, Any]:
    """Propose writing (or, with ``text`` null, deleting) a file; validated now, applied on approval."""
    fs = state_of(request).files(namespace)
    if body.text is None:
        change = fs.delete(body.path, reason=body.reason, author=body.author)
    else:
        change = fs.write(body.path, body.text, reason=body.reason, author=body.author)
    return change_out(change, fs.diff(change.id) if change.status == "pending" else None)


@router.post("/changes/{change_id}/approve")
def approve(request: Request, namespace: Writable, change_id: str) -> dict[str, Any]:
    """Apply a pending change."""
    return change_out(state_of(request).files(namespace).approve(change_id))


@router.post("/changes/{change_id}/reject")
def reject(request: Request, namespace: Writable, change_id: str, body: RejectIn | None = None) -> dict[str, Any]:
    """Drop a pending change (kept in the audit log with the reason)."""
    return change_out(state_of(request).files(namespace).reject(change_id, body.reason if body else ""))
