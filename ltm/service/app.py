"""The ASGI app: routers, error mapping, the body-size limit and a log line per request without keys or URLs.

``create_app`` builds a FastAPI app over one :class:`~ltm.service.state.ServiceState`; ``ltm serve`` runs it
with uvicorn (its own access log off: it would print URLs, and URLs hold namespace names).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import ltm
from ltm.config import Settings
from ltm.errors import LTMError
from ltm.service.errors import error_body, status_of
from ltm.service.guards import HostGuard, SecurityHeaders
from ltm.service.state import Limits, ServiceState

__all__ = ["create_app"]

log = logging.getLogger("ltm.service")

_HTTP_NAMES = {
    400: "InvalidInput",
    401: "AuthRequired",
    403: "Forbidden",
    404: "NotFound",
    405: "InvalidInput",
    413: "PayloadTooLarge",
}


def create_app(
    settings: Settings | None = None,
    *,
    auth: bool = True,
    limits: Limits | None = None,
    embedding: Any = None,
    ui: bool = True,
    mcp_path: str | None = None,
    allowed_hosts: Sequence[str] = (),
) -> FastAPI:
    """The HTTP API (``/v1``), its OpenAPI document, and the web inspector at ``/ui`` unless ``ui=False``.

    ``auth=False`` lets every request do everything (``ltm serve`` allows it on loopback only), and then only
    loopback ``Host`` names are answered; ``allowed_hosts`` are answered besides them (see
    :mod:`ltm.service.guards`). ``embedding`` overrides the settings' embedding model (tests pass a fast one).
    ``mcp_path`` mounts the MCP server's streamable-HTTP transport there (same keys). There is no
    ``/docs`` or ``/redoc`` page (they would load scripts from a CDN); ``/openapi.json`` describes the API.
    """
    state = ServiceState(settings or Settings.load(), auth=auth, limits=limits or Limits(), embedding=embedding)
    mcp_app = None
    if mcp_path is not None:
        from ltm.service.mcp import mcp_http_app

        mcp_app = mcp_http_app(state)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            if mcp_app is not None:
                async with mcp_app.router.lifespan_context(mcp_app):
                    yield
            else:
                yield
        finally:
            state.close()

    app = FastAPI(
        title="ltm",
        version=ltm.__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Long-term memory for LLM agents: the library's API over HTTP.",
    )
    app.state.ltm = state
    _errors(app)
    from ltm.service.routes import chats, experience, files, forget, messages, meta, search, versions

    # Namespaces may hold '/', so '{namespace:path}' is greedy: the routers with longer fixed tails go first
    # (a namespace whose name itself ends in '/chats/<id>' would be read as a chat: avoid such names).
    for module in (forget, meta, chats, files, experience, versions, messages, search):
        app.include_router(module.router)
    if ui:
        from ltm.service.ui import mount_ui

        mount_ui(app)
    if mcp_app is not None:
        app.mount(mcp_path or "/mcp", mcp_app)
    app.add_middleware(_BodyLimit, max_bytes=state.limits.max_body_bytes)  # the innermost: after the Host check
    app.add_middleware(HostGuard, open_server=not auth, allowed=allowed_hosts)
    app.add_middleware(_AccessLog)
    app.add_middleware(SecurityHeaders)  # the outermost: every answer carries the headers, a 421 or 413 too
    return app


def _errors(app: FastAPI) -> None:
    @app.exception_handler(LTMError)
    async def ltm_error(request: Request, exc: LTMError) -> JSONResponse:
        status = status_of(exc)
        if status >= 500:  # the type and route only: the message may name a backend's address
            log.warning("%s in %s %s", type(exc).__name__, request.method, _route(request.scope))
        return JSONResponse(error_body(exc), status_code=status)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        return JSONResponse({"error": "InvalidInput", "message": f"bad request: {problems}"}, status_code=400)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        name = _HTTP_NAMES.get(exc.status_code, "LTMError")
        return JSONResponse({"error": name, "message": str(exc.detail)}, status_code=exc.status_code)


def _route(scope: Scope) -> str:
    """The matched route's template (``/v1/namespaces/{namespace}/messages``), never the concrete URL."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "(unmatched)"


class _AccessLog:
    """One INFO line per request: method, route template, status, milliseconds. No URL, query or header.

    An exception no handler turned into an answer becomes a 500 ``InternalError`` here, logged as one ERROR
    line with its type and route; its traceback (whose messages may hold namespace names) is logged only at
    DEBUG level.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start, status, started = time.perf_counter(), 500, False

        async def sending(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status, started = int(message["status"]), True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:  # noqa: BLE001 - the one place every unexpected failure ends
            log.error("unhandled %s in %s %s", type(exc).__name__, scope["method"], _route(scope))
            log.debug("the unhandled exception's traceback", exc_info=True)
            if not started:
                body = {"error": "InternalError", "message": "the server failed; its log has the type"}
                await JSONResponse(body, status_code=500)(scope, receive, sending)
        finally:
            log.info("%s %s %d %.1fms", scope["method"], _route(scope), status, 1000 * (time.perf_counter() - start))


class _BodyLimit:
    """413 PayloadTooLarge for a body over ``max_bytes``: by Content-Length up front, else while reading it.

    The body is read here in full (at most ``max_bytes``) and replayed to the app, so an oversized chunked
    body is refused before any handler runs.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        seen, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = {
            "error": "PayloadTooLarge",
            "message": f"the request body is over {self.max_bytes} bytes; send fewer or smaller messages "
            "per request (ltm serve --max-body-bytes raises the limit)",
        }
        await JSONResponse(body, status_code=413)(scope, receive, send)
