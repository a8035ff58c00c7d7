"""The MCP server (official ``mcp`` SDK, 2.x ``MCPServer``): the memory's tools for any MCP-capable agent.

Tools: ``add`` (store a message), ``search`` (hybrid, dense or keyword), ``recall_recent`` (newest messages),
``find_news`` (which observed texts are new), ``summarize_chat`` (fold a chat's history into its summary),
``forget`` (erase messages and every copy of them, with a receipt).
Every tool names the namespace it works on; the caller's key must cover it (and not be read-only to write),
exactly as over HTTP.

Transports: stdio (``ltm mcp``; the key comes from ``LTM_API_KEY`` in the client's config) and
streamable HTTP (``ltm mcp --transport http`` or mounted at ``/mcp`` by ``ltm serve --mcp``; the key comes in
``Authorization: Bearer``, a request without a valid one is refused with 401 before reaching the SDK).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ltm.errors import LTMError, NotFound
from ltm.longterm import LongTermMemory
from ltm.message import Message
from ltm.service.auth import check_namespace
from ltm.service.chatkeys import chat_key, check_chat_id
from ltm.service.errors import AuthRequired, Forbidden, error_body, status_of
from ltm.service.keys import OPEN, Principal
from ltm.service.state import ServiceState
from ltm.store import MemoryHit, check_times

__all__ = ["KEY_ENV", "build_mcp", "mcp_http_app"]

KEY_ENV = "LTM_API_KEY"
T = TypeVar("T")


def _principal(state: ServiceState, ctx: Context[Any, Any] | None, stdio_key: str | None) -> Principal:
    if not state.auth:
        return OPEN
    key = stdio_key
    headers = ctx.headers if ctx is not None else None
    if headers is not None:
        scheme, _, token = (headers.get("authorization") or "").partition(" ")
        key = token.strip() if scheme.lower() == "bearer" else None
    record = state.keys.lookup(key) if key else None
    if record is None:
        raise AuthRequired(
            f"an MCP client needs a valid ltm API key ({KEY_ENV} for stdio, a Bearer header "
            "over HTTP); create one with `ltm keys create`"
        )
    return record.principal()


def build_mcp(state: ServiceState, *, stdio_key: str | None = None) -> MCPServer[Any]:
    """An MCP server over ``state``'s memories. ``stdio_key`` is the API key of a stdio session."""
    server: MCPServer[Any] = MCPServer(
        "ltm",
        instructions="Long-term memory: store messages in a namespace, search them by meaning, recall the "
        "newest, tell which observations are new, and summarize a chat.",
    )

    async def run(ctx: Context[Any, Any] | None, namespace: str, write: bool, work: Callable[[], T]) -> T:
        try:
            who = _principal(state, ctx, stdio_key)
            check_namespace(namespace)
            if not who.may_use(namespace):
                raise Forbidden(f"this key may not use namespace {namespace!r}; its namespaces: {list(who.namespaces)}")
            if write and who.read_only:
                raise Forbidden("this key is read-only; writing needs a key created without --read-only")
            return await asyncio.to_thread(work)
        except LTMError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    @server.tool()
    async def add(
        namespace: str, content: str, ctx: Context[Any, Any], role: str = "user", metadata: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Store a message in a namespace; returns its id and whether it was new."""
        message = Message(content, role=role, metadata=metadata or {})
        added = await run(ctx, namespace, True, lambda: state.store(namespace).add(message))
        return {"id": message.id, "added": added}

    @server.tool()
    async def search(
        namespace: str,
        query: str,
        ctx: Context[Any, Any],
        k: int = 5,
        mode: Literal["hybrid", "dense", "keyword"] = "hybrid",
        as_of: float | str | None = None,
        known_at: float | str | None = None,
    ) -> list[dict[str, Any]]:
        """Search a namespace by meaning and keywords (mode hybrid, dense or keyword); best first. Only what is
        valid now (superseded versions left out); ``as_of``: what was valid at that time (unix seconds or ISO
        8601); ``known_at``: what the memory held at that time."""

        def work() -> list[MemoryHit]:
            store = state.existing_store(namespace)  # a name never written to: no hits, nothing created
            if store is None:
                check_times(as_of, known_at)
                return []
            return store.search(query, k, mode=mode, as_of=as_of, known_at=known_at)

        hits = await run(ctx, namespace, False, work)
        return [
            {
                "id": h.message.id,
                "content": h.message.content,
                "role": h.message.role,
                "score": h.score,
                "signals": list(h.signals),
            }
            for h in hits
        ]

    @server.tool()
    async def supersede(
        namespace: str,
        old_id: str,
        content: str,
        ctx: Context[Any, Any],
        reason: str | None = None,
        valid_from: float | str | None = None,
    ) -> dict[str, Any]:
        """Replace a stored memory by a new version (the old one stays for as-of searches, no longer current):
        the old one ends at ``valid_from`` (default now); returns the new version's id."""
        old = await run(ctx, namespace, False, lambda: state.store(namespace).get(old_id))
        metadata = {k: v for k, v in old.metadata.items() if k in ("user_id", "agent_id", "run_id")}
        if valid_from is not None:
            metadata["valid_from"] = valid_from
        message = Message(content, role=old.role, metadata=metadata)
        new = await run(ctx, namespace, True, lambda: state.store(namespace).supersede(old_id, message, reason=reason))
        return {"id": new}

    @server.tool()
    async def versions(namespace: str, message_id: str, ctx: Context[Any, Any]) -> list[dict[str, Any]]:
        """Every version of a memory, oldest first, each with its validity and what superseded it."""

        def work() -> list[Message]:
            store = state.existing_store(namespace)
            if store is None:
                raise NotFound(f"no message {message_id!r}: namespace {namespace!r} holds nothing yet")
            return store.versions(message_id)

        return [m.to_dict() for m in await run(ctx, namespace, False, work)]

    @server.tool()
    async def recall_recent(namespace: str, ctx: Context[Any, Any], n: int = 10) -> list[dict[str, Any]]:
        """The ``n`` newest messages of a namespace, oldest first."""

        def work() -> list[Message]:
            store = state.existing_store(namespace)
            return [] if store is None else store.recent(min(n, 1000))

        found = await run(ctx, namespace, False, work)
        return [{"id": m.id, "content": m.content, "role": m.role, "created_at": m.created_at} for m in found]

    @server.tool()
    async def find_news(namespace: str, texts: list[str], ctx: Context[Any, Any]) -> list[str]:
        """Which of ``texts`` are new: not similar to anything stored nor to an earlier one of the list."""

        def work() -> list[str]:
            store = state.reader(namespace)
            memory = LongTermMemory(memory_storage=store, settings=store.settings)
            return [m.content for m in memory.find_news([Message(t) for t in texts])]

        return await run(ctx, namespace, False, work)

    @server.tool()
    async def summarize_chat(
        namespace: str, chat_id: str, ctx: Context[Any, Any], max_words: int = 200
    ) -> dict[str, Any]:
        """Fold a chat's history into its running summary and return the summary."""
        from ltm.brain import BrainMemory

        def work() -> dict[str, Any]:
            async def go() -> dict[str, Any]:
                memory = await BrainMemory(settings=state.settings, kv=state.kv_store()).loads(
                    chat_key(namespace, check_chat_id(chat_id))
                )
                summary = await memory.summarize(max_words=max_words)
                return {"summary": summary, "extractive": memory.summary_is_extractive}

            return asyncio.run(go())

        return await run(ctx, namespace, True, work)

    @server.tool()
    async def forget(
        namespace: str,
        ctx: Context[Any, Any],
        ids: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Erase messages of a namespace (by ``ids``, by ``filters``, or the ids the filters match) and every copy
        the store keeps of them; returns the receipt (how many were removed, from where, ids not found)."""
        receipt = await run(
            ctx, namespace, True, lambda: state.store(namespace).forget(ids, filters=filters, reason=reason)
        )
        return receipt.to_dict()

    return server


class _RequireKey:
    """401 JSON for an MCP HTTP request without a valid key (the tools check namespaces themselves), and 405
    for a GET: the transport is stateless with JSON answers, so there is no server-to-client stream to open
    (the SDK would hold such a stream open, idle, for as long as the client keeps it)."""

    def __init__(self, app: ASGIApp, state: ServiceState) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.state.auth:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            scheme, _, key = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or self.state.keys.lookup(key.strip()) is None:
                error = AuthRequired("send 'Authorization: Bearer <key>' (create one with `ltm keys create`)")
                await JSONResponse(error_body(error), status_code=status_of(error))(scope, receive, send)
                return
        if scope["type"] == "http" and scope["method"] == "GET":
            body = {"error": "InvalidInput", "message": "MCP over HTTP here is POST only (stateless, JSON answers)"}
            await JSONResponse(body, status_code=405, headers={"Allow": "POST, DELETE"})(scope, receive, send)
            return
        await self.app(scope, receive, send)


def mcp_http_app(state: ServiceState, *, path: str = "/") -> Starlette:
    """The streamable-HTTP transport as a Starlette app (its lifespan runs the SDK's session manager)."""
    server = build_mcp(state)
    app = server.streamable_http_app(streamable_http_path=path, stateless_http=True, json_response=True)
    app.add_middleware(_RequireKey, state=state)
    return app


def stdio_key() -> str | None:
    """The API key a stdio session runs with (``LTM_API_KEY``)."""
    return os.environ.get(KEY_ENV) or None
