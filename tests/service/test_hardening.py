"""The service under attack, from a real client against a real server on a loopback port: Host names a
rebinding page could send, reads that must create nothing, client mistakes that must be a 400 with one log
line, the docs pages, the inspector's cookie on the API, unknown DELETE paths, long names, metadata
keys holding NUL, the security headers, half-sent requests, and what the first write of a process imports."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ltm.config import Settings
from ltm.service.server import ServerLimits
from ltm.store import namespace_exists
from tests.support.service import ServiceThread

ROOT = Path(__file__).resolve().parents[2]
HEADERS = ("content-security-policy", "x-content-type-options", "x-frame-options", "referrer-policy")


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def open_server(settings: Settings) -> Iterator[ServiceThread]:
    service = ServiceThread(settings, auth=False).start()
    yield service
    service.close()


def test_no_auth_answers_only_loopback_host_names(open_server: ServiceThread) -> None:
    url, port = open_server.url, open_server.port
    for host in ("rebind.attacker.test", f"rebind.attacker.test:{port}", "192.168.1.20", "localhost.evil.test"):
        got = httpx.get(url + "/v1/health", headers={"Host": host})
        assert got.status_code == 421 and got.json()["error"] == "Forbidden", host
        wrote = httpx.post(
            url + "/v1/namespaces/victim/messages", headers={"Host": host}, json={"messages": [{"content": "planted"}]}
        )
        assert wrote.status_code == 421
        assert httpx.get(url + "/ui/ns/victim/files", headers={"Host": host}).status_code == 421
    assert not namespace_exists(open_server.settings, "role", "victim")
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}", "app.localhost"):
        assert httpx.get(url + "/v1/health", headers={"Host": host}).status_code == 200, host


def test_a_configured_host_list_is_answered_and_nothing_else(settings: Settings) -> None:
    service = ServiceThread(settings, allowed_hosts=["memory.example.org", "*.corp.example"]).start()
    try:
        for host, status in (
            ("memory.example.org", 200),
            ("MEMORY.example.org:443", 200),
            ("a.corp.example", 200),
            ("127.0.0.1", 200),
            ("example.org", 421),
            ("memory.example.org.evil.test", 421),
        ):
            assert httpx.get(service.url + "/v1/health", headers={"Host": host}).status_code == status, host
    finally:
        service.close()
    anything = ServiceThread(settings).start()  # keys on and no list: every name is answered, as before
    try:
        assert httpx.get(anything.url + "/v1/health", headers={"Host": "memory.example.org"}).status_code == 200
    finally:
        anything.close()


def test_reads_with_a_read_only_key_create_no_namespace(server: ServiceThread) -> None:
    reader, _ = server.state.keys.create(["*"], read_only=True)
    base = "/v1/namespaces/never-written"
    with httpx.Client(base_url=server.url, headers=_auth(reader), timeout=30) as http:
        news = http.post(
            base + "/find_news",
            json={
                "messages": [
                    {"content": "the office moves in May"},
                    {"content": "the office moves in May"},
                    {"content": "lunch"},
                ]
            },
        )
        assert news.status_code == 200
        assert [m["content"] for m in news.json()["messages"]] == ["the office moves in May", "lunch"]
        vectors = http.post(base + "/embed", json={"texts": ["a", "b"]})
        assert vectors.status_code == 200 and len(vectors.json()["vectors"]) == 2
        best = http.post(base + "/similarities", json={"vectors": vectors.json()["vectors"]})
        assert best.status_code == 200 and best.json() == {"best": [-1.0, -1.0]}
        for path in (
            "/experience/lessons",
            "/experience/policies",
            "/experience/policies_for?task=deploy",
            "/messages",
            "/recent",
            "/stats",
            "/chats",
        ):
            assert http.get(base + path).status_code == 200, path
        assert http.post(base + "/search", json={"query": "x"}).json() == {"hits": []}
        assert http.post(base + "/similar", json={"text": "x"}).json() == {"messages": []}
        assert http.post(base + "/messages", json={"messages": [{"content": "x"}]}).status_code == 403
    for kind in ("role", "experience"):
        assert not namespace_exists(server.settings, kind, "never-written"), kind
    assert "never-written" not in json.dumps(httpx.get(server.url + "/v1/namespaces", headers=_auth(reader)).json())


def _deep(op: str, depth: int) -> dict[str, object]:
    spec: dict[str, object] = {"role": "user"}
    for _ in range(depth):
        spec = {op: spec} if op == "NOT" else {op: [spec, {"role": "x"}]}
    return spec


MISTAKES: list[tuple[str, str, str | bytes]] = [
    ("POST", "/messages", b'{"messages": [{"content": "x", "created_at": Infinity}]}'),
    ("POST", "/messages", b'{"messages": [{"content": "x", "created_at": 1e309}]}'),
    ("POST", "/messages", b'{"messages": [{"content": "x", "created_at": NaN}]}'),
    ("POST", "/messages", b'{"messages": [{"content": "x", "metadata": {"a\\u0000b": 1}}]}'),
    ("POST", "/search", json.dumps({"query": "x", "filters": _deep("NOT", 18)})),
    ("POST", "/search", json.dumps({"query": "x", "filters": _deep("AND", 87)})),
    ("POST", "/search", json.dumps({"query": "x", "filters": _deep("OR", 87)})),
    ("POST", "/search", json.dumps({"query": "x", "filters": {"AND": [{"role": str(i)} for i in range(2000)]}})),
    ("GET", "/messages?filters=" + json.dumps(_deep("NOT", 40)), ""),
    ("GET", "/messages?filters=" + "[" * 100_00, ""),
    ("POST", "/search", b'{"query": "x", "filters": ' + b'{"NOT": ' * 5000 + b'{"role": "x"}' + b"}" * 5001),
    ("POST", "/similarities", json.dumps({"vectors": [[0.1, 0.2], [0.3]]})),
    ("POST", "/similarities", json.dumps({"vectors": [[0.1, 0.2, 0.3]]})),
    ("POST", "/similarities", json.dumps({"vectors": [[]]})),
    ("POST", "/similarities", b'{"vectors": [[NaN' + b", 0.1" * 383 + b"]]}"),  # the hash model's 384 numbers
    ("POST", "/similarities", json.dumps({"vectors": [[1e39] * 384]})),
    ("POST", "/similarities", json.dumps({"vectors": [[0.1] * 384], "texts": ["a", "b"]})),
]


def _wait_for_access_line(caplog: pytest.LogCaptureFixture) -> None:
    """The server thread logs a request's line after its response went out: wait for it."""
    deadline = time.monotonic() + 10
    while not any(r.name == "ltm.service" for r in caplog.records) and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.mark.parametrize(("method", "path", "body"), MISTAKES, ids=[f"{m}{p[:40]}" for m, p, _ in MISTAKES])
