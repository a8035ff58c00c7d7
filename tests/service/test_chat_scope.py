"""A key scoped to one namespace never reaches another namespace's chats, whatever the chat id holds: over
REST, in the inspector's pages, and through MCP's ``summarize_chat`` (stdio). Chats stored under the old
``chat:<namespace>:<chat_id>`` keys move to the unambiguous keys when the server opens its KV store, on the
embedded SQLite KV and on a real Redis."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from ltm.brain import BrainMemory
from ltm.config import Settings
from ltm.kv import open_kv
from ltm.message import Message
from ltm.service import KeyStore
from tests.support.service import ServiceThread, mcp_text

ROOT = Path(__file__).resolve().parents[2]
SECRET = "the merger closes on the 14th; keep it quiet"


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _settings(tmp_path: Path, backend: str, redis_url: str | None) -> Settings:
    if backend == "redis":
        return Settings(storage_dir=tmp_path / "storage", embedding="hash", redis_url=redis_url)
    return Settings(storage_dir=tmp_path / "storage", embedding="hash")


@pytest.fixture(params=["sqlite", "redis"])
def backend_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    url = request.getfixturevalue("redis_url") if request.param == "redis" else None
    return _settings(tmp_path, request.param, url)


def test_a_key_for_alice_never_reaches_the_chats_of_alice_colon_work(backend_settings: Settings) -> None:
    service = ServiceThread(backend_settings).start()
    try:
        alice, _ = service.state.keys.create(["alice"])
        work, _ = service.state.keys.create(["alice:work"])
        with httpx.Client(base_url=service.url, timeout=30) as http:
            http.post(
                "/v1/namespaces/alice:work/chats/c1/messages",
                headers=_auth(work),
                json={"messages": [{"content": SECRET}]},
            ).raise_for_status()
            own = http.get("/v1/namespaces/alice:work/chats/c1", headers=_auth(work)).json()
            assert [m["content"] for m in own["history"]] == [SECRET]
            assert http.get("/v1/namespaces/alice:work/chats", headers=_auth(work)).json()["chats"] == ["c1"]

            listed = http.get("/v1/namespaces/alice/chats", headers=_auth(alice))
            assert listed.status_code == 200 and listed.json()["chats"] == []
            read = http.get("/v1/namespaces/alice/chats/work:c1", headers=_auth(alice)).json()
            assert read["history"] == [] and read["total"] == 0
            http.post(
                "/v1/namespaces/alice/chats/work:c1/messages",
                headers=_auth(alice),
                json={"messages": [{"content": "planted by alice"}]},
            ).raise_for_status()
            http.post("/v1/namespaces/alice/chats/work:c1/summarize", headers=_auth(alice), json={}).raise_for_status()
            after = http.get("/v1/namespaces/alice:work/chats/c1", headers=_auth(work)).json()
            assert [m["content"] for m in after["history"]] == [SECRET] and after["summary"] == ""
            assert http.get("/v1/namespaces/alice/chats", headers=_auth(alice)).json()["chats"] == ["work:c1"]

            http.cookies.set("ltm_key", alice)
            page = http.get("/ui/ns/alice/chats/work:c1")
            assert page.status_code == 200 and SECRET not in page.text and "planted by alice" in page.text
            assert http.get("/ui/ns/alice/chats").text.count("<li>") == 1  # its own work:c1 only
    finally:
        service.close()


def _seed_old_keys(settings: Settings) -> None:
    """Chats as the service stored them before: ``chat:<namespace>:<chat_id>``, one with a TTL."""

    async def seed() -> None:
        kv = open_kv(settings)
        try:
            memory = BrainMemory(settings=settings, kv=kv)
            memory.add_talk(Message(SECRET))
            await memory.dumps("chat:alice:work:c1", timeout_sec=3600)
            plain = BrainMemory(settings=settings, kv=kv)
            plain.add_talk(Message("alice's own notes"))
            await plain.dumps("chat:alice:notes")
        finally:
            kv.close()

    asyncio.run(seed())


def test_chats_under_the_old_keys_move_to_their_exact_namespace(backend_settings: Settings) -> None:
    _seed_old_keys(backend_settings)
    service = ServiceThread(backend_settings).start()
    try:
        alice, _ = service.state.keys.create(["alice"])
        work, _ = service.state.keys.create(["alice:work"])
        with httpx.Client(base_url=service.url, timeout=30) as http:
            assert http.get("/v1/namespaces/alice/chats", headers=_auth(alice)).json()["chats"] == ["notes"]
            notes = http.get("/v1/namespaces/alice/chats/notes", headers=_auth(alice)).json()
            assert [m["content"] for m in notes["history"]] == ["alice's own notes"]
            assert http.get("/v1/namespaces/alice/chats/work:c1", headers=_auth(alice)).json()["history"] == []
            assert http.get("/v1/namespaces/alice:work/chats", headers=_auth(work)).json()["chats"] == ["c1"]
            moved = http.get("/v1/namespaces/alice:work/chats/c1", headers=_auth(work)).json()
            assert [m["content"] for m in moved["history"]] == [SECRET]
        kv = service.state.kv_store()
        assert kv.keys("brain:{chat:*") == []
        ttl = kv.ttl("brain:{nschat:alice%3Awork:c1}")
        assert ttl is not None and 3000 < ttl <= 3600
    finally:
        service.close()


def test_mcp_summarize_chat_stays_in_the_keys_namespace(settings: Settings) -> None:
    keys = KeyStore(settings)
    alice, _ = keys.create(["alice"])
    keys.close()
    service = ServiceThread(settings, auth=False).start()
    try:
        httpx.post(
            service.url + "/v1/namespaces/alice:work/chats/c1/messages",
            json={"messages": [{"content": SECRET}]},
            timeout=30,
        ).raise_for_status()
    finally:
        service.close()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LTM_API_KEY": alice,
        "LTM_STORAGE_DIR": str(settings.storage_dir),
        "LTM_EMBEDDING": "hash",
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "ltm.cli", "mcp"], env=env, cwd=str(ROOT))

    async def run() -> dict[str, Any]:
        async with Client(params) as client:
            result = await client.call_tool("summarize_chat", {"namespace": "alice", "chat_id": "work:c1"})
            assert not result.is_error, result.content
            data: dict[str, Any] = json.loads(mcp_text(result))
            return data

    assert asyncio.run(run())["summary"] == ""
    service = ServiceThread(settings, auth=False).start()
    try:
        kept = httpx.get(service.url + "/v1/namespaces/alice:work/chats/c1", timeout=30).json()
        assert [m["content"] for m in kept["history"]] == [SECRET] and kept["summary"] == ""
    finally:
        service.close()
