"""`ltm demo` end to end (hash embedding for speed; scripts/demo runs it with the local model)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from ltm import Settings
from ltm.demo import QUESTIONS, run_demo


def test_demo_twice_recovers_and_filters_old_news(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path, embedding="hash")
    out = io.StringIO()
    first = run_demo(settings, console=Console(file=out, width=120))
    assert first["run1"] == 3  # PRD, design, code plan
    assert first["recovered"] == {"Alice(Product Manager)": 1, "Bob(Architect)": 1, "Charlie(Engineer)": 1}
    assert first["repeat"] == 0  # the same requirement again: no rework
    assert set(first["resumed"].values()) == {0}  # nothing was cut off
    assert first["second"] == 3
    assert "SQLite" in first["answers"][QUESTIONS[0]]
    assert first["title"] and first["summary"] and first["extractive"] is True
    text = out.getvalue()
    assert "already handled, no rework" in text and "where the data lives" in text and str(tmp_path / "role") in text

    second = run_demo(settings, console=Console(file=io.StringIO(), width=120))
    assert second["run1"] == 0  # a second invocation starts from memory
    assert second["recovered"] == {"Alice(Product Manager)": 2, "Bob(Architect)": 2, "Charlie(Engineer)": 2}
    assert second["repeat"] == 0 and second["second"] == 0  # both requirements are old news now

    third = run_demo(settings, reset=True, console=Console(file=io.StringIO(), width=120))
    assert third["run1"] == 3


def test_demo_memory_is_where_the_cli_looks_and_reset_touches_only_the_team(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ltm import MemoryStorage, Message
    from ltm.cli import main

    settings = Settings(storage_dir=tmp_path, embedding="hash")
    (tmp_path / "notes.md").write_text("mine", encoding="utf-8")
    with MemoryStorage("mine", kind="cli", settings=settings) as other:
        other.add(Message("a note of my own"))
    run_demo(settings, console=Console(file=io.StringIO(), width=120))
    capsys.readouterr()
    assert (
        main(
            [
                "recent",
                "--storage-dir",
                str(tmp_path),
                "--embedding",
                "hash",
                "--kind",
                "role",
                "-n",
                "Alice(Product Manager)",
            ]
        )
        == 0
    )
    assert "snake game" in capsys.readouterr().out  # Alice watches the user requirements
    assert main(["stats", "--storage-dir", str(tmp_path), "--embedding", "hash"]) == 0
    stats = capsys.readouterr().out
    assert "Bob(Architect)" in stats and "mine" in stats

    run_demo(settings, reset=True, console=Console(file=io.StringIO(), width=120))
    assert (tmp_path / "notes.md").read_text(encoding="utf-8") == "mine"
    with MemoryStorage("mine", kind="cli", settings=settings) as other:
        assert [m.content for m in other.recent(5)] == ["a note of my own"]


def test_demo_summary_and_title_hold_across_runs_and_the_chat_is_the_inspectors(tmp_path: Path) -> None:
    import httpx

    from tests.support.service import ServiceThread

    settings = Settings(storage_dir=tmp_path, embedding="hash")
    first = run_demo(settings, console=Console(file=io.StringIO(), width=120))
    again = run_demo(settings, console=Console(file=io.StringIO(), width=120))
    assert again["summary"] == first["summary"] and again["title"] == first["title"]  # no shrinking summary
    assert "SQLite" in again["summary"]

    service = ServiceThread(settings, auth=False).start()
    try:
        with httpx.Client(base_url=service.url, timeout=30) as http:
            chats = http.get("/v1/namespaces/Alice(Product Manager)/chats").json()
            assert chats["chats"] == ["team-chat"]
            chat = http.get("/v1/namespaces/Alice(Product Manager)/chats/team-chat").json()
            assert chat["summary"] == first["summary"]
            page = http.get("/ui/ns/Alice(Product Manager)/chats")
            assert page.status_code == 200 and "team-chat" in page.text
    finally:
        service.close()


def test_demo_ends_with_commands_that_read_what_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    from ltm.cli import main

    out = io.StringIO()
    run_demo(Settings(storage_dir=tmp_path / "team dir", embedding="hash"), console=Console(file=out, width=300))
    text = out.getvalue()
    commands = [line.strip() for line in text.splitlines() if line.strip().startswith("ltm ")]
    assert [c.split()[1] for c in commands] == ["stats", "recent", "search"], text
    capsys.readouterr()
    for command in commands:
        assert main(shlex.split(command)[1:]) == 0, command
        assert capsys.readouterr().out.strip(), command


@pytest.mark.slow
def test_demo_answers_questions_about_decisions_with_the_decisions(tmp_path: Path) -> None:
    result = run_demo(Settings(storage_dir=tmp_path, embedding="local"), console=Console(file=io.StringIO()))
    storage, network, scores = (result["answers"][q] for q in QUESTIONS)
    assert "SQLite" in storage and "WebSockets" in network
    assert "SQLite" in scores  # the decision that keeps them, not the requirement that asked for them
