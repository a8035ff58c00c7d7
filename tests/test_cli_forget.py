"""`ltm forget` (--id, --where, --user, --json receipt), as real subprocesses, on both store engines: nothing of the
text is left in the data root afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ltm.config import Settings
from tests.store.embedded.test_forget_bytes import files_holding
from tests.support.service import ServiceThread
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
    assert receipt["removed"] == 3 and {s["kind_namespace"] for s in receipt["stores"]} == {"role/team", "role/other"}
    listed = run(tmp_path, "list", "-n", "team", "--json")
    assert MARKER not in listed.stdout and "lunch" in listed.stdout
    if backend == "embedded":
        assert files_holding(tmp_path / "data", MARKER.encode()) == []


def test_forget_over_a_running_server(tmp_path: Path) -> None:
    service = ServiceThread(Settings(storage_dir=tmp_path / "server", embedding="hash"), auth=False).start()
    try:
        env = {**os.environ, "LTM_URL": service.url, "LTM_STORAGE_DIR": str(tmp_path / "local-must-stay-empty")}

        def remote(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "ltm.cli", *args], capture_output=True, text=True, env=env, timeout=120
            )

        added = remote("add", "-n", "team", f"the pin is {MARKER}")
        assert added.returncode == 0, added.stderr
        message_id = added.stdout.split()[0]
        forgot = remote("forget", "-n", "team", "--id", message_id, "--json")
        assert forgot.returncode == 0, forgot.stderr
        assert json.loads(forgot.stdout)["ids"] == [message_id]
        assert remote("forget", "-n", "team", "--where", '{"role": "user"}').returncode == 1  # asks: not a tty
        assert remote("forget", "-n", "team", "--where", '{"role": "user"}', "--yes").returncode == 0
        assert files_holding(tmp_path / "server", MARKER.encode()) == []
        assert not (tmp_path / "local-must-stay-empty").exists()
    finally:
        service.close()
