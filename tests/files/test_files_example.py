"""The "Memory as files" page (docs/memory-files.md) shows what examples/memory_files.py prints, and stays so."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ltm.files.fs import MemoryFS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "memory-files.md"


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("# Memory as files")
    return text[start : text.index("<!-- files-example:end -->", start) + len("<!-- files-example:end -->")]


def test_page_block_is_the_script_output() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "memory_files.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    block = re.search(
        r"<!-- files-example:start -->\n```text\n(.*?)```\n<!-- files-example:end -->", _section(), re.DOTALL
    )
    assert block is not None, "docs/memory-files.md lacks the files-example block"
    assert block.group(1) == result.stdout, "stale page: python examples/memory_files.py --update-docs"
    # the story the block tells: three edits, a validation error handed back, an approval and a rejection
    out = result.stdout
    assert out.count("$ edit ") == 3
    assert "ValidationFailed (handed back to the agent, nothing stored)" in out
    assert "AGENTS.md  (v3," in out and "SKILL.md  (v1," in out and "rejected 5" in out


def test_page_snippet_names_real_methods() -> None:
    code = re.search(r"```python\n(.*?)```", _section(), re.DOTALL)
    assert code is not None
    names = set(re.findall(r"\b(?:fs|MemoryFS)\.(\w+)\(", code.group(1)))
    assert names >= {"edit", "approve", "read", "search", "history", "restore", "export", "remember", "merged"}
    assert sorted(n for n in names if not hasattr(MemoryFS, n)) == []
