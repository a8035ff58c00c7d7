"""What the ``ltm`` command prints of stored text and names: shown, never acted on. A name is not Rich markup
(``a[/b]`` closes no tag, ``[link=...]`` makes no hyperlink), and escape sequences in content, ids or names reach
the terminal as visible escapes; ``--json`` stays the exact data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.cli import main

# An OSC title change, a colour, a screen clear, a one-byte C1 CSI and a right-to-left override
HOSTILE = "ok \x1b]0;owned\x07 \x1b[31mred\x1b[0m \x1b[2J \x9b31m \u202eevil"
ACTING = ("\x1b", "\x07", "\x9b", "\u202e")


def _cli(tmp: Path, *args: str) -> list[str]:
    return [*args, "--storage-dir", str(tmp / "data"), "--embedding", "hash"]


def _written(tmp: Path, namespace: str, content: str = "hello", message_id: str | None = None) -> str:
    settings = Settings(storage_dir=tmp / "data", embedding="hash")
    message = Message(content, role="user", **({"id": message_id} if message_id else {}))
    with MemoryStorage(namespace, kind="cli", settings=settings) as store:
        store.add(message)
    return message.id


def _no_terminal_control(text: str) -> None:
    for char in ACTING:
        assert char not in text, f"{char!r} reached the terminal: {text!r}"


@pytest.mark.parametrize("name", ["a[/b]", "[link=https://example.org]click[/link]", "[bold]x", ":smile:"])
def test_stats_shows_names_as_written_never_as_markup(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _written(tmp_path, name)
    _written(tmp_path, "plain")
    assert main(_cli(tmp_path, "stats")) == 0
    out = capsys.readouterr().out
    assert name in out and "plain" in out  # the whole data root is listed, the odd name verbatim
    assert "\x1b]8;" not in out  # no OSC 8 hyperlink


def test_stats_escapes_control_characters_in_names_and_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _written(tmp_path, "esc\x1b[31mred")
    assert main(_cli(tmp_path, "stats")) == 0
    out = capsys.readouterr().out
    _no_terminal_control(out)
    assert "esc\\x1b[31mred" in out
    assert main(_cli(tmp_path, "stats", "--json")) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["namespace"] == "esc\x1b[31mred"


@pytest.mark.parametrize(
    "command",
    [
        ("recent", "-n", "n1"),
        ("list", "-n", "n1"),
        ("search", "-n", "n1", "ok red evil", "--mode", "keyword"),
        ("get", "-n", "n1", "id\x1b[2Jx"),
        ("history", "-n", "n1", "id\x1b[2Jx"),
    ],
)
def test_stored_content_and_ids_are_shown_not_acted_on(
    tmp_path: Path, command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    _written(tmp_path, "n1", HOSTILE, message_id="id\x1b[2Jx")
    assert main(_cli(tmp_path, *command)) == 0
    out = capsys.readouterr().out
    _no_terminal_control(out)
    assert "\\x1b[31mred" in out or "\\x1b[2J" in out
    if command[0] != "history":
        assert "\\x9b31m" in out and "\\u202eevil" in out and "id\\x1b[2Jx" in out


@pytest.mark.parametrize("command", [("recent", "-n", "n1"), ("get", "-n", "n1", "m1"), ("list", "-n", "n1")])
def test_json_output_is_the_exact_data_and_safe_at_a_terminal(
    tmp_path: Path, command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    _written(tmp_path, "n1", HOSTILE, message_id="m1")
    assert main(_cli(tmp_path, *command, "--json")) == 0
    out = capsys.readouterr().out
    _no_terminal_control(out)
    (line,) = out.splitlines()
    assert json.loads(line)["content"] == HOSTILE


def test_export_is_the_exact_data_and_safe_at_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _written(tmp_path, "n1", HOSTILE, message_id="m1")
    assert main(_cli(tmp_path, "export", "-n", "n1")) == 0
    out = capsys.readouterr().out
    _no_terminal_control(out)
    assert json.loads(out)["content"] == HOSTILE


def test_error_messages_show_names_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _written(tmp_path, "n1")
    assert main(_cli(tmp_path, "recent", "-n", "gone\x1b]0;owned\x07")) == 3
    missing = capsys.readouterr().err
    _no_terminal_control(missing)
    assert "gone\\x1b]0;owned\\x07" in missing
    assert main(_cli(tmp_path, "get", "-n", "n1", "no\x9bsuch")) == 3
    err = capsys.readouterr().err
    _no_terminal_control(err)
    assert "no\\x9bsuch" in err
