"""The PostgreSQL + pgvector engine (``Settings.store_url = "postgresql://..."``): every namespace in one table set.

:class:`PgBackend` is what the store's facade talks to.
"""

from ltm.store.pg.backend import PgBackend

__all__ = ["PgBackend"]
