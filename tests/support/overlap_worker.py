"""A process whose default add is killed -9 after its durable stage and before the move (its model never
answers once the message is staged): ``python -m tests.support.overlap_worker DIR``, for
tests/store/test_overlap.py. Prints ``STAGED`` when the message is on disk in ``staged``."""

from __future__ import annotations

import sys

from ltm import MemoryStorage, Message, Settings
from tests.support.embeddings import StageWatchingEmbedding


def main(storage_dir: str) -> None:
    settings = Settings(storage_dir=storage_dir, embedding="hash")
    model = StageWatchingEmbedding(storage=storage_dir)
    store = MemoryStorage("crash", settings=settings, embedding=model)
    store.add(Message(id="before", content="stored before the crash, with its vector"))
    model.then = "hang"
    store.add(Message(id="cut", content="the add the kill cuts between its two commits", role="user"))


if __name__ == "__main__":
    main(sys.argv[1])
