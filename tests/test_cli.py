"""The `ltm` command: every command run as a real subprocess or through main(), exit codes, docs/cli.md coverage."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent


def run(tmp: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LTM_STORAGE_DIR": str(tmp / "data"), "LTM_EMBEDDING": "hash"}
    return subprocess.run(
        [sys.executable, "-m", "ltm.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_add_search_recent_delete_round_trip(tmp_path: Path) -> None:
    added = run(tmp_path, "add", "-n", "notes", "we chose SQLite for the high scores", "--meta", "topic=storage")
    assert added.returncode == 0, added.stderr
    message_id = added.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{32}", message_id)
    jsonl = "\n".join(json.dumps({"content": f"note {i} about websockets", "role": "architect"}) for i in range(300))
    bulk = run(tmp_path, "add", "-n", "notes", stdin=jsonl + '\n"a bare string line"\n')
    assert bulk.returncode == 0, bulk.stderr
    assert "added 301 of 301" in bulk.stdout

    found = run(tmp_path, "search", "-n", "notes", "SQLite high scores", "--k", "3", "--json")
    assert found.returncode == 0, found.stderr
    first = json.loads(found.stdout.splitlines()[0])
    assert first["id"] == message_id and first["metadata"] == {"topic": "storage"}
    filtered = run(tmp_path, "search", "-n", "notes", "note", "--role", "architect", "--mode", "keyword", "-k", "5")
    assert filtered.returncode == 0 and len(filtered.stdout.splitlines()) == 5
    assert "architect:" in filtered.stdout
    nothing = run(tmp_path, "search", "-n", "notes", "note", "--meta", "topic=none")
    assert nothing.returncode == 3 and nothing.stdout == ""

    recent = run(tmp_path, "recent", "-n", "notes", "-N", "2")
    assert recent.returncode == 0 and len(recent.stdout.splitlines()) == 2
    assert run(tmp_path, "delete", "-n", "notes", message_id).returncode == 0
    again = run(tmp_path, "delete", "-n", "notes", message_id)
    assert again.returncode == 3 and again.stderr.startswith("ltm: not found:")
    assert "Traceback" not in again.stderr


def test_search_also_merges_several_namespaces_by_score(tmp_path: Path) -> None:
    notes = {
        "architect": "orders live in PostgreSQL for transactions",
        "qa": "discount codes applied twice at checkout",
        "pm": "the Germany launch is planned for March",
    }
    for role, note in notes.items():
        assert run(tmp_path, "add", "--kind", "role", "-n", role, note).returncode == 0
    found = run(
        tmp_path,
        "search",
        "--kind",
        "role",
        "-n",
        "architect",
        "--also",
        "qa",
        "--also",
        "pm",
        "discount codes twice",
        "-k",
        "3",
        "--json",
    )
    assert found.returncode == 0, found.stderr
    lines = [json.loads(line) for line in found.stdout.splitlines()]
    assert lines[0]["namespace"] == "qa" and lines[0]["content"] == notes["qa"]
    assert {line["namespace"] for line in lines} <= set(notes)
    table = run(tmp_path, "search", "--kind", "role", "-n", "pm", "--also", "qa", "Germany launch", "-k", "1")
    assert table.returncode == 0 and "[pm]" in table.stdout
    missing = run(tmp_path, "search", "--kind", "role", "-n", "pm", "--also", "nobody", "x")
    assert missing.returncode == 3 and "role/nobody" in missing.stderr


def test_export_import_is_lossless_with_and_without_embeddings(tmp_path: Path) -> None:
    lines = [
        json.dumps(
            {
                "content": f"fact {i}",
                "role": "user",
                "metadata": {"i": i},
                "instruct_content": {"k": [i]},
                "created_at": 1_700_000_000 + i,
            }
        )
        for i in range(20)
    ]
    assert run(tmp_path, "add", "-n", "src", stdin="\n".join(lines)).returncode == 0
    plain = run(tmp_path, "export", "-n", "src")
    vectors = run(tmp_path, "export", "-n", "src", "--with-embeddings", "-o", str(tmp_path / "v.jsonl"))
    assert plain.returncode == 0 and vectors.returncode == 0
    exported = [json.loads(line) for line in plain.stdout.splitlines()]
    assert len(exported) == 20 and exported[3]["metadata"] == {"i": 3} and exported[3]["instruct_content"] == {"k": [3]}
    with_vectors = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    assert len(with_vectors[0]["embedding"]) == 384 and with_vectors[0]["embedding_model"] == "hash-384"

    assert run(tmp_path, "import", "-n", "copy", stdin=plain.stdout).returncode == 0
    assert run(tmp_path, "import", "-n", "copy2", str(tmp_path / "v.jsonl")).returncode == 0
    for target in ("copy", "copy2"):
        back = [json.loads(line) for line in run(tmp_path, "export", "-n", target).stdout.splitlines()]
        assert back == exported
    reimport = run(tmp_path, "import", "-n", "copy", stdin=plain.stdout)
    assert "imported 0 new of 20" in reimport.stdout


def test_stats_of_many_namespaces_is_plain_aligned_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ltm.cli.namespaces import RICH_ROWS

    settings = Settings(storage_dir=tmp_path / "data", embedding="hash")
    for i in range(RICH_ROWS + 1):
        with MemoryStorage(f"role-{i:03d}", settings=settings) as store:
            store.add(Message(f"note {i}"))
    assert main(["stats", "--storage-dir", str(tmp_path / "data"), "--embedding", "hash"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(f"({RICH_ROWS + 1:,})") and lines[1].split() == [
        "kind",
        "namespace",
        "messages",
        "bytes",
        "on",
        "disk",
        "model",
        "index",
    ]
    rows = [line.split() for line in lines[2:]]
    assert len(rows) == RICH_ROWS + 1 and rows[0][:3] == ["role", "role-000", "1"] and rows[-1][1] == "role-200"
    assert len({line.index("hash-384") for line in lines[2:]}) == 1  # aligned


def test_stats_lists_namespaces(tmp_path: Path) -> None:
    run(tmp_path, "add", "-n", "a", "one")
    run(tmp_path, "add", "-n", "b", "--kind", "user", "two")
    stats = run(tmp_path, "stats")
    assert stats.returncode == 0, stats.stderr
    assert "role" in stats.stdout and "user" in stats.stdout and "hash-384" in stats.stdout
    assert run(tmp_path, "stats", "--kind", "user").stdout.count("hash-384") == 1


def test_wipe_asks_and_needs_yes_without_a_terminal(tmp_path: Path) -> None:
    run(tmp_path, "add", "-n", "gone", "bye")
    refused = run(tmp_path, "wipe", "-n", "gone", stdin="")
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert run(tmp_path, "wipe", "-n", "gone", "--yes").returncode == 0
    assert run(tmp_path, "recent", "-n", "gone").stdout == ""
    assert run(tmp_path, "wipe", "--all", "--yes").returncode == 0
    assert not any((tmp_path / "data").iterdir())


def test_errors_are_one_line_with_exit_codes(tmp_path: Path) -> None:
    bad = run(tmp_path, "add", "-n", "x", "--kind", "Bad Kind", "text")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and bad.stderr.startswith("ltm: error:")
    broken = run(tmp_path, "import", "-n", "x", stdin="{not json\n")
    assert broken.returncode == 1 and "line 1" in broken.stderr
    usage = run(tmp_path, "search")
    assert usage.returncode == 2


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help_and_is_documented(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert COMMANDS[command] in " ".join(capsys.readouterr().out.split())
    page = (ROOT / "docs" / "cli.md").read_text()
    assert re.search(rf"`ltm {command}\b", page), f"docs/cli.md does not document `ltm {command}`"


def test_keys_list_creates_no_data_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "nothing-here"
    assert main(["keys", "list", "--storage-dir", str(root)]) == 0
    assert "no keys" in capsys.readouterr().out
    assert not root.exists()