def test_client_mistakes_are_a_400_with_one_log_line(
    server: ServiceThread, caplog: pytest.LogCaptureFixture, method: str, path: str, body: str | bytes
) -> None:
    key, _ = server.state.keys.create(["*"])
    base = "/v1/namespaces/probe"
    with caplog.at_level(logging.INFO):
        httpx.post(
            server.url + base + "/messages", json={"messages": [{"content": "seed"}]}, headers=_auth(key)
        ).raise_for_status()
        _wait_for_access_line(caplog)
        caplog.clear()
        got = httpx.request(
            method,
            server.url + base + path,
            content=body or None,
            timeout=60,
            headers={**_auth(key), "content-type": "application/json"},
        )
        _wait_for_access_line(caplog)
        time.sleep(0.2)  # room for a traceback or a second line to show up
    assert got.status_code == 400, got.text
    assert got.json()["error"] == "InvalidInput" and got.json()["message"]
    lines = [r for r in caplog.records if r.name.startswith(("ltm", "uvicorn"))]
    assert len(lines) == 1 and " 400 " in lines[0].getMessage(), [r.getMessage() for r in lines]
    assert not any(r.exc_info or r.levelno >= logging.WARNING for r in caplog.records)


def test_docs_pages_are_gone_and_the_login_cookie_opens_the_inspector_only(server: ServiceThread) -> None:
    key, _ = server.state.keys.create(["team-a/*"])
    assert httpx.get(server.url + "/docs").status_code == 404
    assert httpx.get(server.url + "/redoc").status_code == 404
    assert "/v1/health" in httpx.get(server.url + "/openapi.json").json()["paths"]
    with httpx.Client(base_url=server.url, cookies={"ltm_key": key}) as browser_like:
        assert browser_like.get("/ui/ns/team-a/x/messages").status_code == 200
        api = browser_like.get("/v1/namespaces/team-a/x/messages")
        assert api.status_code == 401 and api.json()["error"] == "AuthRequired"
        assert (
            browser_like.post("/v1/namespaces/team-a/x/messages", json={"messages": [{"content": "x"}]}).status_code
            == 401
        )


