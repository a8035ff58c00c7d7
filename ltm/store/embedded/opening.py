"""Opening a namespace directory, and what to do with each file found missing, damaged or foreign there.

SQLite (``memory.sqlite``) is the truth; everything else is derived from it and rebuilt when it cannot be
trusted. The rules, one per file (docs/RELIABILITY.md lists them with their tests):

- ``memory.sqlite`` missing or empty while the folder shows the namespace held data (a recorded dimension,
  a snapshot, a ``-wal``): :class:`StoreCorrupted`, and nothing is written, so the surviving files stay as
  they were (opening used to create an empty log and then overwrite the snapshot with an empty one);
- ``manifest.json`` missing or unreadable while the log holds rows: rebuilt from the log's ``meta`` table (the model and
  namespace recorded there) and its stored vectors (the dimension); StoreCorrupted when the log is older
  than that table and cannot say which model made its vectors;
- a snapshot that does not belong to the log (see :mod:`ltm.store.embedded.mirror`): rebuilt from the log;
- temp files of snapshot or manifest writes killed midway: deleted, unless a live writer still holds them;
- a folder that cannot be written (read-only media): opened read-only; searches work, writes are refused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import uuid
from pathlib import Path

from ltm.config import Settings
from ltm.errors import ConfigError, StoreCorrupted
from ltm.store.embedded import identity, migrations
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.manifest import SCHEMA_VERSION, Manifest
from ltm.store.embedded.migrations import migrate
from ltm.store.embedded.mirror import IndexMirror

__all__ = ["open_namespace", "sweep_leftovers"]

_LOGGER = logging.getLogger("ltm.store")

_LOG, _MANIFEST = "memory.sqlite", "manifest.json"
_SNAPSHOTS = ("index.faiss", "context.faiss")
_TEMP = re.compile(r"^\.(index\.faiss|context\.faiss|manifest\.json)\..+\.tmp$")


def open_namespace(
    directory: Path, namespace: str, model: str, settings: Settings, *, lazy: bool = False
) -> tuple[MessageLog, IndexMirror]:
    """Open (creating when new) a namespace directory: its manifest, checked against ``model`` (StoreMismatch
    for another one), its log, migrated when older, and a mirror on its snapshots (not yet synced; ``lazy``:
    not even loaded, until its first :meth:`~IndexMirror.sync`)."""
    writable = _prepare_dir(directory)
    for name in (_MANIFEST, *_SNAPSHOTS, f"{_LOG}-wal"):
        if (directory / name).is_dir():
            raise StoreCorrupted(
                f"{directory / name} is a folder, not ltm's file; move it out of the namespace "
                "folder (ltm rebuilds the file)"
            )
    try:
        manifest, unreadable = Manifest.read(directory / _MANIFEST), None
    except StoreCorrupted as exc:  # rebuilt from the log below when it can say what the namespace is
        manifest, unreadable = None, exc
    _refuse_lost_log(directory, manifest)
    log = MessageLog(directory / _LOG, synchronous=settings.sqlite_synchronous, read_only=not writable)
    try:
        manifest = _manifest(directory, namespace, model, log, manifest, writable, unreadable)
        holds = identity.stored_dim(log) is not None  # one row read: every stored message has its vector
        if holds:
            manifest = _recorded(directory, log, manifest, writable)
        manifest.check(model, directory / _MANIFEST, log.count() if holds and manifest.embedding_model != model else 0)
        if manifest.embedding_model != model:  # no vectors: the model is this handle's until its first vector
            manifest = Manifest(
                namespace=manifest.namespace, embedding_model=model, schema_version=manifest.schema_version
            )
        if writable:
            _record_identity(log, namespace, manifest.embedding_model if holds else None)
            sweep_leftovers(directory)
            # a manifest rebuilt from the log says the current schema: the keyword index is checked by itself
            if manifest.schema_version < SCHEMA_VERSION or not migrations.keywords_stemmed(log):
                migrate(log, directory, manifest)
        stored = identity.stored_dim(log) if manifest.schema_version == SCHEMA_VERSION else None  # float16 rows
        if stored is not None and manifest.dim is not None and stored != manifest.dim:
            raise StoreCorrupted(
                f"{directory / _MANIFEST} says dimension {manifest.dim} but memory.sqlite holds "
                f"{stored}-dimensional vectors; delete manifest.json to have it rebuilt from the log"
            )
        return log, IndexMirror.open(directory, manifest, settings, log, lazy=lazy)
    except BaseException:
        log.close()
        raise


def _prepare_dir(directory: Path) -> bool:
    """Create the folder when new; True when it can be written (False: read-only media, opened read-only)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise ConfigError(f"{exc.filename} is a file, not a folder; point storage_dir at a folder") from exc
    except NotADirectoryError as exc:
        raise ConfigError(f"a part of {directory} is a file, not a folder; point storage_dir at a folder") from exc
    except OSError as exc:
        if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise ConfigError(f"cannot create {directory}: {exc.strerror}") from exc
        if not directory.is_dir():
            raise ConfigError(f"cannot create {directory} ({exc.strerror}); it does not exist yet") from exc
    return os.access(directory, os.W_OK)


