"""`ltm list / update / history / delete-where` and `--where`, as real subprocesses, on both store engines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store.conftest import BACKENDS

# the PostgreSQL store for every command of a test that sets it (LTM_STORE_URL), else the embedded one
_STORE_URL: dict[str, str] = {}


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test on both store engines: the commands run with ``LTM_STORE_URL`` on PostgreSQL."""
    if request.param == "postgres":
        _STORE_URL["url"] = request.getfixturevalue("pg_url")
    try:
        yield str(request.param)
    finally:
        _STORE_URL.clear()


def run(tmp: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LTM_STORAGE_DIR": str(tmp / "data"), "LTM_EMBEDDING": "hash"}
    if "url" in _STORE_URL:
        env["LTM_STORE_URL"] = _STORE_URL["url"]
    return subprocess.run(
        [sys.executable, "-m", "ltm.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_list_update_history_delete_where(tmp_path: Path, backend: str) -> None:
    lines = [
        json.dumps(
            {
                "id": f"m{i}",
                "content": f"note {i} about the deploy",
                "role": "user",
                "metadata": {"run_id": f"r{i % 2}", "n": i},
            }
        )
        for i in range(6)
    ]
    assert run(tmp_path, "add", "-n", "team", stdin="\n".join(lines)).returncode == 0

    listed = run(tmp_path, "list", "-n", "team", "--where", '{"run_id": "r1", "metadata.n": {"gte": 3}}', "--json")
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == ["m3", "m5"]
    paged = run(tmp_path, "list", "-n", "team", "--limit", "4")
    assert len(paged.stdout.splitlines()) == 4 and "--cursor" in paged.stderr
    cursor = paged.stderr.split("--cursor", 1)[1].split()[0]
    rest = run(tmp_path, "list", "-n", "team", "--limit", "4", "--cursor", cursor, "--json")
    assert [json.loads(line)["id"] for line in rest.stdout.splitlines()] == ["m4", "m5"]

    updated = run(tmp_path, "update", "-n", "team", "m3", "the deploy moved to Friday", "--set", "reviewed=true")
    assert updated.returncode == 0, updated.stderr
    history = run(tmp_path, "history", "-n", "team", "m3", "--json")
    events = [json.loads(line) for line in history.stdout.splitlines()]
    assert [e["event"] for e in events] == ["ADD", "UPDATE"]
    assert events[1]["old"]["content"] == "note 3 about the deploy"
    assert events[1]["new"]["content"] == "the deploy moved to Friday" and events[1]["new"]["metadata"]["reviewed"]

    found = run(
        tmp_path, "search", "-n", "team", "deploy", "--mode", "keyword", "--where", '{"run_id": "r0"}', "--json"
    )
    assert {json.loads(line)["id"] for line in found.stdout.splitlines()} == {"m0", "m2", "m4"}

    refused = run(tmp_path, "delete-where", "-n", "team", "--where", '{"run_id": "r0"}')
    assert refused.returncode == 1 and "--yes" in refused.stderr
    deleted = run(tmp_path, "delete-where", "-n", "team", "--where", '{"run_id": "r0"}', "--yes")
    assert deleted.returncode == 0 and deleted.stdout.strip() == "deleted 3"
    assert run(tmp_path, "history", "-n", "team", "m0").stdout.split()[-2:] == ["->", "'-'"]


def test_bad_filters_and_ids_are_one_line_errors(tmp_path: Path, backend: str) -> None:
    assert run(tmp_path, "add", "-n", "team", "a note").returncode == 0
    for where, says in (
        ('{"role": {"like": "u%"}}', "unknown filter operator 'like'"),
        ("{not json", "--where takes a JSON object"),
        ('["role"]', "--where takes a JSON object"),
    ):
        bad = run(tmp_path, "list", "-n", "team", "--where", where)
        assert bad.returncode == 1 and says in bad.stderr and "Traceback" not in bad.stderr
    missing = run(tmp_path, "update", "-n", "team", "nope", "new text")
    assert missing.returncode == 3 and missing.stderr.startswith("ltm: not found:")
    assert run(tmp_path, "history", "-n", "team", "nope").returncode == 3
    nothing = run(tmp_path, "delete-where", "-n", "team", "--yes")
    assert nothing.returncode == 1 and "needs a filter" in nothing.stderr
