"""The README cannot go stale: its quick-start example runs, and its settings table lists every field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ltm import Settings

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _block_after(heading: str) -> str:
    section = README[README.index(heading):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python block after {heading!r}"
    return match.group(1)


@pytest.mark.slow
def test_quick_start_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LTM_EMBEDDING", raising=False)
    exec(compile(_block_after("## Quick start"), "README.md", "exec"), {})


def test_settings_table_lists_every_field() -> None:
    for name in Settings.model_fields:
        assert f"`LTM_{name.upper()}`" in README, f"README settings table misses LTM_{name.upper()}"


def test_two_commands_are_the_quick_start() -> None:
    quick = README[README.index("## Quick start"):README.index("## Settings")]
    assert "scripts/demo" in quick and "scripts/test" in quick
    assert (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text().count("scripts/test") == 1
