"""Every example in examples/ runs as written, offline, in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def test_every_example_is_listed() -> None:
    listing = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    for path in EXAMPLES:
        assert f"`{path.name}`" in listing, f"examples/README.md does not list {path.name}"


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LTM_", "OPENAI_"))}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        LTM_STORAGE_DIR=str(tmp_path),
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    out = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, f"{path.name} failed:\n{out.stderr[-3000:]}"
