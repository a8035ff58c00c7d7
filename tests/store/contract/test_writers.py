"""Several writer processes on ONE namespace, on both backends: nothing acknowledged is lost, and a reader
paging through the namespace by cursor while they write never skips a message (on PostgreSQL that holds
because a namespace's writers commit in the order their seqs were drawn: the advisory lock)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ltm import MemoryStorage, Settings
from tests.support import store_worker
from tests.support.postgres import store_env

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow

WRITERS, EACH = 4, 60


def _writer(settings: Settings, prefix: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    env.update(store_env(settings.store_url, settings.store_partitions))
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.store_worker",
            "write",
            str(settings.storage_dir),
            "many",
            prefix,
            str(EACH),
        ],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def test_writers_lose_nothing_and_a_paging_reader_skips_nothing(settings: Settings) -> None:
    store = MemoryStorage("many", settings=settings)
    writers = [_writer(settings, f"w{i}") for i in range(WRITERS)]
    before: list[str] = []  # ids read before ``cursor``, never re-read
    seen: list[str] = []  # everything the reader has read, in order
    cursor: str | None = None

    def drain() -> None:
        nonlocal cursor, seen
        tail: list[str] = []
        while True:  # from the last full page on: a page still filling is read again next time
            page = store.list(limit=7, cursor=cursor)
            tail.extend(m.id for m in page.messages)
            if page.next_cursor is None:
                seen = before + tail
                return
            before.extend(m.id for m in page.messages)
            tail.clear()
            cursor = page.next_cursor

    while any(w.poll() is None for w in writers):
        drain()
    acked = store_worker.acked(writers)
    assert len(acked) == WRITERS * EACH
    everything = [m.id for m in _all_pages(store)]
    assert sorted(everything) == sorted(acked)  # nothing acknowledged was lost
    assert store.count() == WRITERS * EACH
    # the reader's pages, read while the writers ran, are a prefix of the final order: nothing skipped
    assert seen == everything[: len(seen)], "a paging reader skipped or reordered messages"
    for message_id, content in list(acked.items())[::15]:
        assert store.get(message_id).content == content
        assert store.search(content, k=1, mode="dense")[0].message.id == message_id
    store.close()


def _all_pages(store: MemoryStorage) -> list:  # type: ignore[type-arg]
    out, cursor = [], None
    while True:
        page = store.list(limit=100, cursor=cursor)
        out.extend(page.messages)
        if page.next_cursor is None:
            return out
        cursor = page.next_cursor
