"""Forgetting through the service: the REST endpoints (a namespace's memories; a user everywhere) and the MCP tool,
each behind a write key, answering the receipt; the HTTP client's ``RemoteStorage.forget``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from ltm.client import RemoteStorage
from ltm.config import Settings
from ltm.store import ForgetReceipt
from tests.store.embedded.test_forget_bytes import files_holding
from tests.support.service import ServiceThread, mcp_data, mcp_text

MARKER = "zorblaxquint"


def _add(service: ServiceThread, key: str, namespace: str, *messages: dict[str, Any]) -> list[str]:
    answer = httpx.post(
        f"{service.url}/v1/namespaces/{namespace}/messages",
        json={"messages": list(messages)},
        headers={"Authorization": f"Bearer {key}"},
    )
    answer.raise_for_status()
    ids: list[str] = answer.json()["ids"]
    return ids


def test_rest_forget_needs_a_write_key_and_answers_the_receipt(server: ServiceThread) -> None:
    writer, _ = server.state.keys.create(["team/*"])
    reader, _ = server.state.keys.create(["team/*"], read_only=True)
    [secret, kept] = _add(
        server,
        writer,
        "team/a",
        {"content": f"the vault code is {MARKER}", "metadata": {"user_id": "u1"}},
        {"content": "lunch is at noon", "metadata": {"user_id": "u2"}},
    )
    url = f"{server.url}/v1/namespaces/team/a/forget"
    body = {"ids": [secret, "nope"], "reason": "asked"}
    assert httpx.post(url, json=body, headers={"Authorization": f"Bearer {reader}"}).status_code == 403
    assert httpx.post(url, json=body).status_code == 401
    other, _ = server.state.keys.create(["elsewhere"])
    assert httpx.post(url, json=body, headers={"Authorization": f"Bearer {other}"}).status_code == 403
    refused = httpx.post(url, json={}, headers={"Authorization": f"Bearer {writer}"})
    assert refused.status_code == 400 and "delete_all" in refused.json()["message"]

    answer = httpx.post(url, json=body, headers={"Authorization": f"Bearer {writer}"})
    assert answer.status_code == 200, answer.text
    receipt = ForgetReceipt.from_dict(answer.json())
    assert (receipt.removed, receipt.ids, receipt.not_found, receipt.reason) == (1, (secret,), ("nope",), "asked")
    hits = httpx.post(
        f"{server.url}/v1/namespaces/team/a/search",
        json={"query": MARKER, "k": 5},
        headers={"Authorization": f"Bearer {writer}"},
    ).json()["hits"]
    assert [h["message"]["id"] for h in hits] == [kept]
    assert files_holding(Path(server.settings.storage_dir), MARKER.encode()) == []


def test_rest_forget_user_needs_a_write_key_for_every_namespace(server: ServiceThread) -> None:
    narrow, _ = server.state.keys.create(["team/*"])
    everything, _ = server.state.keys.create(["*"])
    _add(server, narrow, "team/a", {"content": f"u1 said {MARKER}", "metadata": {"user_id": "u1"}})
    _add(server, everything, "other", {"content": f"u1 again {MARKER}", "metadata": {"user_id": "u1"}})
    url = f"{server.url}/v1/users/u1/forget"
    assert httpx.post(url, json={}, headers={"Authorization": f"Bearer {narrow}"}).status_code == 403
    answer = httpx.post(url, json={"reason": "closed"}, headers={"Authorization": f"Bearer {everything}"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["removed"] == 2 and set(answer.json()["files"]) == set()
    assert files_holding(Path(server.settings.storage_dir), MARKER.encode()) == []


def test_the_client_forgets_through_the_server(server: ServiceThread) -> None:
    key, _ = server.state.keys.create(["*"])
    remote = RemoteStorage("notes", url=server.url, api_key=key)
    [secret] = _add(server, key, "notes", {"content": f"remember {MARKER}"})
    receipt = remote.forget(secret, reason="gone")
    assert isinstance(receipt, ForgetReceipt) and receipt.ids == (secret,) and receipt.removed == 1
    assert remote.forget(filters={"role": "nobody"}).removed == 0
    remote.close()


def test_the_mcp_forget_tool(settings: Settings) -> None:
    service = ServiceThread(settings, mcp=True).start()
    try:
        key, _ = service.state.keys.create(["agents/*"])
        reader, _ = service.state.keys.create(["agents/*"], read_only=True)

        async def run(token: str) -> list[Any]:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
                Client(streamable_http_client(service.url + "/mcp/", http_client=http)) as client,
            ):
                added = await client.call_tool("add", {"namespace": "agents/bot", "content": f"pin {MARKER}"})
                message_id = mcp_data(added)["id"]
                forgot = await client.call_tool(
                    "forget", {"namespace": "agents/bot", "ids": [message_id], "reason": "mcp"}
                )
                searched = await client.call_tool("search", {"namespace": "agents/bot", "query": MARKER})
                return [message_id, forgot, searched]

        message_id, forgot, searched = asyncio.run(run(key))
        receipt = mcp_data(forgot)
        assert receipt["ids"] == [message_id] and receipt["removed"] == 1 and receipt["reason"] == "mcp"
        assert mcp_data(searched) == []

        async def refused() -> Any:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {reader}"}, timeout=60) as http,
                Client(streamable_http_client(service.url + "/mcp/", http_client=http)) as client,
            ):
                return await client.call_tool("forget", {"namespace": "agents/bot", "ids": ["x"]})

        result = asyncio.run(refused())
        assert result.is_error and "read-only" in mcp_text(result)
    finally:
        service.close()
