"""What under a data root ltm made, so that ``ltm wipe`` deletes that and nothing else.

A namespace folder is ltm's when the store's catalog says so (:func:`ltm.store.is_namespace_dir`: its
manifest parses, names a namespace and a model, and the folder's name is what that namespace maps to).
Inside it only ltm's own file names are deleted (a file a user put there stays, and so does its folder).
The embedded key-value store is ``kv.sqlite`` at the root, recognised by its tables. Anything else is
foreign: an issue-13 trial pointed ``--storage-dir`` at a home folder and lost ``.ssh/id_rsa``.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ltm.store import is_namespace_dir

__all__ = ["Owned", "find_owned", "remove_owned"]

_FILES = (
    "memory.sqlite",
    "memory.sqlite-wal",
    "memory.sqlite-shm",
    "memory.sqlite-journal",
    "index.faiss",
    "context.faiss",
    "manifest.json",
)
_TEMP = re.compile(r"^\.(index\.faiss|context\.faiss|manifest\.json)\..+\.tmp$")  # left by a killed snapshot write
_KV = "kv.sqlite"
_KV_TABLES = {"kv", "kv_list", "kv_hash"}
_DEPTH = 4  # <root>/<kind>/<ns>, and the demo's <root>/demo/<kind>/<ns>


@dataclass
class Owned:
    """What ltm made under a root: namespace folders, the KV file, and whether anything else is there."""

    namespaces: list[Path] = field(default_factory=list)
    kv: bool = False
    foreign: bool = False

    def __bool__(self) -> bool:
        return bool(self.namespaces) or self.kv


def _is_kv(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return tables >= _KV_TABLES


def find_owned(root: Path, only: Path | None = None) -> Owned:
    """ltm's data under ``root`` (or only the namespace folder ``only``); symlinks are never followed."""
    owned = Owned()
    if only is not None:
        owned.namespaces = [only] if only.is_dir() and is_namespace_dir(only) else []
        return owned
    if not root.is_dir():
        return owned
    owned.kv = _is_kv(root / _KV)
    base = len(root.parts)
    for current, dirs, files in os.walk(root, followlinks=False):
        here = Path(current)
        if here != root and is_namespace_dir(here):
            owned.namespaces.append(here)
            dirs[:] = []
            continue
        if len(here.parts) - base >= _DEPTH - 1:
            dirs[:] = []
        skip = {"README.md"} | ({_KV, f"{_KV}-wal", f"{_KV}-shm"} if here == root and owned.kv else set())
        if any(name not in skip for name in files):
            owned.foreign = True
    owned.namespaces.sort()
    return owned


def remove_owned(root: Path, owned: Owned) -> list[Path]:
    """Delete ltm's files of ``owned``, then the folders that became empty (never ``root``); returns the
    foreign files left inside the namespace folders."""
    kept: list[Path] = []
    for directory in owned.namespaces:
        for entry in directory.iterdir():
            if entry.is_file() and not entry.is_symlink() and (entry.name in _FILES or _TEMP.match(entry.name)):
                entry.unlink()
            else:
                kept.append(entry)
        _prune(directory, root)
    if owned.kv:
        for name in (_KV, f"{_KV}-wal", f"{_KV}-shm"):
            with contextlib.suppress(FileNotFoundError):
                (root / name).unlink()
    return kept


def _prune(directory: Path, root: Path) -> None:
    """Remove ``directory`` and its parents up to (not including) ``root`` while they are empty."""
    root = root.resolve()
    current = directory.resolve()
    while current != root and root in current.parents:
        try:
            current.rmdir()
        except OSError:  # not empty (or not ours to remove): stop here
            return
        current = current.parent
