"""A process adding messages with write_behind while its model never answers, killed -9 by
tests/store/embedded/test_write_behind.py: ``python -m tests.support.behind_worker DIR``. Each acknowledged add is
reported as one ``ACK <id> <content>`` line written with ONE os.write (a kill cannot cut it in half).
``python -m tests.support.behind_worker DIR plain``: without write_behind, so the first add waits for the model
with its message staged (ltm.store.embedded.behind.Staging; tests/store/embedded/test_staged_add.py)."""

from __future__ import annotations

import os
import sys

from ltm import MemoryStorage, Message, Settings
from tests.support.embeddings import GatedEmbedding


def main(storage_dir: str, mode: str = "behind") -> None:
    settings = Settings(storage_dir=storage_dir, embedding="hash", write_behind=mode == "behind")
    store = MemoryStorage("crash", settings=settings, embedding=GatedEmbedding(wait_s=3600.0))
    for i in range(10_000):
        content = f"note {i} about the parser of module {i % 13}"
        store.add(Message(id=f"m{i}", content=content, role="user"))
        os.write(1, f"ACK m{i} {content}\n".encode())


if __name__ == "__main__":
    main(*sys.argv[1:3])
