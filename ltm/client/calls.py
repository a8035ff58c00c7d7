"""The HTTP calls of :class:`~ltm.client.RemoteStorage`, built once and sent by a sync or an async transport.

Each public method builds a :class:`Call` (method, path, body, how to read the answer); ``send`` and
``asend`` differ only in the awaited I/O, so the sync and async twins share every other line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from ltm import errors
from ltm.errors import BackendUnavailable, LTMError

__all__ = ["Call", "asend", "error_from", "path_of", "send"]

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and the function that turns its JSON answer into the method's result."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)


def path_of(namespace: str, tail: str) -> str:
    """``/v1/namespaces/<namespace>/<tail>``; ``/`` is kept (names like ``team-a/alice``), the rest escaped."""
    return f"/v1/namespaces/{quote(namespace, safe='/')}{tail}"


def error_from(response: httpx.Response) -> LTMError:
    """The LTMError an error response names (its class from ``ltm.errors``), else a plain LTMError."""
    try:
        body = response.json()
        name, message = str(body.get("error", "")), str(body.get("message", ""))
    except ValueError:
        name, message = "", response.text[:200]
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, LTMError):
        return cls(message)
    if response.status_code >= 500:
        return BackendUnavailable(f"the ltm server failed ({response.status_code}): {message}")
    return LTMError(f"the ltm server answered {response.status_code}: {message}")


def _finish(call: Call[T], response: httpx.Response) -> T:
    if response.status_code >= 400:
        raise error_from(response)
    return call.parse(response.json())


def send(client: httpx.Client, call: Call[T]) -> T:
    """Send ``call`` and parse its answer; transport failures are BackendUnavailable."""
    try:
        response = client.request(call.method, call.path, json=call.json, params=call.params or None)
    except httpx.HTTPError as exc:
        raise BackendUnavailable(f"cannot reach the ltm server: {type(exc).__name__}") from exc
    return _finish(call, response)


async def asend(client: httpx.AsyncClient, call: Call[T]) -> T:
    """Async twin of :func:`send`."""
    try:
        response = await client.request(call.method, call.path, json=call.json, params=call.params or None)
    except httpx.HTTPError as exc:
        raise BackendUnavailable(f"cannot reach the ltm server: {type(exc).__name__}") from exc
    return _finish(call, response)
