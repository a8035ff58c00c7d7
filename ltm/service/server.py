"""How ``ltm serve`` runs its app under uvicorn: bounded in time and in connections.

uvicorn bounds an idle keep-alive connection (``timeout_keep_alive``), the size of a request head
(``h11_max_incomplete_event_size``) and the number of connections and tasks (``limit_concurrency``: one more
is answered 503), but not the time a client may take to send its request: a client that sends half a
header and then nothing would hold its connection open for ever. :class:`BoundedH11` is uvicorn's h11
protocol with that bound: the whole request (head and body) must arrive within ``request_timeout`` seconds
of the moment the server starts waiting for it, else the connection is closed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["BoundedH11", "ServerLimits", "uvicorn_config"]


@dataclass(frozen=True)
class ServerLimits:
    """Connection limits: seconds to send a whole request, seconds an idle keep-alive connection stays,
    bytes of a request head, and connections (and tasks) served at once."""

    request_timeout: float = 15.0
    keep_alive_timeout: int = 5
    max_head_bytes: int = 16 * 1024
    max_connections: int = 200


class BoundedH11(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request is not complete ``request_timeout``
    seconds after the server began waiting for it (at connect, and after each response)."""

    request_timeout = ServerLimits.request_timeout
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is h11.DONE:  # the whole request is in: the app's time is not bounded here
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is not h11.DONE:
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if not self.transport.is_closing() and self.conn.their_state is not h11.DONE:
            self.transport.close()


def uvicorn_config(app: Any, *, limits: ServerLimits | None = None, **options: Any) -> uvicorn.Config:
    """A uvicorn config for ``app`` with :class:`BoundedH11` and the limits (``options`` go to uvicorn)."""
    limits = limits or ServerLimits()
    protocol = type("BoundedH11", (BoundedH11,), {"request_timeout": limits.request_timeout})
    return uvicorn.Config(
        app,
        http=protocol,
        timeout_keep_alive=limits.keep_alive_timeout,
        h11_max_incomplete_event_size=limits.max_head_bytes,
        limit_concurrency=limits.max_connections,
        **options,
    )
