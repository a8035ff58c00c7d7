"""The HTTP API against a real server on a loopback port: the documented paths, errors as JSON with their
status, body limits, pagination of the lists that grow."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.service import Limits
from tests.support.service import ServiceThread


@pytest.fixture
def open_server(settings: Settings) -> Iterator[ServiceThread]:
    service = ServiceThread(settings, auth=False, limits=Limits(max_body_bytes=64_000, max_items=50)).start()
    yield service
    service.close()


@pytest.fixture
def http(open_server: ServiceThread) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        yield client


def test_openapi_lists_the_contract_paths(http: httpx.Client) -> None:
    paths = http.get("/openapi.json").json()["paths"]
    ns = "/v1/namespaces/{namespace}"
    for path in (
        f"{ns}/messages",
        f"{ns}/messages/{{message_id}}",
        f"{ns}/search",
        f"{ns}/find_news",
        f"{ns}/chats/{{chat_id}}/messages",
        f"{ns}/chats/{{chat_id}}",
        f"{ns}/chats/{{chat_id}}/summarize",
        f"{ns}/chats/{{chat_id}}/title",
        f"{ns}/files",
        f"{ns}/files/changes",
        f"{ns}/files/changes/{{change_id}}/approve",
        f"{ns}/files/changes/{{change_id}}/reject",
        f"{ns}/experience/lessons",
        f"{ns}/experience/policies",
        "/v1/health",
    ):
        assert path in paths, path
    assert set(paths[f"{ns}/messages/{{message_id}}"]) == {"get", "delete"}


def test_add_get_delete_and_one_transaction(http: httpx.Client) -> None:
    body = {
        "messages": [
            {
                "content": "the deploy failed on friday",
                "role": "ops",
                "cause_by": "Deploy",
                "sent_from": "ci",
                "send_to": ["dev"],
                "metadata": {"ticket": 7},
                "created_at": 1000.0,
            },
            {"content": "rollback done"},
        ]
    }
    answer = http.post("/v1/namespaces/team-a/ops/messages", json=body).json()
    assert answer["added"] == 2 and len(answer["ids"]) == 2
    got = http.get(f"/v1/namespaces/team-a/ops/messages/{answer['ids'][0]}").json()
    assert got["content"] == "the deploy failed on friday" and got["metadata"] == {"ticket": 7}
    assert got["role"] == "ops" and got["cause_by"] == "Deploy" and got["send_to"] == ["dev"]
    assert got["created_at"] == 1000.0
    # one bad message refuses the whole request: nothing of it is stored
    bad = {"messages": [{"content": "a fine one"}, {"content": ""}]}
    refused = http.post("/v1/namespaces/team-a/ops/messages", json=bad)
    assert refused.status_code == 400 and refused.json()["error"] == "InvalidInput"
    assert http.get("/v1/namespaces/team-a/ops/stats").json()["messages"] == 2
    assert http.delete(f"/v1/namespaces/team-a/ops/messages/{answer['ids'][1]}").json() == {"deleted": True}
    assert http.delete(f"/v1/namespaces/team-a/ops/messages/{answer['ids'][1]}").json() == {"deleted": False}
    missing = http.get(f"/v1/namespaces/team-a/ops/messages/{answer['ids'][1]}")
    assert missing.status_code == 404 and missing.json()["error"] == "NotFound"


def test_search_modes_and_per_signal_scores(http: httpx.Client) -> None:
    texts = ["violin lessons on tuesday", "saturn has rings", "the violin is out of tune", "pay the rent"]
    http.post("/v1/namespaces/s/messages", json={"messages": [{"content": t} for t in texts]})
    for mode in ("hybrid", "dense", "keyword"):
        hits = http.post("/v1/namespaces/s/search", json={"query": "violin", "k": 2, "mode": mode}).json()["hits"]
        assert 0 < len(hits) <= 2 and "violin" in hits[0]["message"]["content"]
        assert all(("similarity" in h) == (mode != "keyword") for h in hits)  # each hit's cosine, unasked
    explained = http.post("/v1/namespaces/s/search", json={"query": "violin tune", "k": 3, "explain": True}).json()
    top = explained["hits"][0]
    assert top["message"]["content"] == "the violin is out of tune"
    assert set(top["scores"]) == {"dense", "keyword"} and top["signals"] == ["dense", "keyword"]
    assert -1.0 <= top["scores"]["dense"] <= 1.0 and top["scores"]["keyword"] >= 0
    assert top["similarity"] == pytest.approx(top["scores"]["dense"], abs=1e-5)
    bad = http.post("/v1/namespaces/s/search", json={"query": "x", "mode": "fuzzy"})
    assert bad.status_code == 400 and bad.json()["error"] == "InvalidInput"
    filtered = http.post("/v1/namespaces/s/search", json={"query": "violin", "filters": {"colour": "red"}})
    assert filtered.status_code == 400


def test_find_news_drops_seen_and_in_batch_duplicates(http: httpx.Client) -> None:
    http.post("/v1/namespaces/n/messages", json={"messages": [{"content": "the build is green"}]})
    observed = [{"content": "the build is green"}, {"content": "a brand new fact"}, {"content": "a brand new fact"}]
    news = http.post("/v1/namespaces/n/find_news", json={"messages": observed}).json()["messages"]
    assert [m["content"] for m in news] == ["a brand new fact"]
    assert http.get("/v1/namespaces/n/stats").json()["messages"] == 1  # find_news stores nothing


def test_body_and_item_limits_are_413(http: httpx.Client) -> None:
    big = {"messages": [{"content": "x" * 70_000}]}
    too_big = http.post("/v1/namespaces/l/messages", json=big)
    assert too_big.status_code == 413 and too_big.json()["error"] == "PayloadTooLarge"
    many = http.post("/v1/namespaces/l/messages", json={"messages": [{"content": f"m{i}"} for i in range(51)]})
    assert many.status_code == 413 and "batches" in many.json()["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is enforced while reading
        yield b'{"messages": [{"content": "'
        for _ in range(20):
            yield b"y" * 4000
        yield b'"}]}'

    streamed = http.post("/v1/namespaces/l/messages", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    assert http.get("/v1/namespaces/l/stats").json()["messages"] == 0


def test_store_mismatch_is_409(open_server: ServiceThread, http: httpx.Client) -> None:
    other = MemoryStorage("mismatch", settings=open_server.settings.with_(embedding_dim=64))
    other.add(Message("made with a 64-dimensional model"))
    other.close()
    answer = http.post("/v1/namespaces/mismatch/search", json={"query": "model"})
    assert answer.status_code == 409 and answer.json()["error"] == "StoreMismatch"


def test_backend_down_is_503_without_the_url(settings: Settings) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"redis://user:s3cret@127.0.0.1:{port}/0"
    service = ServiceThread(settings.with_(redis_url=url), auth=False).start()
    try:
        answer = httpx.get(service.url + "/v1/namespaces/a/chats/c1", timeout=60)
        assert answer.status_code == 503 and answer.json()["error"] == "BackendUnavailable"
        assert "s3cret" not in answer.text and str(port) not in answer.text
    finally:
        service.close()


def test_reads_of_a_namespace_never_written_answer_empty_and_create_nothing(
    open_server: ServiceThread, http: httpx.Client
) -> None:
    ns = "/v1/namespaces/typo-of-a-role"
    assert http.get(f"{ns}/messages").json() == {"messages": [], "next_cursor": None}
    assert http.get(f"{ns}/recent").json() == {"messages": []}
    assert http.post(f"{ns}/search", json={"query": "deploy"}).json() == {"hits": []}
    assert http.post(f"{ns}/similar", json={"text": "deploy"}).json() == {"messages": []}
    stats = http.get(f"{ns}/stats").json()
    assert stats["messages"] == stats["vectors"] == 0 and stats["index"] == "none" and 0 < stats["threshold"] <= 1
    missing = http.get(f"{ns}/messages/abc")
    assert missing.status_code == 404 and missing.json()["error"] == "NotFound"
    assert "typo-of-a-role" in missing.json()["message"]
    # a bad request is refused as it would be on a namespace that exists
    bad = http.post(f"{ns}/search", json={"query": "deploy", "filters": {"role": {"$near": 1}}})
    assert bad.status_code == 400 and bad.json()["error"] == "InvalidInput"
    bad = http.get(f"{ns}/messages", params={"filters": '{"role": {"$near": 1}}'})
    assert bad.status_code == 400 and bad.json()["error"] == "InvalidInput"
    assert not (open_server.settings.storage_dir / "role").exists() or not any(
        (open_server.settings.storage_dir / "role").iterdir()
    )
    # the first write creates it, and the reads see it
    http.post(f"{ns}/messages", json={"messages": [{"content": "the deploy failed"}]})
    assert http.get(f"{ns}/stats").json()["messages"] == 1
    assert [m["content"] for m in http.get(f"{ns}/recent").json()["messages"]] == ["the deploy failed"]


def test_namespace_names_map_safely(open_server: ServiceThread, http: httpx.Client) -> None:
    http.post("/v1/namespaces/..%2F..%2Fetc/messages", json={"messages": [{"content": "hello"}]})
    http.post("/v1/namespaces/a/../../b/messages", json={"messages": [{"content": "hello"}]})
    root = (open_server.settings.storage_dir / "role").resolve()
    made = [p for p in open_server.settings.storage_dir.rglob("manifest.json")]
    assert made and all(p.parent.resolve().parent == root for p in made)


def test_list_chats_files_experience_paginate(http: httpx.Client) -> None:
    ids = http.post(
        "/v1/namespaces/p/messages", json={"messages": [{"content": f"note {i}"} for i in range(25)]}
    ).json()["ids"]
    seen, cursor = [], None
    while True:
        page = http.get(
            "/v1/namespaces/p/messages", params={"limit": 10, **({"cursor": cursor} if cursor else {})}
        ).json()
        seen += [m["id"] for m in page["messages"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids
    assert [m["content"] for m in http.get("/v1/namespaces/p/recent", params={"n": 2}).json()["messages"]] == [
        "note 23",
        "note 24",
    ]


def test_chat_history_summary_and_title(http: httpx.Client) -> None:
    turns = [
        {"content": "I am planning a trip to Lisbon in May", "role": "user"},
        {"content": "Lisbon in May is warm; book the tram tour early", "role": "assistant"},
        {"content": "Also find a vegetarian restaurant near Alfama", "role": "user"},
    ]
    assert http.post("/v1/namespaces/c/chats/trip/messages", json={"messages": turns}).json() == {"history": 3}
    page = http.get("/v1/namespaces/c/chats/trip", params={"limit": 2}).json()
    assert page["total"] == 3 and len(page["history"]) == 2 and page["next_offset"] == 2
    assert http.get("/v1/namespaces/c/chats").json() == {"chats": ["trip"], "next_offset": None}
    summary = http.post("/v1/namespaces/c/chats/trip/summarize", json={"max_words": 30}).json()
    assert "Lisbon" in summary["summary"] and summary["summary_is_extractive"] is True
    after = http.get("/v1/namespaces/c/chats/trip").json()
    assert after["summary"] == summary["summary"] and after["total"] == 0  # folded into the summary
    title = http.post("/v1/namespaces/c/chats/trip/title", json={"max_words": 5}).json()["title"]
    assert 0 < len(title.split()) <= 5


def test_memory_files_propose_approve_reject(http: httpx.Client) -> None:
    proposal = {"path": "notes/deploys.md", "text": "# Deploys\n\nFriday.\n", "reason": "learned"}
    first = http.post("/v1/namespaces/f/files/changes", json=proposal).json()
    assert first["status"] == "pending" and "+Friday." in first["diff"]
    assert http.get("/v1/namespaces/f/files").json()["files"] == []  # pending changes are not visible yet
    approved = http.post(f"/v1/namespaces/f/files/changes/{first['id']}/approve").json()
    assert approved["status"] == "applied"
    assert http.get("/v1/namespaces/f/files/content/notes/deploys.md").json()["text"] == "# Deploys\n\nFriday.\n"
    second = http.post(
        "/v1/namespaces/f/files/changes", json={"path": "notes/deploys.md", "text": "# Deploys\n"}
    ).json()
    third = http.post("/v1/namespaces/f/files/changes", json={"path": "notes/b.md", "text": "b\n"}).json()
    first_page = http.get("/v1/namespaces/f/files/changes", params={"limit": 1}).json()
    assert [c["id"] for c in first_page["changes"]] == [second["id"]] and first_page["next_offset"] == 1
    rest = http.get("/v1/namespaces/f/files/changes", params={"offset": 1}).json()
    assert [c["id"] for c in rest["changes"]] == [third["id"]] and rest["next_offset"] is None
    http.post(f"/v1/namespaces/f/files/changes/{third['id']}/reject")
    rejected = http.post(f"/v1/namespaces/f/files/changes/{second['id']}/reject", json={"reason": "keep it"}).json()
    assert rejected["status"] == "rejected"
    assert http.get("/v1/namespaces/f/files/changes").json() == {"changes": [], "next_offset": None}
    again = http.post(f"/v1/namespaces/f/files/changes/{second['id']}/approve")
    assert again.status_code == 404 and again.json()["error"] == "NotFound"
    invalid = http.post("/v1/namespaces/f/files/changes", json={"path": "tools.json", "text": "{not json"})
    assert invalid.status_code == 400 and invalid.json()["error"] == "ValidationFailed"


def test_experience_lessons_and_policies(http: httpx.Client) -> None:
    for i in range(3):
        lesson = {"tool": "refund_order", "error": f"order {i} is not delivered yet", "task": f"refund order {i}"}
        assert http.post("/v1/namespaces/e/experience/lessons", json=lesson).status_code == 200
    lessons = http.get("/v1/namespaces/e/experience/lessons", params={"limit": 2}).json()
    assert lessons["total"] == 3 and len(lessons["items"]) == 2 and lessons["next_offset"] == 2
    policies = http.post("/v1/namespaces/e/experience/distill").json()["policies"]
    assert policies and "refund_order" in policies[0]["text"]
    listed = http.get("/v1/namespaces/e/experience/policies").json()
    assert listed["total"] == len(policies)


def test_summarize_and_title_take_an_empty_body(http: httpx.Client) -> None:
    turns = [{"role": "user", "content": "Where do the high scores go?"}]
    turns.append({"role": "assistant", "content": "Into SQLite, one table of players and their best scores."})
    assert http.post("/v1/namespaces/c/chats/one/messages", json={"messages": turns}).status_code == 200
    title = http.post("/v1/namespaces/c/chats/one/title")
    assert title.status_code == 200, title.text
    assert title.json()["title"]
    summary = http.post("/v1/namespaces/c/chats/one/summarize")
    assert summary.status_code == 200 and "SQLite" in summary.json()["summary"], summary.text


def test_the_inspector_explains_hybrid_scores_and_pending_lessons(http: httpx.Client) -> None:
    http.post("/v1/namespaces/s/messages", json={"messages": [{"content": "the violin needs new strings"}]})
    search = http.get("/ui/ns/s/search", params={"q": "violin"})
    assert search.status_code == 200 and "can pass 1" in search.text and "not an average" in search.text
    experience = http.get("/ui/ns/s/experience")
    assert experience.status_code == 200 and "nothing failed" in experience.text and "keep_recent" in experience.text
