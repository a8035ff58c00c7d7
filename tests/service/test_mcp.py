"""The MCP server with the official SDK's client: the five tools over streamable HTTP (mounted in ltm serve)
and over stdio (``ltm mcp`` as a subprocess), with the same keys as the HTTP API."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from ltm.config import Settings
from ltm.service import KeyStore
from tests.support.service import ServiceThread, mcp_data, mcp_text

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"add", "search", "recall_recent", "find_news", "summarize_chat"}


async def _exercise(client: Client, namespace: str) -> None:
    assert {t.name for t in (await client.list_tools()).tools} >= TOOLS
    for text in ("the deploy failed because the disk was full", "lunch is at noon", "rotate the API keys monthly"):
        added = mcp_data(await client.call_tool("add", {"namespace": namespace, "content": text}))
        assert added["added"] is True and added["id"]
    hits = mcp_data(await client.call_tool("search", {"namespace": namespace, "query": "disk full deploy", "k": 2}))
    assert hits[0]["content"] == "the deploy failed because the disk was full" and hits[0]["score"] > 0
    recent = mcp_data(await client.call_tool("recall_recent", {"namespace": namespace, "n": 2}))
    assert [m["content"] for m in recent] == ["lunch is at noon", "rotate the API keys monthly"]
    news = mcp_data(
        await client.call_tool(
            "find_news", {"namespace": namespace, "texts": ["lunch is at noon", "the office moves in May"]}
        )
    )
    assert news == ["the office moves in May"]
    summary = mcp_data(await client.call_tool("summarize_chat", {"namespace": namespace, "chat_id": "nothing-yet"}))
    assert summary == {"summary": "", "extractive": False}
    refused = await client.call_tool("add", {"namespace": "someone-else", "content": "x"})
    assert refused.is_error and "Forbidden" in mcp_text(refused)


def test_mcp_over_streamable_http_with_keys(settings: Settings) -> None:
    service = ServiceThread(settings, mcp=True).start()
    try:
        key, _ = service.state.keys.create(["agents/*"])
        chat = {"messages": [{"content": "We agreed to ship on Friday after the load test passes", "role": "user"}]}
        httpx.post(
            service.url + "/v1/namespaces/agents/bot/chats/standup/messages",
            json=chat,
            headers={"Authorization": f"Bearer {key}"},
        ).raise_for_status()

        async def run() -> None:
            headers = {"Authorization": f"Bearer {key}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                Client(streamable_http_client(service.url + "/mcp/", http_client=http)) as client,
            ):
                await _exercise(client, "agents/bot")
                summary = mcp_data(
                    await client.call_tool("summarize_chat", {"namespace": "agents/bot", "chat_id": "standup"})
                )
                assert "Friday" in summary["summary"] and summary["extractive"] is True

        asyncio.run(run())
        assert httpx.post(service.url + "/mcp/", json={}).status_code == 401  # no key: refused before the SDK
        bad = httpx.post(service.url + "/mcp/", json={}, headers={"Authorization": "Bearer ltm_x_y"})
        assert bad.status_code == 401 and bad.json()["error"] == "AuthRequired"
    finally:
        service.close()


def test_mcp_over_stdio_with_the_key_from_the_environment(settings: Settings) -> None:
    keys = KeyStore(settings)
    key, _ = keys.create(["agents/*"])
    keys.close()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LTM_API_KEY": key,
        "LTM_STORAGE_DIR": str(settings.storage_dir),
        "LTM_EMBEDDING": "hash",
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "ltm.cli", "mcp"], env=env, cwd=str(ROOT))

    async def run() -> None:
        async with Client(params) as client:
            await _exercise(client, "agents/stdio")

    asyncio.run(run())
    env["LTM_API_KEY"] = "ltm_00000000_not-a-key"
    refused = subprocess.run(
        [sys.executable, "-m", "ltm.cli", "mcp"],
        env=env,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=-3,
    )
    assert refused.returncode == 1 and "LTM_API_KEY" in refused.stderr and key not in refused.stderr
