"""The documentation site: every setting and every command documented, and the site (with the API reference
generated from the docstrings) builds with warnings as errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ltm import Settings
from ltm.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_configuration_page_lists_every_setting() -> None:
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    for name in Settings.model_fields:
        assert f"`LTM_{name.upper()}`" in page, f"docs/configuration.md misses {name}"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_cli_page_documents_every_command(command: str) -> None:
    assert f"### `ltm {command}`" in (DOCS / "cli.md").read_text(encoding="utf-8"), f"docs/cli.md misses {command}"


@pytest.mark.slow
def test_site_builds_strict(tmp_path: Path) -> None:
    if shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists():
        pytest.fail("mkdocs is not installed: scripts/setup installs the dev extra")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "store" / "index.html").is_file()
