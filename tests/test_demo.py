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
