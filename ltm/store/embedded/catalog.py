"""The embedded engine's catalog of a data root: which namespace directories ``<storage_dir>/<kind>/`` holds, read
without opening (or creating) any.

:func:`namespaces` reads each ``<storage_dir>/<kind>/<dir>/manifest.json`` and counts the messages of its
``memory.sqlite`` through a read-only connection (:func:`_count_readonly`): nothing is
created, migrated or rewritten, no embedding model is loaded, and a namespace another process is writing
to is read as of its last commit. A directory whose files cannot be read is still listed, with
:attr:`~ltm.store.records.NamespaceInfo.problem` saying why, so one damaged namespace never hides the others.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

from ltm.config import Settings
from ltm.errors import InvalidInput, LTMError, StoreCorrupted
from ltm.store.embedded.log import corrupted, translate
from ltm.store.embedded.manifest import Manifest
from ltm.store.naming import check_kind, safe_name
from ltm.store.records import NamespaceInfo

__all__ = ["holds_namespace", "is_namespace_dir", "namespaces", "recorded_model"]

_MANIFEST, _LOG = "manifest.json", "memory.sqlite"


def holds_namespace(directory: Path) -> bool:
    """True when the namespace directory was ever opened (it holds a manifest or a log)."""
    return os.path.isfile(directory / _MANIFEST) or os.path.isfile(directory / _LOG)


def recorded_model(directory: Path) -> str | None:
    """The embedding model the namespace directory's manifest records; None when there is none yet."""
    manifest = Manifest.read(directory / _MANIFEST)
    return manifest.embedding_model if manifest is not None else None


def is_namespace_dir(directory: Path) -> bool:
    """True when ``directory`` is a namespace folder ltm made: its manifest parses, names a namespace and an
    embedding model, and the folder's name is what that namespace maps to. Destructive commands use it to
    touch only what ltm made. Reads only."""
    try:
        manifest = Manifest.read(directory / _MANIFEST)
    except (LTMError, OSError):
        return False
    if manifest is None or not isinstance(manifest.namespace, str) or not isinstance(manifest.embedding_model, str):
        return False
    try:
        return safe_name(manifest.namespace) == directory.name
    except InvalidInput:
        return False


def namespaces(settings: Settings, kind: str | None = None) -> Iterator[NamespaceInfo]:
    """Every namespace under ``settings.storage_dir`` (only ``kind``'s when given), sorted by kind then
    directory name. Reads only: see the module docstring. Opening each log is most of the cost
    (``python -m bench.catalog``: about 0.2 ms of CPU per namespace); a namespace whose files did not change
    since this process last listed it is not opened again (its size and modification times tell)."""
    root = os.path.abspath(settings.storage_dir)
    kinds = [check_kind(kind)] if kind is not None else _subdirs(root)
    for kind_name in kinds:
        for name in _subdirs(os.path.join(root, kind_name)):
            info = _info(kind_name, os.path.join(root, kind_name, name))
            if info is not None:
                yield info


def _count_readonly(path: Path, wal: bool | None = None) -> int:
    """Live messages in the log at ``path``, read without creating or changing any file.

    When no ``-wal`` file exists, no connection has the log open in WAL mode and every commit is in the main
    file: it is read with ``immutable=1``, which creates no ``-wal``/``-shm`` beside it (a ``mode=ro``
    connection would, and leave them). Otherwise a writer's ``-wal``/``-shm`` are there and ``mode=ro`` reads
    the last commit through them. A writer that appears between the check and the read can make the
    immutable read fail: it is then retried with ``mode=ro``. ``wal``: whether those files exist, when the
    caller already listed the directory.
    """
    if wal is None:
        wal = path.with_name(path.name + "-wal").exists() or path.with_name(path.name + "-shm").exists()
    uri = "file:" + urllib.parse.quote(os.path.abspath(path))
    modes = ["ro"] if wal else ["ro&immutable=1", "ro"]
    while True:
        mode = modes.pop(0)
        try:
            with translate(path):
                db = sqlite3.connect(f"{uri}?mode={mode}", uri=True, timeout=5)
                try:
                    return int(db.execute("SELECT count(*) FROM messages").fetchone()[0])
                finally:
                    db.close()
        except (sqlite3.Error, StoreCorrupted) as exc:
            if modes:
                continue
            if isinstance(exc, sqlite3.Error):  # e.g. no messages table: not a log ltm wrote
                raise corrupted(path, exc) from exc
            raise


def _subdirs(path: str) -> list[str]:
    try:
        with os.scandir(path) as entries:
            return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return []


# What the last listing in this process found per directory, with the (name, size, mtime) of its files: a
# directory whose files did not change is not opened again (listing 10,000 namespaces a second time
# costs a directory scan each, not a SQLite open and a JSON parse each).
_SEEN: dict[str, tuple[frozenset[tuple[str, int, int]], NamespaceInfo]] = {}
_SEEN_MAX = 200_000


def _info(kind: str, directory: str) -> NamespaceInfo | None:
    """The namespace in ``directory``; None when it holds no manifest (not a namespace). One directory scan
    gives the files present and their sizes (string paths: 10,000 namespaces make pathlib's cost show); when
    none changed (size and modification time) since this process last read them, the last answer is reused."""
    sizes: dict[str, int] = {}
    files: list[tuple[str, int, int]] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False):
                stat = entry.stat(follow_symlinks=False)
                sizes[entry.name] = stat.st_size
                files.append((entry.name, stat.st_size, stat.st_mtime_ns))
    if _MANIFEST not in sizes:
        return None
    signature = frozenset(files)
    seen = _SEEN.get(directory)
    if seen is not None and seen[0] == signature and seen[1].kind == kind:
        return seen[1]
    info = _read_info(kind, directory, sizes)
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    if info.problem is None:  # a problem may pass (a lock, a permission): read it again next time
        _SEEN[directory] = (signature, info)
    return info


def _read_info(kind: str, directory: str, sizes: dict[str, int]) -> NamespaceInfo:
    path = Path(directory)
    problems: list[str] = []
    manifest: Manifest | None = None
    try:
        manifest = Manifest.read(path / _MANIFEST)
    except LTMError as exc:
        problems.append(str(exc))
    messages: int | None = 0  # no log yet: opened once, never written (the manifest comes first)
    if _LOG in sizes:
        try:
            messages = _count_readonly(path / _LOG, wal=f"{_LOG}-wal" in sizes or f"{_LOG}-shm" in sizes)
        except LTMError as exc:
            messages = None
            problems.append(str(exc))
    return NamespaceInfo(
        kind=kind,
        namespace=manifest.namespace if manifest else path.name,
        path=path,
        messages=messages,
        bytes_on_disk=sum(sizes.values()),
        embedding_model=manifest.embedding_model if manifest else None,
        index_type=manifest.index_type if manifest else None,
        dim=manifest.dim if manifest else None,
        problem="; ".join(problems) or None,
    )
