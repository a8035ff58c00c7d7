"""The catalog: which namespaces a data root (or a database) holds, and where one lives, without opening (or
creating) any.

Each engine reads its own (:func:`~ltm.store.backend.local_catalog`, :func:`~ltm.store.backend.database_catalog`):
a data root's namespace directories are listed from their manifests and read-only logs (nothing is created,
migrated or rewritten, no embedding model is loaded; a directory whose files cannot be read is still listed,
with :attr:`NamespaceInfo.problem` saying why); a database's are its ``ltm_namespaces`` rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ltm.config import Settings
from ltm.store.backend import database_catalog, local_catalog
from ltm.store.naming import namespace_dir
from ltm.store.records import DatabaseNamespace, NamespaceInfo

__all__ = [
    "NamespaceInfo",
    "database_namespaces",
    "database_partitions",
    "is_namespace_dir",
    "namespace_exists",
    "namespace_model",
    "namespace_path",
    "namespaces",
]


def namespace_path(settings: Settings, kind: str, namespace: str) -> Path:
    """The directory that holds (or would hold) ``namespace`` of ``kind``; it may not exist. InvalidInput for
    an empty namespace or a kind that is not a short lowercase word."""
    return namespace_dir(settings.storage_dir, kind, namespace)


def namespace_exists(settings: Settings, kind: str, namespace: str) -> bool:
    """True when ``namespace`` of ``kind`` was ever opened (its folder holds a manifest or a log; on the
    PostgreSQL store, its ``ltm_namespaces`` row): reading commands check it so a mistyped name is NotFound
    instead of a new, empty namespace."""
    if settings.store_url:
        return database_catalog().pg_namespace_exists(settings.store_url, kind, namespace, settings.store_partitions)
    return local_catalog().holds_namespace(namespace_path(settings, kind, namespace))


def namespace_model(settings: Settings, kind: str, namespace: str) -> str | None:
    """The embedding model ``namespace`` of ``kind`` records (its manifest, or its ``ltm_namespaces`` row on the
    PostgreSQL store); None when the namespace does not exist or records none yet. Reads only: a command that
    only reads a namespace opens it with this model's name and never loads a model."""
    if settings.store_url:
        return database_catalog().pg_namespace_model(settings.store_url, kind, namespace, settings.store_partitions)
    return local_catalog().recorded_model(namespace_path(settings, kind, namespace))


def database_namespaces(url: str) -> Iterator[DatabaseNamespace]:
    """Every namespace in the PostgreSQL database at ``url`` (kind, name, model, dim, messages), by kind then name."""
    return database_catalog().pg_namespaces(url)


def database_partitions(url: str) -> int:
    """How many hash partitions by namespace the PostgreSQL database at ``url`` has (0: plain tables)."""
    return database_catalog().pg_partitions(url)


def is_namespace_dir(directory: Path) -> bool:
    """True when ``directory`` is a namespace folder ltm made: its manifest parses, names a namespace and an
    embedding model, and the folder's name is what that namespace maps to. Destructive commands use it to
    touch only what ltm made. Reads only."""
    return local_catalog().is_namespace_dir(directory)


def namespaces(settings: Settings, kind: str | None = None) -> Iterator[NamespaceInfo]:
    """Every namespace under ``settings.storage_dir`` (only ``kind``'s when given), sorted by kind then
    directory name. Reads only: see the module docstring. Opening each log is most of the cost
    (``python -m bench.catalog``: about 0.2 ms of CPU per namespace); a namespace whose files did not change
    since this process last listed it is not opened again (its size and modification times tell)."""
    return local_catalog().namespaces(settings, kind)
