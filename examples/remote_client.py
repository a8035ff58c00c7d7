"""A role's memory on a remote `ltm serve`: the same LongTermMemory code, one line changed.

Starts a private server on a free loopback port over a temporary data root, creates a key for the team's
namespaces with `ltm keys create`, and uses it from Python through `ltm.client.RemoteStorage`:

    python examples/remote_client.py
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

import httpx

from ltm import LongTermMemory, Message, Settings, UserRequirement
from ltm.client import RemoteStorage


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    env = {**os.environ, "LTM_STORAGE_DIR": tempfile.mkdtemp(), "LTM_EMBEDDING": "hash"}
    ltm_cli = [sys.executable, "-m", "ltm.cli"]
    created = subprocess.run(
        [*ltm_cli, "keys", "create", "--namespaces", "team-*"], env=env, check=True, capture_output=True, text=True
    )
    key = created.stdout.split()[-1]  # printed once; the server keeps only its hash
    port = free_port()
    server = subprocess.Popen([*ltm_cli, "serve", "--port", str(port)], env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        settings = Settings(embedding="hash")
        # the one changed line: RemoteStorage(url=..., api_key=...) where a role had MemoryStorage(settings=...)
        memory = LongTermMemory(RemoteStorage(url=url, api_key=key), settings=settings)
        memory.recover_memory("team-alice", watch={UserRequirement})
        memory.add(Message("Write a CLI snake game that saves high scores in SQLite", cause_by=UserRequirement))
        again = LongTermMemory(RemoteStorage(url=url, api_key=key), settings=settings)
        restored = again.recover_memory("team-alice", watch={UserRequirement})
        print("recovered over HTTP:", [m.content for m in restored])
        assert [m.content for m in restored] == ["Write a CLI snake game that saves high scores in SQLite"]
        outside = RemoteStorage("other-team", url=url, api_key=key)
        try:
            outside.recent(1)
        except Exception as exc:  # the key sees only team-* namespaces
            print("outside the key's namespaces:", type(exc).__name__)
        else:
            raise AssertionError("a key must not read another team's namespace")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
