"""The ``ltm`` command on namespaces it did not write: reading loads no model whatever the namespace's model, commands
that embed say how to name that model; plus what reading commands print when nothing matches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HASHED = {"LTM_EMBEDDING": "hash", "LTM_EMBEDDING_DIM": "16"}


def run(tmp: Path, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "LTM_STORAGE_DIR": str(tmp / "data"), **env}
    return subprocess.run(
        [sys.executable, "-m", "ltm.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
        check=False,
    )


def _lines(out: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, list[str]]:
    """A namespace role/Alice(Product Manager) written with the 16-dimensional hash model, one message edited."""
    lines = [
        json.dumps({"content": text, "created_at": 1_700_000_000 + i * 60})
        for i, text in enumerate(["leave MySQL for PostgreSQL", "the 2048 game needs an undo button"])
    ]
    added = run(tmp_path, "add", "--kind", "role", "-n", "Alice(Product Manager)", stdin="\n".join(lines), **HASHED)
    assert added.returncode == 0, added.stderr
    ids = [
        str(m["id"])
        for m in _lines(run(tmp_path, "recent", "--kind", "role", "-n", "Alice(Product Manager)", "--json", **HASHED))
    ]
    edited = run(
        tmp_path,
        "update",
        "--kind",
        "role",
        "-n",
        "Alice(Product Manager)",
        ids[0],
        "leave MySQL 5.7 for PostgreSQL 16",
        **HASHED,
    )
    assert edited.returncode == 0, edited.stderr
    return tmp_path, ids


@pytest.mark.parametrize("embedding", [{}, {"LTM_EMBEDDING": "openai"}])
def test_reading_commands_open_a_namespace_of_another_model_and_load_none(
    written: tuple[Path, list[str]], embedding: dict[str, str]
) -> None:
    """Default settings (the local model) or an OpenAI embedding with no endpoint or key (any model call would
    fail): every reading command still answers."""
    tmp, ids = written
    ns = ("--kind", "role", "-n", "Alice(Product Manager)")
    recent = run(tmp, "recent", *ns, "--json", **embedding)
    assert recent.returncode == 0, recent.stderr
    assert [m["id"] for m in _lines(recent)] == ids
    for args in (
        ("get", *ns, ids[1], "--json"),
        ("list", *ns, "--json"),
        ("history", *ns, ids[0], "--json"),
        ("search", *ns, "undo", "--mode", "keyword", "--json"),
    ):
        out = run(tmp, *args, **embedding)
        assert out.returncode == 0 and out.stdout.strip(), (args, out.stderr)
    exported = run(tmp, "export", *ns, "--with-embeddings", **embedding)
    assert exported.returncode == 0, exported.stderr
    rows = _lines(exported)
    assert len(rows) == 2 and {r["embedding_model"] for r in rows} == {"hash-16"}
    stats = run(tmp, "stats", "--json", **embedding)
    assert stats.returncode == 0, stats.stderr
    assert [(s["namespace"], s["messages"], s["embedding_model"]) for s in _lines(stats)] == [
        ("Alice(Product Manager)", 2, "hash-16")
    ]


def test_commands_that_embed_name_the_namespace_model_option(written: tuple[Path, list[str]]) -> None:
    tmp, _ = written
    ns = ("--kind", "role", "-n", "Alice(Product Manager)")
    refused = run(tmp, "search", *ns, "undo button")
    assert refused.returncode == 1 and "--embedding-model hash-16" in refused.stderr, refused.stderr
    found = run(tmp, "search", *ns, "undo button", "--embedding-model", "hash-16", "--json")
    assert found.returncode == 0, found.stderr
    assert "undo" in str(_lines(found)[0]["content"])
    added = run(tmp, "add", *ns, "a third note", "--embedding-model", "hash-16")
    assert added.returncode == 0, added.stderr
    assert "--embedding-model" in run(tmp, "search", "--help").stdout


def test_recent_orders_an_edited_message_by_its_creation_time(written: tuple[Path, list[str]]) -> None:
    tmp, ids = written  # the first message was edited after the second was added
    recent = run(tmp, "recent", "--kind", "role", "-n", "Alice(Product Manager)", "--json", **HASHED)
    rows = _lines(recent)
    assert [m["id"] for m in rows] == ids and rows[0]["content"] == "leave MySQL 5.7 for PostgreSQL 16"


def test_a_search_without_hits_says_so(written: tuple[Path, list[str]]) -> None:
    tmp, _ = written
    nothing = run(
        tmp, "search", "--kind", "role", "-n", "Alice(Product Manager)", "zebra", "--mode", "keyword", **HASHED
    )
    assert nothing.returncode == 3 and nothing.stdout == ""
    assert "no messages match" in nothing.stderr


def test_a_bad_flag_shows_the_command_usage(tmp_path: Path) -> None:
    bad = run(tmp_path, "recent", "-n", "x", "--bogus", **HASHED)
    assert bad.returncode == 2 and "usage: ltm recent" in bad.stderr and "--bogus" in bad.stderr
