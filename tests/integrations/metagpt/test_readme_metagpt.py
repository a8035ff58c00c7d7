"""The example of docs/frameworks/metagpt.md runs, in a fresh process, against the real MetaGPT and the local OpenAI
server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("metagpt")

ROOT = Path(__file__).resolve().parents[3]


def test_readme_metagpt_example_runs(metagpt_home: dict[str, str], tmp_path: Path) -> None:
    page = (ROOT / "docs" / "frameworks" / "metagpt.md").read_text(encoding="utf-8")
    section = page[page.index("# MetaGPT") :]
    assert 'pip install ".[metagpt]"' in section  # the line scripts/metagpt-env runs
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code
    script = tmp_path / "example.py"
    script.write_text(code.group(1), encoding="utf-8")
    env = {**os.environ, **metagpt_home, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == (
        "noted: Write a cli snake game | None | noted: Write a 2048 web game"
    )
