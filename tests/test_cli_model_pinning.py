"""`ltm add` with a mistyped ``--embedding-model`` writes nothing, so it locks nothing: the right model adds next;
a namespace that holds vectors refuses another model saying which model, how many messages and the fix. Real
subprocesses, on both store engines."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.test_cli_memories import backend, run

__all__ = ["backend"]  # the fixture: each test on both engines


def _closed_port() -> int:
    with socket.socket() as probe:  # a port nothing listens on: the mistyped model's server never answers
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_mistyped_model_does_not_lock_the_namespace(tmp_path: Path, backend: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("LTM_LLM_MAX_RETRIES", "0")
    typo = run(tmp_path, "add", "-n", "notes", "the first note", "--embedding-model", "text-embeding-3-smal")
    assert typo.returncode != 0
    added = run(tmp_path, "add", "-n", "notes", "the first note")
    assert added.returncode == 0, added.stderr
    found = run(tmp_path, "search", "-n", "notes", "the first note")
    assert found.returncode == 0 and "the first note" in found.stdout, found.stderr
    refused = run(tmp_path, "add", "-n", "notes", "a second note", "--embedding-model", "hash-16")
    assert refused.returncode == 1
    assert "1 message made by embedding model 'hash-384', not 'hash-16'" in refused.stderr, refused.stderr
    assert "--embedding-model hash-384" in refused.stderr, refused.stderr
