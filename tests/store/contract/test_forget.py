"""MemoryStorage.forget on every engine: what it removes, the receipt, history's FORGET event without content, the
refusals, and a forgotten memory left out of the next default search of another process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from ltm.config import Settings
from ltm.errors import InvalidInput, NotFound
from ltm.message import Message
from ltm.store import ForgetReceipt, MemoryStorage, scoped
from tests.support.postgres import PARTITIONS, store_env
from tests.support.store_worker import acked as acked_by

MARKER = "zorblaxquint"  # a word no other text holds (porter leaves it as it is)


def _filled(settings: Settings, name: str = "forget") -> tuple[MemoryStorage, Message]:
    store = MemoryStorage(name, settings=settings)
    store.add_batch([Message(f"filler note {i} about the weekly weather report", role="user") for i in range(20)])
    secret = scoped(Message(f"my bank pin is {MARKER} 4242", role="user"), user_id="u1")
    store.add(secret)
    store.update(secret.id, content=f"my bank pin is now {MARKER} 9999")
    assert [h.message.id for h in store.search(MARKER, k=3)][0] == secret.id
    return store, secret


def test_forget_removes_the_memory_and_keeps_a_forget_event_without_content(settings: Settings) -> None:
    store, secret = _filled(settings)
    receipt = store.forget([secret.id, "never-stored"], reason="the user asked")

    assert isinstance(receipt, ForgetReceipt)
    assert (receipt.removed, receipt.rows, receipt.ids, receipt.not_found) == (1, 1, (secret.id,), ("never-stored",))
    assert receipt.vectors >= 1 and receipt.keyword_entries == 1 and receipt.history_scrubbed >= 1
    assert receipt.reason == "the user asked" and receipt.namespace == "forget" and receipt.compaction
    with pytest.raises(NotFound):
        store.get(secret.id)
    assert all(h.message.id != secret.id for h in store.search(MARKER, k=5))
    assert all(h.message.id != secret.id for h in store.search(MARKER, k=5, mode="keyword"))
    assert store.count() == 20

    events = store.history(secret.id)
    assert [e.event for e in events] == ["ADD", "UPDATE", "FORGET"]
    assert all(e.old is None and e.new is None for e in events)
    assert events[-1].reason == "the user asked" and events[-1].to_dict()["reason"] == "the user asked"
    assert MARKER not in str([e.to_dict() for e in events])
    assert ForgetReceipt.from_dict(receipt.to_dict()) == receipt
    store.close()


def test_aforget_is_the_async_twin(settings: Settings) -> None:
    store, secret = _filled(settings)
    receipt = asyncio.run(store.aforget(secret.id, reason="async"))
    assert (receipt.removed, receipt.reason) == (1, "async")
    store.close()


def test_forget_scrubs_a_deleted_memory_left_in_history(settings: Settings) -> None:
    store, secret = _filled(settings)
    store.delete(secret.id)
    assert MARKER in str(store.history(secret.id)[-1].to_dict())  # delete keeps the old content: by design

    receipt = store.forget(secret.id)
    assert (receipt.removed, receipt.ids, receipt.not_found) == (0, (secret.id,), ())
    assert receipt.history_scrubbed == 2  # the UPDATE's and the DELETE's old contents
    assert MARKER not in str([e.to_dict() for e in store.history(secret.id)])
    assert store.history(secret.id)[-1].event == "FORGET"
    store.close()


def test_forget_by_filter_and_by_ids_within_a_filter(settings: Settings) -> None:
    store, secret = _filled(settings)
    other = scoped(Message(f"u2 also knows {MARKER}", role="user"), user_id="u2")
    store.add(other)

    kept = store.forget([secret.id, other.id], filters={"user_id": "u3"})
    assert (kept.removed, kept.ids) == (0, ())
    receipt = store.forget(filters={"user_id": "u1"}, reason="erasure")
    assert (receipt.removed, receipt.ids) == (1, (secret.id,))
    assert [h.message.id for h in store.search(MARKER, k=5)][0] == other.id
    assert store.count() == 21
    store.close()


@pytest.mark.parametrize("asked", [{}, {"filters": {}}, {"ids": []}, {"filters": None, "ids": None}])
def test_forget_refuses_to_forget_everything_by_accident(settings: Settings, asked: dict[str, object]) -> None:
    store, _ = _filled(settings)
    with pytest.raises(InvalidInput, match="delete_all|at least one id"):
        store.forget(**asked)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="reason"):
        store.forget("x", reason=7)  # type: ignore[arg-type]
    assert store.count() == 21
    store.close()


def test_a_forgotten_memory_is_not_returned_by_another_process(settings: Settings, tmp_path: Path) -> None:
    """Read-your-forgets: a process that had the namespace open (and searched it) leaves the memory out of its next
    default search."""
    store, secret = _filled(settings, "shared")
    store.close()
    env = {**store_env(settings.store_url, PARTITIONS if settings.store_partitions else 0), "PYTHONPATH": "."}
    reader = subprocess.Popen(
        [sys.executable, "-m", "tests.support.store_worker", "read", str(settings.storage_dir), "shared"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**_environ(), **env},
    )
    try:
        assert reader.stdout is not None and reader.stdin is not None
        assert reader.stdout.readline().strip() == "READY"

        def ask(text: str) -> list[str]:
            assert reader.stdin is not None and reader.stdout is not None
            reader.stdin.write(f"search {text}\n")
            reader.stdin.flush()
            return reader.stdout.readline().split()

        assert ask(MARKER)[0] == secret.id
        MemoryStorage("shared", settings=settings).forget(secret.id, reason="gone")
        assert secret.id not in ask(MARKER)
        assert secret.id not in ask("bank pin")
    finally:
        reader.communicate("quit\n", timeout=60)


def test_forget_beside_a_writer_of_another_process(settings: Settings) -> None:
    """Forget (and its VACUUM) while another process adds: every add that process acknowledged is kept, and the
    forgotten memory is not returned."""
    store, secret = _filled(settings, "busy")
    env = {**store_env(settings.store_url, PARTITIONS if settings.store_partitions else 0), "PYTHONPATH": "."}
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.support.store_worker", "write", str(settings.storage_dir), "busy", "w", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_environ(), **env},
    )
    forgotten = []
    for i in range(500):  # until the writer is done (bounded)
        doomed = scoped(Message(f"doomed {i} {MARKER}", role="user"), user_id="u1")
        store.add(doomed)
        forgotten.append(doomed.id)
        assert store.forget(filters={"user_id": "u1"}).removed >= 1
        if writer.poll() is not None:
            break
    acked = acked_by([writer])
    assert len(acked) == 60
    assert store._existing_ids(sorted(acked)) == set(acked)
    hits = {h.message.id for h in store.search(MARKER, k=10)}
    assert hits.isdisjoint({secret.id, *forgotten})
    assert store.count() == 20 + 60
    store.close()


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
