"""The shell entry points, run for real on a PATH that holds only the tools they need: ``scripts/demo`` sets up
without a browser (Chromium is for the inspector's browser tests, not the demo)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bin(tmp: Path) -> Path:
    """A bin folder with the system tools scripts/setup uses, a recording apt-get/sudo, and an ``ltm`` that says
    it ran; no chromium and no redis-server on it."""
    folder = tmp / "bin"
    folder.mkdir()
    for tool in ("bash", "cat", "cut", "dirname", "id", "mktemp", "rm", "sha256sum"):
        found = shutil.which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    calls = tmp / "calls.log"
    for fake, body in (
        ("apt-get", f'echo "apt-get $*" >> {calls}; exit 1'),
        ("sudo", '"$@"'),
        ("ltm", f'echo "ltm $*" >> {calls}'),
    ):
        (folder / fake).write_text(f"#!{shutil.which('bash')}\n{body}\n", encoding="utf-8")
        (folder / fake).chmod(0o755)
    return folder


def test_demo_installs_no_browser(tmp_path: Path) -> None:
    venv = tmp_path / "venv"  # an "active" venv whose stamp says ltm is installed, so setup skips pip
    venv.mkdir()
    (venv / ".ltm-setup-stamp").write_text(hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest() + "\n")
    env = {"PATH": str(_bin(tmp_path)), "VIRTUAL_ENV": str(venv), "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo"), "--reset"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        executable=shutil.which("bash"),
    )
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines()
    assert calls == ["ltm demo --reset"], calls  # no apt-get: neither Chromium nor redis-server
