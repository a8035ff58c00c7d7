"""Who may do what: ``Authorization: Bearer <key>`` (or, on ``/ui`` pages only, the inspector's cookie) checked
against the key table.

No key, or an unknown or revoked one: 401. A namespace outside the key's patterns, or a write with a read-only
key: 403. With ``auth=False`` (``ltm serve --no-auth``, loopback only) every request may do everything.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ltm.errors import InvalidInput
from ltm.service.errors import AuthRequired, Forbidden
from ltm.service.keys import OPEN, Principal
from ltm.service.state import ServiceState

__all__ = ["COOKIE", "MAX_NAMESPACE", "Readable", "Writable", "caller", "check_namespace", "state_of"]

COOKIE = "ltm_key"


def state_of(request: Request) -> ServiceState:
    """The running service's state."""
    state: ServiceState = request.app.state.ltm
    return state


def caller(request: Request) -> Principal:
    """The principal of this request; AuthRequired when there is no valid key."""
    state = state_of(request)
    if not state.auth:
        return OPEN
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if (scheme.lower() != "bearer" or not key.strip()) and request.url.path.startswith("/ui"):
        key = request.cookies.get(COOKIE, "")  # the inspector's sign-in is good for the inspector only
    if not key.strip():
        raise AuthRequired(
            "this server needs an API key: send 'Authorization: Bearer <key>' "
            "(create one with `ltm keys create --namespaces 'NAME-OR-PATTERN'`)"
        )
    record = state.keys.lookup(key.strip())
    if record is None:
        raise AuthRequired("the API key is unknown or revoked; create a new one with `ltm keys create`")
    return record.principal()


MAX_NAMESPACE = 256


def check_namespace(namespace: str) -> str:
    """``namespace`` when its length is within :data:`MAX_NAMESPACE`, else InvalidInput."""
    if not namespace or len(namespace) > MAX_NAMESPACE:
        raise InvalidInput(f"a namespace name is 1 to {MAX_NAMESPACE} characters long, got {len(namespace)}")
    return namespace


def _check(request: Request, namespace: str, write: bool) -> str:
    who = caller(request)
    check_namespace(namespace)
    if not who.may_use(namespace):
        raise Forbidden(f"this key may not use namespace {namespace!r}; its namespaces: {list(who.namespaces)}")
    if write and who.read_only:
        raise Forbidden("this key is read-only; writing needs a key created without --read-only")
    return namespace


def read_access(request: Request, namespace: str) -> str:
    """The path's namespace once the caller may read it."""
    return _check(request, namespace, write=False)


def write_access(request: Request, namespace: str) -> str:
    """The path's namespace once the caller may write it."""
    return _check(request, namespace, write=True)


Readable = Annotated[str, Depends(read_access)]
Writable = Annotated[str, Depends(write_access)]
