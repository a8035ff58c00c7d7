"""MemoryStorage's forget: an erasure that reaches every copy, with its receipt.

:meth:`MemoryStorage.delete` and :meth:`~MemoryStorage.delete_where` remove a message from what the store returns,
and keep its old contents in ``history`` on purpose (an audit trail). :func:`forget` is the erasure a person asks
for: the engine erases the rows and every copy it keeps (history contents, keyword index, vectors, staged rows, and
the bytes its files or tables keep after a delete: :mod:`ltm.store.embedded.erase`, :mod:`ltm.store.pg.erase`);
this module checks the request the same way on every engine and drops what this process caches of the texts.
What each engine guarantees, and its limits, is in docs/forget.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ltm.errors import InvalidInput
from ltm.store.records import ForgetReceipt
from ltm.store.search import fusion, speakers
from ltm.store.search.query import checked_filters
from ltm.store.validation import check_id

if TYPE_CHECKING:
    from ltm.store.documents import DocumentStore

__all__ = ["check_reason", "forget"]

REASON_MAX = 1000  # characters of a FORGET event's reason


def forget(
    store: DocumentStore, ids: str | Iterable[str] | None, filters: Mapping[str, Any] | None, reason: str | None
) -> ForgetReceipt:
    """See :meth:`MemoryStorage.forget`: checks, then the engine's erasure under the handle's lock, then this
    process's caches."""
    listed = _ids(ids)
    tree = checked_filters(filters) if filters is not None else None
    if listed is None and tree is None:
        raise InvalidInput(
            "forget needs ids or a non-empty filter; to delete every message use delete_all(), or "
            "forget(filters={'user_id': ...}) for one user's"
        )
    reason = check_reason(reason)
    with store._lock:
        receipt: ForgetReceipt = store._engine().lifespan.forget(listed, tree, reason, store.settings.history_limit)
    return dataclasses.replace(receipt, caches=receipt.caches + _drop_caches(store))


def check_reason(reason: object) -> str | None:
    """A forget's reason: None or a str of at most :data:`REASON_MAX` characters, else InvalidInput."""
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise InvalidInput(f"reason is a str (or None), got {type(reason).__name__}")
    if len(reason) > REASON_MAX:
        raise InvalidInput(f"reason holds at most {REASON_MAX} characters, got {len(reason)}; shorten it")
    return reason


def _ids(ids: str | Iterable[str] | None) -> list[str] | None:
    if ids is None:
        return None
    listed = [ids] if isinstance(ids, str) else list(ids)
    if not listed:
        raise InvalidInput("forget got an empty list of ids; pass at least one id, or filters")
    return [check_id(i) for i in listed]


def _drop_caches(store: DocumentStore) -> int:
    """Forget what this process caches of stored texts: the handle's embedding cache (vectors by a hash of the
    text) and the ranking's caches of contents and names (shared by every namespace of the process: dropping
    them costs only their recomputation). How many entries went."""
    dropped = 0
    embedder = getattr(store, "_embedder", None)
    if embedder is not None:
        dropped += embedder.cached("text") + embedder.cached("query")
        embedder.drop_cache()
    for cached in (fusion._kept_features, speakers._name_words):
        dropped += cached.cache_info().currsize
        cached.cache_clear()
    return dropped
