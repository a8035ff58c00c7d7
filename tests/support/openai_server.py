"""A local OpenAI-compatible HTTP server for the tests: ``/v1/chat/completions`` and ``/v1/embeddings``.

Deterministic stand-in for a model, so the real ``openai`` client is exercised end to end without a network:

- a *summarize* system prompt -> the distinct sentences of the input, clipped to the "N words" asked for;
- a *title* prompt -> up to N content words of the input, in order (a title of "Lily is a girl." has "Lily");
- a *related* prompt -> "YES"/"NO" by content-word overlap of the two paragraphs;
- a *rewrite* (augment) prompt -> the sentence, then the context in parentheses (all its words kept);
- anything else -> "echo: " and the first words of the prompt;
- embeddings -> unit-length bag-of-words hash vectors (``dimensions`` from the request, default 32).

Faults on demand: ``fail(n, status)`` answers the next n requests with an HTTP error, ``stall(n, seconds)``
sleeps before answering, ``malformed(n)`` returns broken JSON (or ``kind="shape"``: JSON without choices),
``script(*answers)`` queues literal chat answers. ``chat_calls``/``embedding_calls`` count requests received.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"[^\n.!?]+[.!?]*")
_STOP_TEXT = "a an and are as at be but by for from i if in into is it of on or so that the this to was were with you"
_STOP = frozenset(_STOP_TEXT.split())
_N_WORDS = re.compile(r"(\d+)\s+words")


def _content(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if w.lower() not in _STOP]


def _summary(text: str, max_words: int) -> str:
    sentences = list(dict.fromkeys(s.strip() for s in _SENTENCE.findall(text) if s.strip()))
    words = " ".join(sentences).split()
    return " ".join(words[:max_words])


def _title(text: str, max_words: int) -> str:
    words = list(dict.fromkeys(_content(text)))
    return " ".join(words[:max_words]) or "New"


def _section(text: str, name: str) -> str:
    match = re.search(rf"## {name}\n(.*?)(?:\n---\n|\Z)", text, re.DOTALL)
    return match.group(1).strip() if match else ""


def answer(system: str, prompt: str) -> str:
    """The deterministic answer to one chat request."""
    low = system.lower()
    limit_match = _N_WORDS.search(system)
    limit = int(limit_match.group(1)) if limit_match else 50
    if "title" in low:
        return _title(prompt, limit)
    if "summar" in low:
        return _summary(prompt, limit)
    if "related" in low:
        a = {w.lower() for w in _content(_section(prompt, "Paragraph 1"))}
        b = {w.lower() for w in _content(_section(prompt, "Paragraph 2"))}
        return "YES" if a and b and len(a & b) / min(len(a), len(b)) >= 0.5 else "NO"
    if "augment" in low or "rewrite" in low:
        sentence, context = _section(prompt, "Sentence"), _section(prompt, "Context")
        return f"{sentence} ({context})" if context else sentence
    return "echo: " + " ".join(prompt.split()[:20])


def embed(text: str, dim: int) -> list[float]:
    vec = [0.0] * dim
    for word in _WORD.findall(text.lower()) or [""]:
        digest = hashlib.sha256(word.encode()).digest()
        vec[int.from_bytes(digest[:4], "little") % dim] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class OpenAIServer:
    """``start()`` on a free loopback port; ``base_url`` is ``http://127.0.0.1:<port>/v1``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: deque[tuple[str, Any]] = deque()
        self._scripted: deque[str | dict[str, Any]] = deque()
        self.chat_calls = 0
        self.embedding_calls = 0
        self.requests: list[dict[str, Any]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> OpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server._serve(self, self.path, body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self._scripted.clear()
            self.chat_calls = self.embedding_calls = 0
            self.requests.clear()

    # -- fault and answer controls --------------------------------------------------------------------

    def fail(self, n: int = 1, status: int = 500) -> None:
        with self._lock:
            self._faults.extend([("fail", status)] * n)

    def stall(self, n: int = 1, seconds: float = 5.0) -> None:
        with self._lock:
            self._faults.extend([("stall", seconds)] * n)

    def malformed(self, n: int = 1, kind: str = "json") -> None:
        with self._lock:
            self._faults.extend([("malformed", kind)] * n)

    def script(self, *answers: str) -> None:
        with self._lock:
            self._scripted.extend(answers)

    def script_tool_call(self, name: str, arguments: dict[str, Any]) -> None:
        """The next chat answer (after those scripted before it) calls the tool ``name`` with ``arguments``."""
        with self._lock:
            self._scripted.append({"name": name, "arguments": arguments})

    # -- serving ------------------------------------------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        with self._lock:  # counted on arrival, so a stalled request counts in the test that sent it
            self.requests.append({"path": path, "body": body})
            fault = self._faults.popleft() if self._faults else None
            scripted = None
            if path.endswith("/chat/completions"):
                self.chat_calls += 1
                # taken on arrival: a stalled request must not take an answer scripted by a later test
                if self._scripted and (fault is None or fault[0] == "stall"):
                    scripted = self._scripted.popleft()
            elif path.endswith("/embeddings"):
                self.embedding_calls += 1
        if fault is not None and fault[0] == "stall":
            time.sleep(fault[1])
        if fault is not None and fault[0] == "fail":
            # Retry-After as OpenAI sends it: the client's retries wait 10 ms instead of their 0.5 s backoff
            body_raw = json.dumps({"error": {"message": "injected failure"}}).encode()
            return self._send(handler, fault[1], body_raw, {"retry-after-ms": "10"})
        if fault is not None and fault[0] == "malformed":
            raw = b'{"choices": [ {"message": ' if fault[1] == "json" else b'{"unexpected": true}'
            return self._send(handler, 200, raw)
        if path.endswith("/chat/completions"):
            messages = body.get("messages", [])
            system = "\n".join(m["content"] for m in messages if m.get("role") == "system")
            prompt = "\n".join(m["content"] for m in messages if m.get("role") == "user")
            if isinstance(scripted, dict):  # a tool call, as OpenAI's chat completions return one
                text = ""
                call = {
                    "id": f"call_{self.chat_calls}",
                    "type": "function",
                    "function": {"name": scripted["name"], "arguments": json.dumps(scripted["arguments"])},
                }
                message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
                finish = "tool_calls"
            else:
                text = scripted if scripted is not None else answer(system, prompt)
                message, finish = {"role": "assistant", "content": text}, "stop"
            payload: dict[str, Any] = {
                "id": f"chatcmpl-{self.chat_calls}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "test"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": len(prompt.split()),
                    "completion_tokens": len(text.split()),
                    "total_tokens": len(prompt.split()) + len(text.split()),
                },
            }
            return self._send(handler, 200, json.dumps(payload).encode())
        if path.endswith("/embeddings"):
            inputs = body.get("input", [])
            inputs = [inputs] if isinstance(inputs, str) else inputs
            dim = int(body.get("dimensions") or 32)
            data = [{"object": "embedding", "index": i, "embedding": embed(t, dim)} for i, t in enumerate(inputs)]
            payload = {
                "object": "list",
                "data": data,
                "model": body.get("model", "test"),
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
            return self._send(handler, 200, json.dumps(payload).encode())
        return self._send(handler, 404, b'{"error": {"message": "no such endpoint"}}')

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, raw: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            handler.send_response(status)
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(raw)))
            handler.end_headers()
            handler.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): nothing to answer
            pass
