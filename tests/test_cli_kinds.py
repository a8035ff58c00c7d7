"""One default kind of namespace: what the library, ``ltm demo`` and ``ltm serve`` write, the ``ltm`` command reads
without --kind; namespaces the command wrote under its old default (``cli``) are still found; a "not found" names
the kinds where the name does exist."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.cli import main
from tests.support.service import ServiceThread


def _cli(settings: Settings, *args: str) -> list[str]:
    return [*args, "--storage-dir", str(settings.storage_dir), "--embedding", "hash"]


def _contents(out: str) -> list[str]:
    return [json.loads(line)["content"] for line in out.splitlines()]


def test_what_the_library_wrote_is_read_without_a_kind(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    with MemoryStorage("Bob(Architect)", settings=settings) as store:  # the library's default kind, as the demo's
        store.add(Message("we keep the high scores in SQLite"))
    assert main(_cli(settings, "recent", "-n", "Bob(Architect)", "--json")) == 0
    assert _contents(capsys.readouterr().out) == ["we keep the high scores in SQLite"]
    assert main(_cli(settings, "search", "-n", "Bob(Architect)", "high scores", "--json")) == 0
    assert _contents(capsys.readouterr().out) == ["we keep the high scores in SQLite"]
    assert main(_cli(settings, "add", "-n", "Bob(Architect)", "a second note")) == 0
    capsys.readouterr()
    with MemoryStorage("Bob(Architect)", settings=settings) as store:  # and the command writes where it reads
        assert store.count() == 2


def test_what_the_http_api_wrote_is_read_without_a_kind(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    service = ServiceThread(settings, auth=False).start()
    try:
        with httpx.Client(base_url=service.url, timeout=30) as http:
            added = http.post("/v1/namespaces/team-a/alice/messages", json={"messages": [{"content": "ship Friday"}]})
            assert added.status_code < 300, added.text
    finally:
        service.close()
    assert main(_cli(settings, "recent", "-n", "team-a/alice", "--json")) == 0
    assert _contents(capsys.readouterr().out) == ["ship Friday"]


def test_namespaces_under_the_old_default_are_still_found(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryStorage("notes", kind="cli", settings=settings) as store:
        store.add(Message("written by an older ltm add"))
    assert main(_cli(settings, "recent", "-n", "notes", "--json")) == 0
    assert _contents(capsys.readouterr().out) == ["written by an older ltm add"]
    assert main(_cli(settings, "add", "-n", "notes", "added now")) == 0
    capsys.readouterr()
    with MemoryStorage("notes", kind="cli", settings=settings) as store:  # not split into a second namespace
        assert store.count() == 2
    assert main(_cli(settings, "stats", "--json")) == 0
    assert [(row["kind"], row["namespace"]) for row in map(json.loads, capsys.readouterr().out.splitlines())] == [
        ("cli", "notes")
    ]


def test_not_found_names_the_kinds_where_the_name_exists(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    for kind in ("user", "team"):
        with MemoryStorage("alice", kind=kind, settings=settings) as store:
            store.add(Message("hello"))
    assert main(_cli(settings, "recent", "-n", "alice")) == 3
    err = capsys.readouterr().err
    assert "no namespace role/alice" in err and "team/alice, user/alice" in err and "--kind team" in err
    assert main(_cli(settings, "search", "-n", "alice", "--also", "nobody", "hello")) == 3
    assert "role/alice, role/nobody" in capsys.readouterr().err
    assert main(_cli(settings, "recent", "-n", "nobody")) == 3
    assert "`ltm stats` lists the namespaces" in capsys.readouterr().err


def test_the_default_kind_is_documented(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "(default: role" in page and "`--kind cli`" not in page
