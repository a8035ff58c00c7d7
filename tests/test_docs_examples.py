"""Every code block of the documentation runs in CI, or names the test that runs it.

- A ``python`` block runs here: a page's blocks in order, sharing names (as a reader's session), in an empty folder.
- A block preceded by ``<!-- docs: runs in tests/test_docs_examples.py -->`` runs here too: ``bash`` blocks as a
  shell script (the ``ltm`` command on a fresh data root).
- Any other block is preceded by an HTML comment that names where it runs (``runs in PATH``), whose output it is
  (``output of PATH``) or what checks it (``checked in PATH``), and that path exists; or, for a ``text`` or
  ``mermaid`` block, says it is a diagram (``docs: a diagram, not code``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HERE = "tests/test_docs_examples.py"
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<code>.*?)^```\s*$", re.S | re.M)
_NAMED = re.compile(r"(?:runs in|output of|checked in) (?P<path>[\w./-]+\w)")
_DIAGRAM = "docs: a diagram, not code"


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    code: str
    notes: tuple[str, ...]  # the HTML comments right above the fence

    @property
    def runs_here(self) -> bool:
        return self.lang == "python" and not self.notes or any(f"runs in {HERE}" in n for n in self.notes)


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def blocks(page: Path) -> list[Block]:
    text = page.read_text("utf-8")
    out = []
    for m in _FENCE.finditer(text):
        above = text[: m.start()].rstrip("\n").split("\n")
        notes: list[str] = []
        while above and above[-1].startswith("<!--"):
            notes.append(above.pop())
        out.append(
            Block(
                str(page.relative_to(DOCS)),
                text.count("\n", 0, m.start()) + 1,
                m.group("lang"),
                m.group("code"),
                tuple(notes),
            )
        )
    return out


ALL = [b for page in _pages() for b in blocks(page)]


def problem(block: Block) -> str | None:
    """Why a block that does not run here breaks the rule, or None."""
    where = f"docs/{block.page}:{block.line}"
    if any(_DIAGRAM in note for note in block.notes):
        return None if block.lang in ("text", "mermaid") else f"{where}: only a text or mermaid block is a diagram"
    named = [m.group("path") for note in block.notes for m in _NAMED.finditer(note)]
    if not named:
        return f"{where}: a {block.lang or 'plain'} block must run, or name where it runs"
    missing = [p for p in named if not (ROOT / p).exists()]
    return f"{where} names paths that do not exist: {missing}" if missing else None


@pytest.mark.parametrize("block", [b for b in ALL if not b.runs_here], ids=lambda b: f"{b.page}:{b.line}")
def test_a_block_not_run_here_names_where_it_runs(block: Block) -> None:
    assert problem(block) is None, problem(block)


def test_the_rule_refuses_a_block_that_names_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\nltm serve\n```\n\n<!-- docs: runs in tests/nowhere.py -->\n```bash\nltm serve\n```\n"
        "\n<!-- docs: a diagram, not code -->\n```python\nx = 1\n```\n",
        "utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "DOCS", tmp_path)
    found = [problem(b) for b in blocks(page)]
    assert found[0] is not None and "must run" in found[0]
    assert found[1] is not None and "tests/nowhere.py" in found[1]
    assert found[2] is not None and "diagram" in found[2]


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("LTM_", "OPENAI_")):
            monkeypatch.delenv(name)


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted({b.page for b in ALL if b.runs_here and b.lang == "python"}))
def test_every_python_example_of_the_page_runs(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {"__name__": "docs_example"}
    for block in (b for b in ALL if b.page == page and b.runs_here and b.lang == "python"):
        exec(compile(block.code, f"docs/{page}:{block.line}", "exec"), scope)


@pytest.mark.slow
@pytest.mark.parametrize(
    "block", [b for b in ALL if b.runs_here and b.lang == "bash"], ids=lambda b: f"{b.page}:{b.line}"
)
def test_every_shell_session_runs(block: Block, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LTM_", "OPENAI_"))}
    env.update(
        LTM_STORAGE_DIR=str(tmp_path / "storage"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    script = "set -euo pipefail\n" + block.code
    out = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, f"docs/{block.page}:{block.line} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"


def test_the_rules_see_every_kind_of_block() -> None:
    assert any(b.lang == "python" and b.runs_here for b in ALL)
    assert any(b.lang == "bash" and b.runs_here for b in ALL)
    assert blocks(DOCS / "store_api.md"), "the document-store page has its examples"


def test_the_readme_links_the_guides() -> None:
    readme = (ROOT / "README.md").read_text()
    for page in (
        "quickstart.md",
        "store_api.md",
        "frameworks/llama_index.md",
        "search.md",
        "service.md",
        "frameworks/metagpt.md",
    ):
        assert f"docs/{page}" in readme
