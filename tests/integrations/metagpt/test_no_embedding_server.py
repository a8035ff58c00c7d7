"""With no embedding server where MetaGPT's config points, the first call that needs one fails at once with one clear
error (the OpenAI client and llama-index alone would retry a refused connection for a minute or more), and nothing
is checked before that call: a test double patched onto MetaGPT's OpenAIEmbedding works with the config at a
closed port, as MetaGPT's own tests run it."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("metagpt")

ROOT = Path(__file__).resolve().parents[3]


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
    guide = (ROOT / "docs" / "frameworks" / "metagpt.md").read_text(encoding="utf-8")
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
    # The example after MetaGPT's and ltm's imports, timed by itself: imports take from seconds to minutes
    # depending on the machine's load, the example's failure must not.
    timed = (
        "import runpy, sys, time\n"
        "import metagpt.roles, ltm.integrations.metagpt.role\n"
        "started = time.monotonic()\n"
        "try:\n"
        "    runpy.run_path(sys.argv[1], run_name='__main__')\n"
        "finally:\n"
        "    print(f'example ran for {time.monotonic() - started:.2f} s', file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", timed, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode != 0
    assert f"no embedding server is reachable at http://127.0.0.1:{port}/v1" in done.stderr, done.stderr[-3000:]
    ran = re.search(r"example ran for ([0-9.]+) s", done.stderr)
    assert ran, done.stderr[-3000:]
    assert float(ran.group(1)) < 10, ran.group(0)  # retried, it would take a minute or more


# -- in process: MetaGPT's default storage (its config's OpenAI embedding) with nothing listening -------------------


@pytest.fixture
def closed_port(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """MetaGPT's config pointed at a loopback port nothing listens on, as MetaGPT's own tests expect (their config
    names a server no test reaches; the embedding is patched, the LLM answered from a cache)."""
    from metagpt.config2 import config

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    monkeypatch.setattr(config.llm, "base_url", url)
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield url


ZEROS, ONES = [0.0] * 1536, [1.0] * 1536
VECTORS = {"Write a cli snake game": ZEROS, "Write a game of cli snake": ZEROS, "Write a 2048 web game": ONES}


def _patch_openai_embedding(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """MetaGPT's tests' double (tests/metagpt/memory/mock_text_embed.py): llama-index's OpenAIEmbedding methods
    patched on the class, as their mocker.patch calls do. Returns the texts it was asked for."""
    from llama_index.embeddings.openai.base import OpenAIEmbedding

    asked: list[str] = []

    def embed_documents(self: Any, texts: list[str], show_progress: bool = False) -> list[list[float]]:
        asked.extend(texts)
        return [VECTORS[text] for text in texts]

    def embed_document(self: Any, text: str) -> list[float]:
        return embed_documents(self, [text])[0]

    async def aembed_document(self: Any, text: str) -> list[float]:
        return embed_document(self, text)

    monkeypatch.setattr(OpenAIEmbedding, "_get_text_embeddings", embed_documents)
    monkeypatch.setattr(OpenAIEmbedding, "_get_text_embedding", embed_document)
    monkeypatch.setattr(OpenAIEmbedding, "_aget_query_embedding", aembed_document)
    return asked


@pytest.mark.asyncio
async def test_a_patched_openai_embedding_is_called_with_the_config_at_a_closed_port(
    closed_port: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metagpt.actions import UserRequirement
    from metagpt.roles.role import RoleContext
    from metagpt.schema import Message

    from ltm.config import Settings
    from ltm.integrations.metagpt import LongTermMemory, MemoryStorage

    asked = _patch_openai_embedding(monkeypatch)
    settings = Settings(storage_dir=tmp_path / "ltm")
    idea, similar, new = (Message(role="User", content=t, cause_by=UserRequirement) for t in VECTORS)

    storage = MemoryStorage(settings=settings)  # MetaGPT's embedding, from its config: the closed port
    storage.recover_memory("UTUser1(Product Manager)")
    storage.add(idea)
    assert len(await storage.search_similar(similar)) == 1
    assert len(await storage.search_similar(new)) == 0
    assert len(await storage.asearch_similar(similar)) == 1
    storage.clean()

    memory = LongTermMemory(settings=settings)
    watch = RoleContext(watch={"metagpt.actions.add_requirement.UserRequirement"})
    memory.recover_memory("UTUserLtm(Product Manager)", watch)
    assert len(await memory.find_news([idea])) == 1
    memory.add(idea)
    assert len(await memory.find_news([similar])) == 0
    memory.clear()
    assert set(asked) == set(VECTORS)


def test_a_real_call_to_a_closed_port_fails_at_once_naming_the_config(closed_port: str, tmp_path: Path) -> None:
    from metagpt.schema import Message

    from ltm.config import Settings
    from ltm.errors import BackendUnavailable
    from ltm.integrations.metagpt import MemoryStorage

    storage = MemoryStorage(settings=Settings(storage_dir=tmp_path / "ltm"))
    storage.recover_memory("UTUser1(Product Manager)")  # nothing is asked of the server before the first call
    started = time.monotonic()
    with pytest.raises(BackendUnavailable) as caught:
        storage.add(Message(role="User", content="Write a cli snake game"))
    took = time.monotonic() - started
    assert f"no embedding server is reachable at {closed_port} (Connection refused)" in str(caught.value)
    assert "~/.metagpt/config2.yaml: llm.base_url" in str(caught.value)
    assert took < 2, f"took {took:.1f} s"  # llama-index's and the OpenAI client's retries wait seconds each


def test_a_server_that_drops_the_connection_is_asked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No retries: a server that accepts and closes each connection sees exactly one."""
    from metagpt.config2 import config
    from metagpt.schema import Message

    from ltm.config import Settings
    from ltm.errors import BackendUnavailable
    from ltm.integrations.metagpt import MemoryStorage

    accepted: list[int] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        server.settimeout(0.1)
        stop = threading.Event()

        def drop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                accepted.append(1)
                conn.close()

        worker = threading.Thread(target=drop, daemon=True)
        worker.start()
        url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
        monkeypatch.setattr(config.llm, "base_url", url)
        storage = MemoryStorage(settings=Settings(storage_dir=tmp_path / "ltm"))
        storage.recover_memory("UTUser1(Product Manager)")
        try:
            with pytest.raises(BackendUnavailable, match=f"no embedding server is reachable at {url}"):
                storage.add(Message(role="User", content="Write a cli snake game"))
        finally:
            stop.set()
            worker.join(5)
    assert len(accepted) == 1
