"""With no embedding server where MetaGPT's config points, the MetaGPT guide's example (docs/metagpt.md) fails in
seconds with one clear error (the OpenAI client alone would retry a refused connection for minutes)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("metagpt")

ROOT = Path(__file__).resolve().parents[2]


def test_the_metagpt_example_fails_fast_without_an_embedding_server(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    home = tmp_path / "home"
    (home / ".metagpt").mkdir(parents=True)
    (home / ".metagpt" / "config2.yaml").write_text(
        f"llm:\n  api_type: openai\n  model: gpt-4o-mini\n  base_url: http://127.0.0.1:{port}/v1\n  api_key: sk-none\n",
        encoding="utf-8",
    )
    (tmp_path / "project").mkdir()
    guide = (ROOT / "docs" / "metagpt.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", guide, re.S)
    assert code
    script = tmp_path / "example.py"
    script.write_text(code.group(1), encoding="utf-8")
    env = {
        **os.environ,
        "HOME": str(home),
        "METAGPT_PROJECT_ROOT": str(tmp_path / "project"),
        "LTM_STORAGE_DIR": str(tmp_path / "ltm"),
        "PYTHONPATH": str(ROOT),
    }
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(name, None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    took = time.monotonic() - started
    assert done.returncode != 0
    assert f"no embedding server is reachable at http://127.0.0.1:{port}/v1" in done.stderr, done.stderr[-3000:]
    assert took < 60, f"took {took:.0f} s"  # the interpreter and MetaGPT's imports take most of it
