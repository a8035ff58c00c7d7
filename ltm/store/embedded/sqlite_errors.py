"""sqlite3's errors as ltm's: a file locked past the busy timeout or unopenable is BackendUnavailable, an
unreadable one StoreCorrupted, each naming the file and the fix (every module of the embedded engine that touches
SQLite runs under :func:`translate`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ltm.errors import BackendUnavailable, StoreCorrupted

__all__ = ["corrupted", "translate"]


@contextmanager
def translate(path: Path) -> Iterator[None]:
    """sqlite3 exceptions -> ltm errors naming the file and the fix."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            raise BackendUnavailable(
                f"{path} stayed locked by another writer past the busy timeout; retry, or find the stuck process"
            ) from exc
        if "malformed" in text or "not a database" in text or "corrupt" in text:
            raise corrupted(path, exc) from exc
        if "unable to open" in text or "disk i/o" in text or "readonly" in text:
            raise BackendUnavailable(f"{path} cannot be opened or written ({exc}); check the path and disk") from exc
        raise
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError | sqlite3.InterfaceError):
            raise
        raise corrupted(path, exc) from exc


def corrupted(path: Path, exc: Exception) -> StoreCorrupted:
    """The StoreCorrupted error for an unreadable log file, naming how to recover it."""
    return StoreCorrupted(
        f"{path} is corrupted ({exc}); restore it from a backup, or recover what is readable with "
        f"`sqlite3 {path} .recover`, then reopen"
    )
