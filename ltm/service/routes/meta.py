"""Health and the namespaces a caller may see."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

import ltm
from ltm.service.auth import caller, state_of

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["meta"])


@router.get("/health")
def health(request: Request) -> dict[str, Any]:
    """Liveness: the version and whether keys are required (no key needed to ask)."""
    return {"status": "ok", "version": ltm.__version__, "auth": state_of(request).auth}


@router.get("/namespaces")
def namespaces(request: Request) -> dict[str, Any]:
    """The message namespaces of this data root that the caller's key may use."""
    who = caller(request)
    from ltm.service.catalog import namespace_names

    return {"namespaces": [n for n in namespace_names(state_of(request).settings) if who.may_use(n)]}
