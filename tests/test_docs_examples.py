"""The store-API and llama-index pages cannot go stale: every python block of a page runs, in order, in a fresh
directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["store_api.md", "llama_index.md"]


def _blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S)


@pytest.mark.parametrize("page", PAGES)
def test_every_example_of_the_page_runs(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _blocks(page)
    assert blocks, f"{page} has no python example"
    scope: dict[str, object] = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{page}#{i}", "exec"), scope)  # one page's blocks share names, as a reader's session


def test_the_readme_links_each_page() -> None:
    readme = (DOCS.parent / "README.md").read_text()
    for page in PAGES:
        assert f"docs/{page}" in readme