def test_unknown_delete_paths_are_not_taken_as_a_namespace(open_server: ServiceThread) -> None:
    with httpx.Client(base_url=open_server.url) as http:
        http.post("/v1/namespaces/team-a/x/messages", json={"messages": [{"content": "keep me"}]}).raise_for_status()
        for path in (
            "/v1/namespaces/team-a/x/chats/c1",
            "/v1/namespaces/team-a/x/files/AGENTS.md",
            "/v1/namespaces/team-a/x/experience/lessons",
            "/v1/namespaces/team-a/x/messages",
        ):
            got = http.delete(path)
            assert got.status_code in (404, 405) and got.json()["error"] != "LTMError", path
        assert http.get("/v1/namespaces/team-a/x/recent").json()["messages"][0]["content"] == "keep me"
        assert http.delete("/v1/namespaces/team-a/x").json() == {"cleaned": True}
        assert http.delete("/v1/namespaces/never-written").status_code == 404
    for name in ("team-a/x/chats/c1", "team-a/x/files/AGENTS.md", "never-written"):
        assert not namespace_exists(open_server.settings, "role", name)


def test_namespace_names_have_a_length_cap(open_server: ServiceThread) -> None:
    long = "n" * 300
    got = httpx.post(f"{open_server.url}/v1/namespaces/{long}/messages", json={"messages": [{"content": "x"}]})
    assert got.status_code == 400 and "256" in got.json()["message"]
    assert httpx.get(f"{open_server.url}/v1/namespaces/{long}/messages").status_code == 400
    assert (
        httpx.post(
            f"{open_server.url}/v1/namespaces/{'n' * 256}/messages", json={"messages": [{"content": "x"}]}
        ).status_code
        == 200
    )


def test_security_headers_on_every_response(settings: Settings) -> None:
    service = ServiceThread(settings, mcp=True, limits=None).start()
    try:
        key, _ = service.state.keys.create(["*"])
        big = b"x" * (9 * 1024 * 1024)
        answers = [
            httpx.get(service.url + "/v1/health"),
            httpx.get(service.url + "/v1/namespaces/a/messages"),  # 401
            httpx.get(service.url + "/v1/namespaces/a/messages", headers=_auth(key)),
            httpx.get(service.url + "/nowhere"),
            httpx.get(service.url + "/openapi.json"),
            httpx.get(service.url + "/ui/login"),
            httpx.get(service.url + "/ui/static/ui.css"),
            httpx.post(service.url + "/v1/namespaces/a/messages", content=big, headers=_auth(key)),  # 413
            httpx.post(service.url + "/mcp/", json={}),  # 401 from the MCP mount
        ]
        for got in answers:
            for name in HEADERS:
                assert name in got.headers, (got.request.url.path, got.status_code, name)
            assert "frame-ancestors 'none'" in got.headers["content-security-policy"]
            assert got.headers["x-content-type-options"] == "nosniff"
        assert answers[2].headers["cache-control"] == "no-store"
    finally:
        service.close()


