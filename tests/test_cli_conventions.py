"""CLI conventions users of sqlite-utils, llm or httpie expect: version, ISO dates, JSON, progress."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ltm import __version__
from ltm.cli.output import Progress, format_time, parse_time
from ltm.errors import InvalidInput


def run(tmp: Path, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "LTM_STORAGE_DIR": str(tmp / "data"), "LTM_EMBEDDING": "hash", **env}
    return subprocess.run(
        [sys.executable, "-m", "ltm.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
        check=False,
    )


def test_version(tmp_path: Path) -> None:
    out = run(tmp_path, "--version")
    assert out.returncode == 0 and out.stdout.strip() == f"ltm {__version__}"


def test_iso_times_in_and_out() -> None:
    assert parse_time("1700000000") == 1_700_000_000.0
    assert parse_time("2023-11-14T22:13:20Z") == 1_700_000_000.0
    assert parse_time("2023-11-14T22:13:20", utc=True) == 1_700_000_000.0
    local = datetime(2023, 11, 14, 22, 13, 20).astimezone().timestamp()
    assert parse_time("2023-11-14T22:13:20") == local
    assert format_time(1_700_000_000, utc=True) == "2023-11-14T22:13:20+00:00"
    with pytest.raises(InvalidInput, match="ISO-8601"):
        parse_time("last tuesday")


def test_json_everywhere_and_filters_by_iso_date(tmp_path: Path) -> None:
    lines = [
        json.dumps({"content": f"note {i}", "created_at": datetime(2026, 11, d, tzinfo=timezone.utc).timestamp()})
        for i, d in enumerate((1, 2, 3))
    ]
    assert run(tmp_path, "add", "-n", "n", stdin="\n".join(lines)).returncode == 0
    recent = run(tmp_path, "recent", "-n", "n", "--format", "json", "--utc")
    rows = [json.loads(line) for line in recent.stdout.splitlines()]
    assert sorted(r["content"] for r in rows) == ["note 0", "note 1", "note 2"]
    assert {r["created_at_iso"][:10] for r in rows} == {"2026-11-01", "2026-11-02", "2026-11-03"}
    found = run(tmp_path, "search", "-n", "n", "note", "--mode", "keyword", "--after", "2026-11-02", "--utc", "--json")
    assert found.returncode == 0, found.stderr
    assert sorted(json.loads(line)["content"] for line in found.stdout.splitlines()) == ["note 1", "note 2"]
    table = run(tmp_path, "recent", "-n", "n", "--utc")
    assert "2026-11-03T00:00:00+00:00" in table.stdout
    got = run(tmp_path, "get", "-n", "n", rows[0]["id"], "--json")
    assert got.returncode == 0 and json.loads(got.stdout)["id"] == rows[0]["id"]
    assert run(tmp_path, "get", "-n", "n", "f" * 32).returncode == 3


def test_plain_progress_lines_with_total_and_eta(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import ltm.cli.output as output

    monkeypatch.setattr(output, "PLAIN_EVERY_S", 0.0)
    stream = io.StringIO()  # not a terminal
    with Progress("importing", 10, stream=stream) as progress:
        progress.advance(5)
        progress.advance(5)
    first = stream.getvalue().splitlines()[0]
    assert first.startswith("importing: 5/10 (50%)") and "ETA" in first


def test_log_level(tmp_path: Path) -> None:
    bad = run(tmp_path, "recent", "-n", "x", LTM_LOG_LEVEL="LOUD")
    assert bad.returncode == 1 and "LTM_LOG_LEVEL" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("command", ["recent", "search", "get", "list", "history", "update", "stats"])
def test_every_command_that_prints_data_takes_json(tmp_path: Path, command: str) -> None:
    usage = run(tmp_path, command, "--help").stdout
    assert "--json" in usage and "--format" in usage, f"ltm {command} has no --json"
