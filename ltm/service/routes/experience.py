"""A namespace's experience (ExperienceMemory): record a failure as a lesson, list lessons and policies,
distill, and the policies that fit a task."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from ltm.service.auth import Readable, Writable, state_of
from ltm.service.routes.messages import page_of
from ltm.service.schemas import LessonIn

__all__ = ["router"]

router = APIRouter(prefix="/v1/namespaces/{namespace:path}/experience", tags=["experience"])


def _page(request: Request, items: list[Any], offset: int, limit: int) -> dict[str, Any]:
    page, following = page_of(request, items, offset, limit)
    return {"items": [x.model_dump(mode="json") for x in page], "total": len(items), "next_offset": following}


@router.post("/lessons")
def record_failure(request: Request, namespace: Writable, body: LessonIn) -> dict[str, Any]:
    """Store a lesson for a failed tool call."""
    lesson = (
        state_of(request)
        .experience(namespace)
        .record_failure(body.tool, body.error, args=body.args, task=body.task, precondition=body.precondition or None)
    )
    return lesson.model_dump(mode="json")


@router.get("/lessons")
def lessons(
    request: Request,
    namespace: Readable,
    pending_only: bool = False,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1)] = 100,
) -> dict[str, Any]:
    """Lessons, oldest first (only those not yet distilled with ``pending_only``)."""
    memory = state_of(request).existing_experience(namespace)
    return _page(request, [] if memory is None else memory.lessons(pending_only=pending_only), offset, limit)


@router.get("/policies")
def policies(
    request: Request,
    namespace: Readable,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1)] = 100,
) -> dict[str, Any]:
    """Policies distilled from lessons (demoted ones included, flagged), oldest first."""
    memory = state_of(request).existing_experience(namespace)
    return _page(request, [] if memory is None else memory.policies(), offset, limit)


@router.post("/distill")
def distill(request: Request, namespace: Writable) -> dict[str, Any]:
    """Distill pending lessons into policies; returns the new or strengthened ones."""
    return {"policies": [p.model_dump(mode="json") for p in state_of(request).experience(namespace).distill()]}


@router.get("/policies_for")
def policies_for(
    request: Request, namespace: Readable, task: str, k: Annotated[int, Query(ge=1, le=50)] = 3
) -> dict[str, Any]:
    """The policies whose meaning fits ``task``, best first."""
    memory = state_of(request).existing_experience(namespace)
    return {"policies": [] if memory is None else [p.model_dump(mode="json") for p in memory.policies_for(task, k)]}
