"""The message store: :class:`MemoryStorage`, one namespace of long-term memory on an engine (embedded SQLite + FAISS
by default, PostgreSQL + pgvector with ``Settings.store_url``).

Callers use :class:`MemoryStorage`, the records it returns (:class:`MemoryHit`, :class:`MessagePage`,
:class:`StoreStats`, :class:`HistoryEvent`: :mod:`ltm.store.records`), the catalog of a data root
(:func:`namespaces`, :func:`namespace_path`) or of a database (:func:`database_namespaces`) and one search across
namespaces (:func:`search_many`) only; the modules beside this one are private to the store (an import-linter
contract in ``pyproject.toml`` keeps it so). Importing this package loads no engine: each public name loads its
module on first use, so a caller of the records alone (the HTTP client) never loads FAISS or SQLite.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "ForgetReceipt": "ltm.store.records",
    "HistoryEvent": "ltm.store.records",
    "MemoryHit": "ltm.store.records",
    "MemoryStorage": "ltm.store.storage",
    "MessagePage": "ltm.store.records",
    "Mode": "ltm.store.records",
    "NO_VECTOR": "ltm.store.rows",
    "NamespaceHit": "ltm.store.across",
    "NamespaceInfo": "ltm.store.catalog",
    # the embedded engine's compiled query, public before engines took one SearchRequest: loaded on use only
    "SearchQuery": "ltm.store.embedded.query",
    "StoreStats": "ltm.store.records",
    "database_namespaces": "ltm.store.catalog",
    "database_partitions": "ltm.store.catalog",
    "is_namespace_dir": "ltm.store.catalog",
    "namespace_exists": "ltm.store.catalog",
    "namespace_model": "ltm.store.catalog",
    "namespace_path": "ltm.store.catalog",
    "namespaces": "ltm.store.catalog",
    "scoped": "ltm.store.scopes",
    "search_many": "ltm.store.across",
}

if TYPE_CHECKING:  # "import X as X": an explicit re-export for mypy and ruff
    from ltm.store.across import NamespaceHit as NamespaceHit
    from ltm.store.across import search_many as search_many
    from ltm.store.catalog import NamespaceInfo as NamespaceInfo
    from ltm.store.catalog import database_namespaces as database_namespaces
    from ltm.store.catalog import database_partitions as database_partitions
    from ltm.store.catalog import is_namespace_dir as is_namespace_dir
    from ltm.store.catalog import namespace_exists as namespace_exists
    from ltm.store.catalog import namespace_path as namespace_path
    from ltm.store.catalog import namespaces as namespaces
    from ltm.store.records import ForgetReceipt as ForgetReceipt
    from ltm.store.records import HistoryEvent as HistoryEvent
    from ltm.store.records import MemoryHit as MemoryHit
    from ltm.store.records import MessagePage as MessagePage
    from ltm.store.records import Mode as Mode
    from ltm.store.records import StoreStats as StoreStats
    from ltm.store.rows import NO_VECTOR as NO_VECTOR
    from ltm.store.scopes import scoped as scoped
    from ltm.store.storage import MemoryStorage as MemoryStorage


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ltm.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


def check_filters(filters: Mapping[str, Any] | None) -> None:
    """Raise the InvalidInput a search or list would raise for ``filters`` (the store's filter language),
    without a namespace: for callers that answer a read of a namespace that does not exist."""
    from ltm.store.search.query import checked_filters

    checked_filters(filters)


def check_times(as_of: Any = None, known_at: Any = None) -> None:
    """Raise the InvalidInput a search or list would raise for an unreadable ``as_of`` / ``known_at`` (unix
    seconds, a datetime or ISO 8601), without a namespace."""
    from ltm.store.validity import visibility

    visibility(as_of, known_at)


__all__ = sorted([*_EXPORTS, "check_filters", "check_times"])
