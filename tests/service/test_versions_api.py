"""Versions over the service: supersede / versions / keys / count and ``as_of`` / ``known_at`` on search and list,
through the HTTP client (RemoteStorage), the MCP tools, and the CLI's ``--as-of`` / ``--known-at``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from ltm import MemoryStorage, Message, Settings
from ltm.cli import main
from ltm.client import RemoteStorage
from ltm.errors import InvalidInput, NotFound
from tests.support.service import ServiceThread, mcp_data

PARIS, BERLIN = "Alice lives in Paris", "Alice lives in Berlin"
QUESTION = "where does Alice live"


def contents(hits: list[Any]) -> list[str]:
    return [h.message.content for h in hits]


def test_versions_over_http(server: ServiceThread) -> None:
    key, _ = server.state.keys.create(["*"])
    store = RemoteStorage("people", url=server.url, api_key=key)
    paris = Message(PARIS, metadata={"valid_from": 1000.0})
    store.add(paris)
    berlin = store.supersede(paris.id, Message(BERLIN, metadata={"valid_from": 2000.0}), reason="moved")
    for mode in ("hybrid", "dense", "keyword"):
        assert contents(store.search(QUESTION, 5, mode=mode)) == [BERLIN], mode
        assert contents(store.search(QUESTION, 5, mode=mode, as_of=1500)) == [PARIS], mode
    assert [m.id for m in store.versions(berlin)] == [paris.id, berlin]
    assert store.count() == 1 and store.count(as_of="1970-01-01T00:25:00+00:00") == 1 and len(store) == 2
    assert [m.content for m in store.list(as_of=1500).messages] == [PARIS]
    assert store.count({"content": {"contains": "Berlin"}}, as_of=1500) == 0
    with pytest.raises(InvalidInput, match=berlin):
        store.supersede(paris.id, Message("Alice lives in Rome"))
    with pytest.raises(NotFound):
        store.supersede("no-such-id", Message("x"))
    with pytest.raises(InvalidInput, match="as_of"):
        store.search(QUESTION, as_of="last week")
    with pytest.raises(InvalidInput, match="as_of"):  # the same answer where nothing was written yet
        RemoteStorage("nobody", url=server.url, api_key=key).search(QUESTION, as_of="last week")

    async def run() -> tuple[list[Any], list[Any]]:
        return await store.asearch(QUESTION, 5, mode="keyword"), await store.asearch(
            QUESTION, 5, mode="keyword", as_of=1500
        )

    assert [contents(h) for h in asyncio.run(run())] == [[BERLIN], [PARIS]]
    first = store.put("alice/job", "Alice is a nurse")
    between = time.time()
    time.sleep(0.02)
    second = store.put("alice/job", "Alice is a doctor", reason="retrained")
    now, then = store.current("alice/job"), store.current("alice/job", known_at=between)
    assert now is not None and now.id == second and then is not None and then.id == first
    assert store.current("nothing") is None

    store.close()


def test_versions_over_mcp(settings: Settings) -> None:
    service = ServiceThread(settings, mcp=True).start()
    try:
        key, _ = service.state.keys.create(["agents/*"])
        paris = Message(PARIS, metadata={"valid_from": 1000.0})
        headers = {"Authorization": f"Bearer {key}"}
        httpx.post(
            service.url + "/v1/namespaces/agents/bot/messages",
            json={"messages": [paris.to_dict()]},
            headers=headers,
        ).raise_for_status()

        async def run() -> None:
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                Client(streamable_http_client(service.url + "/mcp/", http_client=http)) as client,
            ):
                args = {"namespace": "agents/bot", "old_id": paris.id, "content": BERLIN, "valid_from": 2000}
                new = mcp_data(await client.call_tool("supersede", {**args, "reason": "moved"}))["id"]
                query = {"namespace": "agents/bot", "query": QUESTION, "mode": "keyword"}
                now = mcp_data(await client.call_tool("search", query))
                then = mcp_data(await client.call_tool("search", {**query, "as_of": 1500}))
                assert [h["content"] for h in now] == [BERLIN] and [h["content"] for h in then] == [PARIS]
                chain = mcp_data(await client.call_tool("versions", {"namespace": "agents/bot", "message_id": new}))
                assert [m["id"] for m in chain] == [paris.id, new]
                assert chain[0]["metadata"]["supersede_reason"] == "moved"

        asyncio.run(run())
    finally:
        service.close()


def test_cli_as_of_and_known_at(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    store = MemoryStorage("people", settings=settings, kind="cli")
    paris = Message(PARIS, metadata={"valid_from": 1000.0})
    store.add(paris)
    time.sleep(0.02)
    before = time.time()
    time.sleep(0.02)
    store.supersede(paris.id, Message(BERLIN, metadata={"valid_from": 2000.0}))
    store.close()
    common = ["--storage-dir", str(settings.storage_dir), "--embedding", "hash"]
    capsys.readouterr()
    assert main(["search", "-n", "people", QUESTION, "--mode", "keyword", *common]) == 0
    assert BERLIN in capsys.readouterr().out
    assert main(["search", "-n", "people", QUESTION, "--mode", "keyword", "--as-of", "1500", *common]) == 0
    out = capsys.readouterr().out
    assert PARIS in out and BERLIN not in out
    assert main(["list", "-n", "people", "--known-at", str(before), *common]) == 0
    out = capsys.readouterr().out
    assert PARIS in out and BERLIN not in out
    assert main(["list", "-n", "people", "--as-of", "1970-01-01T00:40:00+00:00", *common]) == 0
    out = capsys.readouterr().out
    assert BERLIN in out and PARIS not in out
    other = MemoryStorage("places", settings=settings, kind="cli")
    other.add(Message("Alice visited Rome", metadata={"valid_from": 1000.0}))
    other.close()
    also = ["search", "-n", "people", "--also", "places", QUESTION, "--mode", "keyword", *common]
    assert main([*also, "--as-of", "1500"]) == 0  # several namespaces, each read as of then
    out = capsys.readouterr().out
    assert PARIS in out and BERLIN not in out
    assert main([*also, "--known-at", str(before)]) == 0
    out = capsys.readouterr().out
    assert PARIS in out and BERLIN not in out
