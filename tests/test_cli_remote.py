"""`ltm --url` talks to a running `ltm serve` instead of opening local files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ltm.config import Settings
from tests.support.service import ServiceThread


def test_cli_over_a_running_server(tmp_path: Path) -> None:
    service = ServiceThread(Settings(storage_dir=tmp_path / "server", embedding="hash"), auth=False).start()
    try:
        env = {**os.environ, "LTM_URL": service.url, "LTM_STORAGE_DIR": str(tmp_path / "local-must-stay-empty")}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "ltm.cli", *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
                check=False,
            )

        added = run("add", "-n", "team", "we keep the high scores in SQLite")
        assert added.returncode == 0, added.stderr
        message_id = added.stdout.split()[0]
        recent = run("recent", "-n", "team", "--json")
        assert recent.returncode == 0 and "SQLite" in recent.stdout
        found = run("search", "-n", "team", "high scores", "--mode", "keyword")
        assert found.returncode == 0 and "SQLite" in found.stdout
        assert run("get", "-n", "team", message_id).returncode == 0
        assert run("get", "-n", "team", "f" * 32).returncode == 3
        assert run("recent", "-n", "team", "--kind", "role").returncode == 1  # kinds are local-only
        assert not (tmp_path / "local-must-stay-empty").exists()
    finally:
        service.close()
