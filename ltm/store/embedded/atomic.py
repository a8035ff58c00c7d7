"""Replacing a file atomically: the one way every store file (``manifest.json``, ``index.faiss``,
``context.faiss``) is rewritten, so a crash leaves the old file or the new one, never a mix."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_write", "replacing"]


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temp file beside ``path`` for the caller to write. On success it is fsynced and renamed over
    ``path``, then the directory is fsynced, so a crash leaves the old file or the new one, never a mix; on
    an error the temp file is removed and ``path`` is untouched."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    fcntl.flock(fd, fcntl.LOCK_EX)  # "a writer is alive": opening sweeps only temp files nobody holds
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    finally:
        os.close(fd)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (see :func:`replacing`)."""
    with replacing(path) as tmp:
        tmp.write_bytes(data)