def _refuse_lost_log(directory: Path, manifest: Manifest | None) -> None:
    log = directory / _LOG
    if log.is_dir():
        raise StoreCorrupted(f"{log} is a folder; move it away and restore memory.sqlite from a backup")
    if log.exists() and log.stat().st_size > 0:
        return
    left = [name for name in (*_SNAPSHOTS, f"{_LOG}-wal") if (directory / name).exists()]
    if manifest is not None and manifest.dim is not None:
        left.insert(0, f"{_MANIFEST} (dimension {manifest.dim} recorded)")
    if left:
        state = "empty" if log.exists() else "missing"
        raise StoreCorrupted(
            f"{log} is {state} but the namespace held data ({', '.join(left)}); nothing was changed. Restore "
            "memory.sqlite from a backup (the index is rebuilt from it), or delete the folder (`ltm wipe`) "
            "to start this namespace empty"
        )


def _manifest(
    directory: Path,
    namespace: str,
    model: str,
    log: MessageLog,
    manifest: Manifest | None,
    writable: bool,
    unreadable: StoreCorrupted | None,
) -> Manifest:
    if manifest is not None:
        return manifest
    dim = identity.stored_dim(log)
    if dim is None:  # a new (or never written) namespace
        manifest = Manifest(namespace=namespace, embedding_model=model)
    else:
        recorded = identity.meta(log, "embedding_model")
        if recorded is None and unreadable is not None:
            raise unreadable
        if recorded is None:
            raise StoreCorrupted(
                f"{directory / _MANIFEST} is missing and {directory / _LOG} (older than ltm's meta table) does not "
                "record which embedding model made its vectors; restore manifest.json from a backup"
            )
        manifest = Manifest(namespace=identity.meta(log, "namespace") or namespace, embedding_model=recorded, dim=dim)
        _LOGGER.warning(
            "%s: manifest.json was %s: rebuilt from memory.sqlite",
            directory,
            "unreadable" if unreadable is not None else "missing",
        )
    if writable:
        manifest.write(directory / _MANIFEST)
    return manifest


def _recorded(directory: Path, log: MessageLog, manifest: Manifest, writable: bool) -> Manifest:
    """The manifest of a namespace holding vectors, naming the model its log records with them: a process stopped
    between a refused first write and putting the manifest back left it naming the refused model."""
    recorded = identity.meta(log, "embedding_model")
    if recorded is None or recorded == manifest.embedding_model:
        return manifest
    manifest = Manifest(
        namespace=manifest.namespace,
        embedding_model=recorded,
        dim=identity.stored_dim(log),
        index_type=manifest.index_type,
        schema_version=manifest.schema_version,
    )
    if writable:
        manifest.write(directory / _MANIFEST)
    return manifest


def _record_identity(log: MessageLog, namespace: str, model: str | None) -> None:
    """The log's own record of what it is (for a lost manifest) and its id (binding snapshots to it). The model is
    recorded with the first vector (:meth:`IndexMirror.writing`); ``model`` here: the one of a log that holds
    vectors but was written before it recorded its model."""
    missing = {
        key: value
        for key, value in (("namespace", namespace), ("embedding_model", model), ("log_id", uuid.uuid4().hex))
        if value is not None and identity.meta(log, key) is None
    }
    identity.set_meta(log, missing)


def sweep_leftovers(directory: Path) -> list[Path]:
    """Delete the temp files of snapshot / manifest writes that were killed midway (a writer that is still
    alive holds an flock on its temp file: those stay); returns what was deleted."""
    removed = []
    for path in directory.iterdir():
        if not _TEMP.match(path.name) or not path.is_file():
            continue
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a live writer
            os.close(fd)
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
        os.close(fd)
    return removed
