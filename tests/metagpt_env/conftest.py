"""Fixtures for the tests that need a real MetaGPT (run by scripts/test-metagpt in its MetaGPT 0.8.2 env)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.openai_server import OpenAIServer


@pytest.fixture
def metagpt_home(tmp_path: Path, openai_server: OpenAIServer) -> Iterator[dict[str, str]]:
    """Environment variables for a MetaGPT process: its config points at the local OpenAI-compatible server,
    its project root and ltm's data root are temp folders."""
    home = tmp_path / "home"
    (home / ".metagpt").mkdir(parents=True)
    (home / ".metagpt" / "config2.yaml").write_text(
        "llm:\n  api_type: openai\n  model: gpt-4o-mini\n"
        f"  base_url: {openai_server.base_url}\n  api_key: sk-local-test\n",
        encoding="utf-8",
    )
    yield {
        "HOME": str(home),
        "METAGPT_PROJECT_ROOT": str(tmp_path / "project"),
        "LTM_STORAGE_DIR": str(tmp_path / "ltm"),
    }
