"""Probes of a running server, kept in the suite: a seeded corpus of malformed requests over the whole HTTP
surface (no 5xx, no traceback, no ERROR line, and the server still serves afterwards), and ``kill -9`` of an
``ltm serve`` process under a small write load (every acknowledged write is there after the restart).
Loopback only, bounded in count and time."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ltm.config import Settings
from ltm.service.server import ServerLimits
from tests.support.service import ServiceThread

ROOT = Path(__file__).resolve().parents[2]
SEED = 3105
REQUESTS = 400

NAMESPACES = [
    "team-a/x",
    "alice",
    "alice:work",
    "..%2F..%2Fetc",
    "%2e%2e/secret",
    "a" * 300,
    "ns%00nul",
    "ünïcode/名前",
    "%ZZ",
    "x/chats/c1",
    "x/files/AGENTS.md",
    "*",
    "[abc]",
    "-",
]
TAILS = [
    "/forget",
    "/messages",
    "/messages/some-id",
    "/messages/%00",
    "/search",
    "/find_news",
    "/similar",
    "/recent?n=-1",
    "/recent?n=99999999999999999999",
    "/stats",
    "/embed",
    "/similarities",
    "",
    "/chats",
    "/chats/c1",
    "/chats/c1/messages",
    "/chats/c1/summarize",
    "/chats/c1/title",
    "/chats/" + "c" * 400,
    "/files",
    "/files/content/AGENTS.md",
    "/files/content/../../x",
    "/files/changes",
    "/files/changes/1/approve",
    "/files/changes/1/reject",
    "/experience/lessons",
    "/experience/policies",
    "/experience/distill",
    "/experience/policies_for?task=x&k=0",
    "/messages?limit=0",
    "/messages?cursor=%FF%FE",
    "/messages?filters=%7B",
    "/messages?filters=" + "%5B" * 3000,
]
OTHER = [
    "/",
    "/v1",
    "/v1/health",
    "/v1/namespaces",
    "/v1/users/u1/forget",
    "/v1/users/%00/forget",
    "/openapi.json",
    "/docs",
    "/ui",
    "/ui/login",
    "/ui/logout",
    "/ui/ns/a/files",
    "/ui/ns/a/search?q=x&k=0",
    "/ui/ns/a/chats/c1?offset=-1",
    "/ui/static/../app.py",
    "/mcp/",
    "/v1/namespaces/",
    "//v1//namespaces//a//messages",
]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(12 if depth < 4 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 2**63, -(2**70), 10**400 // 10**390])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e-320, 3.4e38])
    if kind in (4, 5):
        return rng.choice(["", "x", "\u202e", "\ud7ff", "a" * 5000, "<script>alert(1)</script>", "role", "metadata.a"])
    if kind == 6:
        return rng.choice(["user", "assistant", "hybrid", "dense", "keyword", "AND", "NOT"])
    if kind == 7:
        return rng.choice([[], {}, [[]], [[0.1] * 384], [[0.1, 0.2], [0.3]]])
    if kind in (8, 9):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = [
        "content",
        "messages",
        "query",
        "filters",
        "k",
        "mode",
        "role",
        "metadata",
        "created_at",
        "vectors",
        "texts",
        "text",
        "path",
        "reason",
        "tool",
        "error",
        "max_words",
        "AND",
        "OR",
        "NOT",
        "metadata.a",
        "id",
        "ids",
    ]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(5))}


def _body(rng: random.Random) -> bytes | None:
    kind = rng.randrange(10)
    if kind == 0:
        return None
    if kind == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
    if kind == 2:
        return b'{"messages": [{"content": "x", "created_at": ' + rng.choice([b"Infinity", b"NaN", b"1e309"]) + b"}]}"
    if kind == 3:
        return b"[" * rng.choice([100, 5000]) + b"]" * 10
    if kind == 4:
        good = {"messages": [{"content": "hello", "metadata": {"a": 1}}], "query": "hello", "k": 3}
        return json.dumps(good).encode()[: rng.randrange(1, 60)]  # truncated
    if kind == 5:
        return b'{"vectors": [[NaN' + b", 0.1" * 383 + b"]]}"
    return json.dumps(_value(rng)).encode()


def _corpus() -> list[tuple[str, str, bytes | None, dict[str, str]]]:
    rng = random.Random(SEED)
    out = []
    for _ in range(REQUESTS):
        if rng.random() < 0.8:
            path = "/v1/namespaces/" + rng.choice(NAMESPACES) + rng.choice(TAILS)
        else:
            path = rng.choice(OTHER)
        headers = {
            "content-type": rng.choice(
                [
                    "application/json",
                    "text/plain",
                    "application/x-www-form-urlencoded",
                    "multipart/form-data; boundary=x",
                    "application/json; charset=latin-1",
                ]
            )
        }
        if rng.random() < 0.2:
            headers["origin"] = rng.choice(["http://evil.test", "null", "http://127.0.0.1"])
        out.append((rng.choice(METHODS), path, _body(rng), headers))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("auth", [True, False], ids=["keys", "no-auth"])
def test_a_seeded_corpus_of_malformed_requests_gets_no_5xx_and_no_traceback(
    settings: Settings, caplog: pytest.LogCaptureFixture, auth: bool
) -> None:
    service = ServiceThread(settings, auth=auth, mcp=True).start()
    try:
        writer, _ = service.state.keys.create(["*"])
        reader, _ = service.state.keys.create(["team-a/*", "alice"], read_only=True)
        keys = [writer, reader, "ltm_00000000_not-a-key", ""]
        rng = random.Random(SEED + 1)
        failures: list[str] = []
        with caplog.at_level(logging.INFO), httpx.Client(base_url=service.url, timeout=30) as http:
            for method, path, body, headers in _corpus():
                key = rng.choice(keys)
                sent = {**headers, **({"authorization": f"Bearer {key}"} if key else {})}
                try:
                    got = http.request(method, path, content=body, headers=sent)
                except httpx.HTTPError as exc:
                    failures.append(f"{method} {path[:80]}: {type(exc).__name__}")
                    continue
                if got.status_code >= 500:
                    failures.append(f"{method} {path[:80]}: {got.status_code} {got.text[:200]}")
            assert http.get("/v1/health").status_code == 200
            time.sleep(0.3)
        assert not failures, failures[:10]
        bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
        assert not bad, [(r.name, r.getMessage()) for r in bad[:5]]
    finally:
        service.close()


RAW = [
    b"GARBAGE\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n",
    b"POST /v1/namespaces/a/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(32),  # a TLS ClientHello to the plain port
]


def test_raw_protocol_garbage_is_refused_and_the_server_keeps_serving(settings: Settings) -> None:
    service = ServiceThread(settings, auth=False, server_limits=ServerLimits(request_timeout=2.0)).start()
    try:
        for data in RAW:
            with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
                sock.sendall(data)
                sock.settimeout(10)
                answer = b""
                try:
                    while chunk := sock.recv(65536):
                        answer += chunk
                except (TimeoutError, ConnectionResetError):
                    pass
                status = answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/") else b""
                assert not status.startswith(b"5"), (data[:60], answer[:200])
        assert httpx.get(service.url + "/v1/health").status_code == 200
    finally:
        service.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start(storage: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    env.update(PYTHONPATH=str(ROOT), LTM_STORAGE_DIR=str(storage), LTM_EMBEDDING="hash")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltm.cli", "serve", "--no-auth", "--port", str(port), "--log-level", "warning"],
        cwd=str(ROOT),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("ltm serve did not answer /v1/health within 60 s")


@pytest.mark.slow
def test_kill_9_under_writes_loses_no_acknowledged_write(tmp_path: Path) -> None:
    storage, port = tmp_path / "storage", _free_port()
    acknowledged: list[str] = []
    lock = threading.Lock()
    for kill in range(2):
        proc = _start(storage, port)
        stop = threading.Event()

        def write(worker: int, kill: int = kill, stop: threading.Event = stop) -> None:
            n = 0
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
                while not stop.is_set():
                    n += 1
                    msg_id = f"k{kill}-w{worker}-{n}"
                    try:
                        got = http.post(
                            "/v1/namespaces/load/messages",
                            json={"messages": [{"id": msg_id, "content": f"write {msg_id}"}]},
                        )
                    except httpx.HTTPError:
                        return  # the server is gone: this write was never acknowledged
                    if got.status_code == 200:
                        with lock:
                            acknowledged.append(msg_id)

        writers = [threading.Thread(target=write, args=(w,)) for w in range(3)]
        for t in writers:
            t.start()
        time.sleep(2.0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        stop.set()
        for t in writers:
            t.join(timeout=30)
    proc = _start(storage, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            stored: set[str] = set()
            cursor: str | None = None
            while True:
                page = http.get(
                    "/v1/namespaces/load/messages", params={"limit": 1000, **({"cursor": cursor} if cursor else {})}
                ).json()
                stored |= {m["id"] for m in page["messages"]}
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert http.post("/v1/namespaces/load/search", json={"query": "write", "k": 3}).json()["hits"]
        assert len(acknowledged) > 20  # the load really ran
        missing = sorted(set(acknowledged) - stored)
        assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged writes lost: {missing[:5]}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_ltm_mcp_over_http_has_the_same_guards(tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    env.update(PYTHONPATH=str(ROOT), LTM_STORAGE_DIR=str(tmp_path / "storage"), LTM_EMBEDDING="hash")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltm.cli", "mcp", "--transport", "http", "--no-auth", "--port", str(port)],
        cwd=str(ROOT),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp/"
        deadline = time.monotonic() + 60
        while True:
            try:
                got = httpx.post(url, json={})
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "ltm mcp did not answer within 60 s"
                time.sleep(0.1)
        assert got.status_code < 500 and "frame-ancestors 'none'" in got.headers["content-security-policy"]
        assert httpx.post(url, json={}, headers={"Host": "rebind.attacker.test"}).status_code == 421
        assert httpx.get(url).status_code == 405
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
