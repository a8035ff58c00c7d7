"""The PostgreSQL + pgvector engine (``Settings.store_url = "postgresql://..."``): every namespace in one table set.

:class:`PgBackend` is what the store's facade talks to. It is loaded on first use, so the driver-free parts of
the engine (its SQL dialect of the filter language, :mod:`ltm.store.pg.filters`) import where the ``pg`` extra
(psycopg) is not installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ltm.store.pg.backend import PgBackend

__all__ = ["PgBackend"]


def __getattr__(name: str) -> Any:
    if name == "PgBackend":
        from ltm.store.pg.backend import PgBackend

        return PgBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
