"""Read-your-writes across processes, on every engine, while other processes write (docs/RELIABILITY.md): an
acknowledged add is returned by the next search of any process, under the id it was given; a superseded or
forgotten memory is not returned by the next default search of any process. Workers: tests/support/store_worker.py
(concurrent writers, a live reader) and tests/support/versions_worker.py (supersede / forget from another process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ltm import MemoryStorage, Message, Settings
from tests.support import store_worker
from tests.support.postgres import store_env

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def _env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    env.update(store_env(settings.store_url, settings.store_partitions or 0))
    return env


def _worker(settings: Settings, module: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", f"tests.support.{module}", *args],
        cwd=ROOT,
        text=True,
        env=_env(settings),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _ask(reader: subprocess.Popen[str], line: str) -> str:
    assert reader.stdin is not None and reader.stdout is not None
    reader.stdin.write(line + "\n")
    reader.stdin.flush()
    answer = reader.stdout.readline()
    if not answer:
        raise AssertionError(f"the reader ended early: {reader.stderr.read() if reader.stderr else ''}")
    return answer.rstrip("\n")


def _run(settings: Settings, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.versions_worker", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(settings),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[1]


def test_read_your_writes_across_processes_under_concurrent_writers(settings: Settings) -> None:
    namespace, directory = "ryw", str(settings.storage_dir)
    store = MemoryStorage(namespace, settings=settings)
    store.add(Message("ryw opening note"))  # the namespace exists before the reader opens it
    reader = _worker(settings, "store_worker", "read", directory, namespace)
    writers: list[subprocess.Popen[str]] = []
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "READY"
        assert _ask(reader, "stats").split()[0] == "1"
        writers = [_worker(settings, "store_worker", "write", directory, namespace, p, "40") for p in ("wa", "wb")]
        for i in range(3):  # while the two writers add: each step is seen by the other process's next read
            note = Message(f"ryw subject{i} lives in city{i}")
            store.add(note)
            assert note.id in _ask(reader, f"search {note.content}").split(), i
            newer = store.supersede(note.id, Message(f"ryw subject{i} moved to town{i}"), reason="moved")
            seen = _ask(reader, f"search {note.content}").split()
            assert note.id not in seen and newer in seen, (i, seen)
            store.forget(newer, reason="asked to")
            assert newer not in _ask(reader, f"search ryw subject{i} moved to town{i}").split(), i
            # the other way round: another process supersedes and forgets, this process's next search follows
            other = Message(f"ryw other{i} works at shop{i}")
            store.add(other)
            replaced = _run(settings, "supersede", directory, namespace, other.id, f"ryw other{i} works at mill{i}")
            found = [h.message.id for h in store.search(other.content, 5)]
            assert other.id not in found and replaced in found, (i, found)
            assert _run(settings, "forget", directory, namespace, replaced) == "1"
            assert replaced not in [h.message.id for h in store.search(f"ryw other{i} works at mill{i}", 5)], i
        acked = store_worker.acked(writers)
        assert len(acked) == 80
        for message_id, content in list(acked.items())[::8]:  # the writers' acknowledged adds, under their ids
            assert _ask(reader, f"find {content}") == message_id
            assert message_id in [h.message.id for h in store.search(content, 5)]
            assert store.get(message_id).content == content
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait(timeout=30)
        if reader.stdin is not None:
            reader.stdin.close()
        reader.wait(timeout=60)
        store.close()
