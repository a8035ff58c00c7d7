"""Every file of a namespace deleted, truncated, filled with garbage or swapped for another
namespace's copy. Each case ends "rebuilt" (opens; rows equal vectors; every stored row is found by dense
search of its own text; a filtered search works; a second reopen agrees) or with a clear error (an LTMError
naming the file) that leaves the surviving files untouched. Never silently wrong.

The namespaces are copied while their store is still open, as a kill -9 would leave them: ``memory.sqlite-wal``
then holds committed rows not yet checkpointed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from ltm import LTMError, MemoryStorage, Message, Settings
from ltm.store.naming import namespace_dir

ROWS = 40
FILES = ["memory.sqlite", "memory.sqlite-wal", "index.faiss", "manifest.json"]
# Only an HNSW graph is snapshotted (a flat index is replayed from SQLite), so these namespaces switch
# to HNSW early and index.faiss exists to be damaged; context.faiss (always flat) is no longer written.
HNSW_AT = 10


def _fill(store: MemoryStorage, tag: str) -> None:
    store.add_batch([Message(f"{tag} record {i} about topic {i % 7}", metadata={"ok": 1, "i": i}) for i in range(ROWS)])
    for message in store.recent(3):
        store.delete(message)
    store.persist()  # a snapshot that covers the deletes
    store.add_batch([Message(f"{tag} late record {i}", metadata={"ok": 1, "late": True}) for i in range(3)])


def _frozen(tmp_path: Path, settings: Settings, name: str, tag: str) -> Path:
    """A copy of namespace ``name`` taken while its store is open (WAL not checkpointed)."""
    store = MemoryStorage(name, settings=settings)
    _fill(store, tag)
    assert store.path is not None and (store.path / "memory.sqlite-wal").stat().st_size > 0
    copy = tmp_path / f"frozen-{name}"
    shutil.copytree(store.path, copy)
    store.close()
    return copy


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("frozen")
    settings = Settings(storage_dir=tmp / "data", embedding="hash", hnsw_threshold=HNSW_AT)
    return {"a": _frozen(tmp, settings, "alpha", "alpha"), "b": _frozen(tmp, settings, "beta", "beta")}


def _delete(path: Path, other: Path) -> None:
    path.unlink()


def _empty(path: Path, other: Path) -> None:
    path.write_bytes(b"")


def _half(path: Path, other: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path, other: Path) -> None:
    size = max(path.stat().st_size, 4096)
    path.write_bytes(bytes((i * 7919 + 13) % 251 for i in range(size)))


def _swap(path: Path, other: Path) -> None:
    shutil.copyfile(other / path.name, path)


def _folder(path: Path, other: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


DAMAGE: dict[str, Callable[[Path, Path], None]] = {
    "delete": _delete,
    "empty": _empty,
    "half": _half,
    "garbage": _garbage,
    "swap": _swap,
    "folder": _folder,
}


def _open(root: Path, settings: Settings) -> MemoryStorage:
    return MemoryStorage("alpha", settings=settings)


def _consistent(store: MemoryStorage) -> int:
    """The rebuilt promise; returns how many rows the namespace holds."""
    stats = store.stats()
    assert stats.messages == stats.vectors, stats
    rows = [m for m, _ in store.export()]
    assert len(rows) == stats.messages
    for message in rows:
        hits = store.search(message.content, k=3, mode="dense")
        assert message.id in [h.message.id for h in hits[:3]], f"{message.content!r} not found by dense search"
        assert hits[0].score > 0.99
    if rows:
        assert store.search(rows[0].content, k=5, filters={"role": rows[0].role})
    return len(rows)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("name", FILES)
def test_a_damaged_file_is_rebuilt_or_a_clear_error(
    tmp_path: Path, frozen: dict[str, Path], name: str, damage: str
) -> None:
    settings = Settings(storage_dir=tmp_path / "data", embedding="hash", hnsw_threshold=HNSW_AT)
    probe = MemoryStorage("alpha", settings=settings)  # where namespace "alpha" lives under this root
    assert probe.path is not None
    directory = probe.path
    probe.clean()
    shutil.copytree(frozen["a"], directory)
    target = directory / name
    DAMAGE[damage](target, frozen["b"])
    survivors = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file() and p.name != name}
    try:
        store = _open(tmp_path, settings)
        n = _consistent(store)
        store.close()
    except LTMError as exc:
        assert any(f in str(exc) for f in FILES), f"the error does not name the file: {exc}"
        after = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file() and p.name in survivors}
        assert after == survivors, "a failed open changed the surviving files"
        return
    again = _open(tmp_path, settings)
    assert _consistent(again) == n
    if name == "memory.sqlite" and damage in ("delete", "empty"):
        raise AssertionError("memory.sqlite is gone but the namespace opened: its snapshot was thrown away")
    if name == "manifest.json" or (name.endswith(".faiss")):
        assert n == ROWS  # the truth was intact: nothing may be lost


def test_a_restored_older_memory_sqlite_is_found_by_dense_search(tmp_path: Path) -> None:
    """Defect 4: restore memory.sqlite from a backup (what StoreCorrupted advises) while the newer snapshot stays."""
    settings = Settings(storage_dir=tmp_path / "data", embedding="hash", hnsw_threshold=HNSW_AT)
    store = MemoryStorage("alpha", settings=settings)
    store.add_batch([Message(f"backed up record {i}") for i in range(50)])
    directory = store.path
    store.close()
    assert directory is not None
    backup = tmp_path / "backup.sqlite"
    shutil.copyfile(directory / "memory.sqlite", backup)
    store = MemoryStorage("alpha", settings=settings)
    for message in store.recent(50):
        store.delete(message)
    store.add_batch([Message(f"newer record {i}") for i in range(50)])
    store.persist()
    store.close()
    shutil.copyfile(backup, directory / "memory.sqlite")
    restored = MemoryStorage("alpha", settings=settings)
    assert _consistent(restored) == 50
    assert restored.search("backed up record 7", k=1, mode="dense")[0].message.content == "backed up record 7"


def test_another_namespaces_snapshot_of_the_same_size_is_not_used(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path / "data", embedding="hash", hnsw_threshold=HNSW_AT)
    stores = {}
    for name in ("alpha", "beta"):
        stores[name] = MemoryStorage(name, settings=settings)
        stores[name].add_batch([Message(f"{name} record {i}") for i in range(30)])
        stores[name].persist()
        stores[name].close()  # the last connection: the WAL is checkpointed and removed
    a, b = (stores[n].path or namespace_dir(settings.storage_dir, "role", n) for n in ("alpha", "beta"))
    shutil.copyfile(b / "index.faiss", a / "index.faiss")
    assert _consistent(MemoryStorage("alpha", settings=settings)) == 30


def test_an_edited_dimension_is_a_clear_error(tmp_path: Path) -> None:
    """Defect 11: a manifest whose dimension was edited gave a faiss AssertionError."""
    import json

    settings = Settings(storage_dir=tmp_path / "data", embedding="hash", hnsw_threshold=HNSW_AT)
    with MemoryStorage("alpha", settings=settings) as store:
        store.add_batch([Message(f"record {i}") for i in range(5)])
        directory = store.path
    assert directory is not None
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["dim"] = 385
    (directory / "manifest.json").write_text(json.dumps(manifest))
    (directory / "index.faiss").unlink(missing_ok=True)  # 5 rows: flat, no snapshot
    with pytest.raises(LTMError, match="manifest.json"):
        MemoryStorage("alpha", settings=settings).search("record 1", mode="dense")