def _half_open(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(data)
    return sock


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_half_sent_requests_are_closed_after_the_request_timeout(settings: Settings) -> None:
    service = ServiceThread(settings, auth=False, server_limits=ServerLimits(request_timeout=1.0)).start()
    try:
        head = f"POST /v1/namespaces/a/messages HTTP/1.1\r\nHost: 127.0.0.1:{service.port}\r\n".encode()
        socks = [_half_open(service.port, b"GET /v1/health HTTP/1.1\r\nHost: 127.0") for _ in range(30)]
        socks += [
            _half_open(
                service.port, head + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n" + b'{"messages": '
            )
            for _ in range(10)
        ]
        start = time.monotonic()
        assert all(_closed_by_server(s, 6.0) for s in socks)
        assert time.monotonic() - start < 6.0
        drip = _half_open(service.port, b"G")
        closed = False
        for byte in b"ET /v1/health HTTP/1.1\r\nX-Slow: " + b"a" * 40:
            try:
                drip.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.1)
        assert closed or _closed_by_server(drip, 1.0)  # a byte at a time does not stretch the deadline
        for s in socks + [drip]:
            s.close()
        assert httpx.get(service.url + "/v1/health").status_code == 200  # whole requests are still served
    finally:
        service.close()


def test_the_first_write_with_the_hash_embedding_does_not_import_llama_index(tmp_path: Path) -> None:
    script = (
        "import sys, httpx\n"
        "from ltm.config import Settings\n"
        "from tests.support.service import ServiceThread\n"
        f"settings = Settings(storage_dir={str(tmp_path / 'storage')!r}, embedding='hash')\n"
        "s = ServiceThread(settings, auth=False).start()\n"
        "r = httpx.post(s.url + '/v1/namespaces/a/messages', json={'messages': [{'content': 'hello'}]})\n"
        "r.raise_for_status()\n"
        "r = httpx.post(s.url + '/v1/namespaces/a/search', json={'query': 'hello'})\n"
        "r.raise_for_status()\n"
        "s.close()\n"
        "print(sorted(m for m in sys.modules if m.startswith('llama_index')))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_crash_is_one_error_line_without_the_namespace_or_a_traceback(
    server: ServiceThread, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, _ = server.state.keys.create(["*"])
    secret = "customer-8812-private"
    url = f"{server.url}/v1/namespaces/{secret}"
    httpx.post(url + "/messages", json={"messages": [{"content": "x"}]}, headers=_auth(key)).raise_for_status()

    def broken(self: object, n: int) -> list[object]:
        raise RuntimeError(f"disk trouble under {secret}")

    monkeypatch.setattr("ltm.store.MemoryStorage.recent", broken)  # a bug of the library, as the server sees it
    with caplog.at_level(logging.INFO):
        _wait_for_access_line(caplog)
        caplog.clear()
        got = httpx.get(url + "/recent", headers=_auth(key))
        deadline = time.monotonic() + 10
        while len([r for r in caplog.records if r.name == "ltm.service"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
    assert got.status_code == 500 and got.json()["error"] == "InternalError"
    assert "content-security-policy" in got.headers
    lines = [r for r in caplog.records if r.name.startswith(("ltm", "uvicorn"))]
    assert [r.levelno for r in lines] == [logging.ERROR, logging.INFO], [r.getMessage() for r in lines]
    assert "RuntimeError" in lines[0].getMessage() and " 500 " in lines[1].getMessage()
    assert not any(r.exc_info for r in caplog.records)
    assert secret not in "\n".join(r.getMessage() for r in caplog.records if r.name != "httpx")
