"""The catalog of a data root: namespaces and their counts, read without creating or changing anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ltm import InvalidInput, MemoryStorage, Message, Settings
from ltm.store import NamespaceInfo, namespace_path, namespaces


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time (ns)."""
    out: dict[str, tuple[int, int]] = {}
    for folder, _, files in os.walk(root):
        for name in files:
            stat = os.stat(os.path.join(folder, name))
            out[os.path.relpath(os.path.join(folder, name), root)] = (stat.st_size, stat.st_mtime_ns)
    return out


# The catalog walks the embedded data root; on PostgreSQL the namespaces are rows (ltm.store.pg.catalog).
pytestmark = pytest.mark.embedded_only


def _fill(settings: Settings, kind: str, namespace: str, n: int) -> Path:
    store = MemoryStorage(namespace, kind=kind, settings=settings)
    store.add_batch([Message(f"{namespace} note {i}") for i in range(n)])
    path = store.path
    store.close()
    assert path is not None
    return path


def test_namespaces_lists_every_kind_with_counts_and_creates_nothing(settings: Settings) -> None:
    assert list(namespaces(settings)) == [] and not settings.storage_dir.exists()  # no data root: none made
    paths = {
        ("role", "Alice (PM)"): _fill(settings, "role", "Alice (PM)", 3),
        ("role", "bob"): _fill(settings, "role", "bob", 1),
        ("user", "u@example.com"): _fill(settings, "user", "u@example.com", 5),
    }
    before = _tree(settings.storage_dir)
    found = list(namespaces(settings))
    assert _tree(settings.storage_dir) == before  # not a file added, grown or touched
    assert {(i.kind, i.namespace): (i.path, i.messages) for i in found} == {
        key: (path, n) for (key, path), n in zip(paths.items(), (3, 1, 5), strict=True)
    }
    assert [i.kind for i in found] == ["role", "role", "user"]
    info = found[0]
    assert isinstance(info, NamespaceInfo) and info.problem is None and info.embedding_model
    assert info.index_type == "flat" and info.dim is not None and info.bytes_on_disk > 0
    assert [i.namespace for i in namespaces(settings, "user")] == ["u@example.com"]
    assert list(namespaces(settings, "agent")) == []
    with pytest.raises(InvalidInput, match="kind"):
        list(namespaces(settings, "../role"))


def test_namespaces_reads_a_namespace_another_connection_is_writing(settings: Settings) -> None:
    writer = MemoryStorage("busy", settings=settings)
    writer.add_batch([Message(f"busy note {i}") for i in range(4)])  # committed; the writer stays open
    before = _tree(settings.storage_dir)
    assert [i.messages for i in namespaces(settings)] == [4]
    assert set(_tree(settings.storage_dir)) == set(before)  # the writer's -wal/-shm were there already
    writer.add(Message("one more"))
    assert [i.messages for i in namespaces(settings)] == [5]
    writer.close()
    assert [i.messages for i in namespaces(settings)] == [5]


def test_damaged_namespaces_are_listed_with_the_problem(settings: Settings) -> None:
    good = _fill(settings, "role", "good", 2)
    bad_manifest = _fill(settings, "role", "bad-manifest", 1)
    (bad_manifest / "manifest.json").write_text("{not json", "utf-8")
    bad_log = _fill(settings, "role", "bad-log", 1)
    (bad_log / "memory.sqlite").write_bytes(b"this is not a database" * 100)
    (settings.storage_dir / "role" / "stray-folder").mkdir()  # no manifest: not a namespace
    found = {i.path: i for i in namespaces(settings)}
    assert set(found) == {good, bad_manifest, bad_log}
    assert found[good].problem is None and found[good].messages == 2
    assert found[bad_manifest].namespace == bad_manifest.name and found[bad_manifest].messages == 1
    assert "manifest.json is unreadable" in (found[bad_manifest].problem or "")
    assert found[bad_log].messages is None and "corrupted" in (found[bad_log].problem or "")


def test_namespace_path_is_where_the_store_lives(settings: Settings) -> None:
    path = namespace_path(settings, "role", "Alice (PM)")
    assert not path.exists()  # computing a path creates nothing
    assert _fill(settings, "role", "Alice (PM)", 1) == path
    for kind, namespace in (("Role", "x"), ("role", ""), ("role", "a\x00b")):
        with pytest.raises(InvalidInput):
            namespace_path(settings, kind, namespace)


def test_a_second_listing_opens_only_what_changed(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from ltm.store.embedded import catalog

    for i in range(6):
        _fill(settings, "role", f"member-{i}", i + 1)
    assert sorted((n.namespace, n.messages) for n in namespaces(settings))[0] == ("member-0", 1)
    opened: list[Path] = []
    counted = catalog._count_readonly

    def counting(path: Path, wal: bool | None = None) -> int:
        opened.append(path)
        return counted(path, wal)

    monkeypatch.setattr(catalog, "_count_readonly", counting)
    assert {n.namespace: n.messages for n in namespaces(settings)} == {f"member-{i}": i + 1 for i in range(6)}
    assert opened == []  # nothing changed: no log opened again
    store = MemoryStorage("member-2", settings=settings)
    store.add(Message("one more note for member 2"))
    store.close()
    assert {n.namespace: n.messages for n in namespaces(settings)}["member-2"] == 4
    assert [p.parent.name for p in opened] == [namespace_path(settings, "role", "member-2").name]
