"""Fixtures for the tests that need a real MetaGPT (run by scripts/frameworks/metagpt in its MetaGPT 0.8.2 env)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.openai_server import OpenAIServer

# MetaGPT reads ~/.metagpt/config2.yaml when it is imported and refuses to start without an LLM entry. This run gets
# a private HOME whose config names an address nothing listens on (no test here may reach a model by accident)
# and a private project root (MetaGPT writes workspace/ and data/ there).
_PRIVATE = Path(tempfile.mkdtemp(prefix="ltm-metagpt-home-"))
(_PRIVATE / ".metagpt").mkdir()
(_PRIVATE / ".metagpt" / "config2.yaml").write_text(
    "llm:\n  api_type: openai\n  model: gpt-4o-mini\n  base_url: http://127.0.0.1:9/v1\n  api_key: sk-none\n",
    encoding="utf-8",
)
os.environ["HOME"] = str(_PRIVATE)
os.environ["METAGPT_PROJECT_ROOT"] = str(_PRIVATE / "project")


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
    (tmp_path / "project").mkdir()
    yield {
        "HOME": str(home),
        "METAGPT_PROJECT_ROOT": str(tmp_path / "project"),
        "LTM_STORAGE_DIR": str(tmp_path / "ltm"),
    }
