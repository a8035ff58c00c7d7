"""`ltm forget` (--id, --where, --user, --json receipt), as real subprocesses, on both store engines: nothing of the
text is left in the data root afterwards."""

from __future__ import annotations

import json
from pathlib import Path

from tests.store.embedded.test_forget_bytes import files_holding
from tests.test_cli_memories import backend, run

__all__ = ["backend"]

MARKER = "zorblaxquint"


def _added(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "s1", "content": f"the pin is {MARKER}", "role": "user", "metadata": {"user_id": "u1"}}),
        json.dumps({"id": "s2", "content": f"u1 again: {MARKER}", "role": "user", "metadata": {"user_id": "u1"}}),
        json.dumps({"id": "k1", "content": "lunch is at noon", "role": "user", "metadata": {"user_id": "u2"}}),
    ]
    assert run(tmp_path, "add", "-n", "team", stdin="\n".join(lines)).returncode == 0


def test_forget_by_id_and_by_filter_prints_the_receipt(tmp_path: Path, backend: str) -> None:
    _added(tmp_path)
    by_id = run(tmp_path, "forget", "-n", "team", "--id", "s1", "nope", "--reason", "asked", "--json")
    assert by_id.returncode == 0, by_id.stderr
    receipt = json.loads(by_id.stdout)
    assert (receipt["removed"], receipt["ids"], receipt["not_found"]) == (1, ["s1"], ["nope"])
    assert receipt["reason"] == "asked" and receipt["history_scrubbed"] == 0

    refused = run(tmp_path, "forget", "-n", "team", "--where", '{"user_id": "u1"}')
    assert refused.returncode == 1 and "--yes" in refused.stderr  # not a terminal: no prompt, nothing erased
    by_filter = run(tmp_path, "forget", "-n", "team", "--where", '{"user_id": "u1"}', "--yes")
    assert by_filter.returncode == 0 and by_filter.stdout.startswith("forgot 1 "), by_filter.stderr

    history = run(tmp_path, "history", "-n", "team", "s2", "--json")
    assert MARKER not in history.stdout and "FORGET" in history.stdout
    assert run(tmp_path, "forget", "-n", "team", "--id", "gone").returncode == 3  # held nothing: not found
    assert run(tmp_path, "forget", "-n", "team").returncode == 1
    if backend == "embedded":
        assert files_holding(tmp_path / "data", MARKER.encode()) == []


def test_forget_a_user_everywhere(tmp_path: Path, backend: str) -> None:
    _added(tmp_path)
    assert run(tmp_path, "add", "-n", "other", "--meta", "user_id=u1", f"{MARKER} elsewhere").returncode == 0
    assert run(tmp_path, "forget", "--user", "u1", "--id", "s1", "--yes").returncode == 1
    erased = run(tmp_path, "forget", "--user", "u1", "--yes", "--json")
    assert erased.returncode == 0, erased.stderr
    receipt = json.loads(erased.stdout)
    assert receipt["removed"] == 3 and {s["kind_namespace"] for s in receipt["stores"]} == {"cli/team", "cli/other"}
    listed = run(tmp_path, "list", "-n", "team", "--json")
    assert MARKER not in listed.stdout and "lunch" in listed.stdout
    if backend == "embedded":
        assert files_holding(tmp_path / "data", MARKER.encode()) == []
