"""What every request passes before a route sees it, and what every response carries.

- :class:`HostGuard`: the ``Host`` header must name this server. With ``--no-auth`` only loopback names
  (``localhost``, ``*.localhost``, ``127.0.0.0/8``, ``[::1]``) are answered, so a web page that rebinds its
  own domain to 127.0.0.1 (DNS rebinding) gets 421 instead of every namespace. A configured list
  (``ltm serve --allow-host``) is answered besides the loopback names; with keys and no list, any host is.
- :class:`SecurityHeaders`: a strict Content-Security-Policy (own scripts and styles only, no framing, forms
  post only to this origin), ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``,
  ``Referrer-Policy: same-origin`` and ``Cache-Control: no-store`` on every answer but the static files.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HEADERS", "HostGuard", "SecurityHeaders", "host_name", "is_loopback_name"]

HEADERS: tuple[tuple[str, str], ...] = (
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "same-origin"),
    ("cross-origin-opener-policy", "same-origin"),
)


def host_name(host: str) -> str:
    """The name part of a ``Host`` header value, lower-case: ``Example.org:8765`` -> ``example.org``,
    ``[::1]:80`` -> ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_loopback_name(name: str) -> bool:
    """Whether a host name can only mean this machine: ``localhost`` (and its subdomains, which browsers
    resolve to loopback themselves) or a loopback address."""
    name = name.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostGuard:
    """421 for a request whose ``Host`` is not one this server answers (see the module's docstring)."""

    def __init__(self, app: ASGIApp, *, open_server: bool, allowed: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = frozenset(host_name(h) for h in allowed if h.strip())
        self.any_host = not open_server and not self.allowed

    def answers(self, host: str | None) -> bool:
        """Whether a request with this ``Host`` value is served (None: an HTTP/1.0 request without one)."""
        if self.any_host or host is None:
            return True
        name = host_name(host)
        return (
            is_loopback_name(name)
            or name in self.allowed
            or any(a.startswith("*.") and name.endswith(a[1:]) for a in self.allowed)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            raw = dict(scope["headers"]).get(b"host")
            if not self.answers(None if raw is None else raw.decode("latin-1")):
                body = {
                    "error": "Forbidden",
                    "message": "this server does not answer for that Host name; open it by a loopback "
                    "address, or start it with --allow-host NAME (the docs' security page says when)",
                }
                await JSONResponse(body, status_code=421)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class SecurityHeaders:
    """Adds :data:`HEADERS` to every response, and ``Cache-Control: no-store`` to those not under
    ``/ui/static`` (answers carry a namespace's data)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith("/ui/static/")

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in HEADERS if k.encode() not in present]
                if not static and b"cache-control" not in present:
                    extra.append((b"cache-control", b"no-store"))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, sending)
