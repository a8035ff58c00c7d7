"""After forget returns, no byte of the forgotten text is left under the storage directory: a scan of every file
(database, WAL, FAISS snapshots, manifest) for the text's UTF-8 bytes, on each way the embedded engine writes
(a flat index, an HNSW graph with its snapshot, write-behind's staging), after an add, an update and searches."""

from __future__ import annotations

from pathlib import Path

import pytest

from ltm.config import Settings
from ltm.message import Message
from ltm.store import MemoryStorage, scoped

pytestmark = pytest.mark.embedded_only

MARKER = "zorblaxquint"  # a word no other text holds; the keyword index stores it as it is (porter keeps it)
UPDATED = "plumbusvortigaunt"  # the updated version's own word


def files_holding(root: Path, needle: bytes) -> list[str]:
    """Every file under ``root`` whose bytes hold ``needle``."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


def _remembered(settings: Settings, name: str) -> tuple[MemoryStorage, Message]:
    store = MemoryStorage(name, settings=settings)
    store.add_batch([Message(f"filler note {i} about the weekly weather report", role="user") for i in range(40)])
    secret = scoped(Message(f"my bank pin is {MARKER} 4242", role="user"), user_id="u1")
    store.add(secret)
    store.update(secret.id, content=f"my bank pin is now {MARKER} {UPDATED} 9999")
    assert store.search(MARKER, k=1)[0].message.id == secret.id
    assert store.search(UPDATED, k=1, mode="keyword")[0].message.id == secret.id
    store.persist()  # snapshots written, so that they are part of what is scanned
    return store, secret


@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"hnsw_threshold": 10, "snapshot_every": 1},
        {"write_behind": True},
        {"sqlite_synchronous": "normal"},
    ],
    ids=["flat", "hnsw-snapshot", "write-behind", "synchronous-normal"],
)
def test_no_byte_of_a_forgotten_memory_is_left_on_disk(settings: Settings, variant: dict[str, object]) -> None:
    settings = settings.with_(**variant)
    root = Path(settings.storage_dir)
    store, secret = _remembered(settings, "bytes")
    if variant.get("write_behind"):
        store.add(scoped(Message(f"a staged note that says {MARKER} too", role="user"), user_id="u1"))
    assert files_holding(root, MARKER.encode()), "the scan must see the text before forget"

    receipt = store.forget(filters={"user_id": "u1"}, reason="erasure request")

    assert receipt.removed == (2 if variant.get("write_behind") else 1)
    assert files_holding(root, MARKER.encode()) == []
    assert files_holding(root, UPDATED.encode()) == []
    assert store.search(MARKER, k=5, mode="keyword") == []
    assert all(h.message.id != secret.id for h in store.search(MARKER, k=5))
    assert store.count() == 40
    store.close()
    assert files_holding(root, MARKER.encode()) == []  # closing (a snapshot) brings nothing back


def test_another_handle_open_on_the_namespace_keeps_no_copy(settings: Settings) -> None:
    root = Path(settings.storage_dir)
    store, secret = _remembered(settings, "two")
    other = MemoryStorage("two", settings=settings)
    assert other.search(MARKER, k=1)[0].message.id == secret.id
    receipt = store.forget(secret.id)
    assert receipt.snapshots >= 0 and receipt.caches >= 2
    assert all(h.message.id != secret.id for h in other.search(MARKER, k=5))
    other.persist()
    other.close()
    store.close()
    assert files_holding(root, MARKER.encode()) == []


def test_a_plain_delete_leaves_the_text_on_disk(settings: Settings) -> None:
    """What forget is for: delete keeps the old content in history by design (the scan finds it)."""
    root = Path(settings.storage_dir)
    store, secret = _remembered(settings, "delete")
    store.delete(secret.id)
    store.close()
    assert files_holding(root, MARKER.encode())
