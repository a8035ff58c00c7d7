"""ltm as LangGraph's long-term memory store: :class:`LtmStore`, a ``langgraph.store.base.BaseStore``.

``LtmStore(settings=None, *, index=None, ttl=None)`` (and :class:`AsyncLtmStore`, its twin whose TTL sweeper
calls are awaited) is built as LangGraph's own stores are and works wherever
they do (``graph.compile(store=...)``, LangMem's memory tools, ``get_store()`` inside a node). Items live in one
ltm namespace: durable on every put, found by ltm's hybrid search, on SQLite + FAISS or on PostgreSQL
(``Settings.store_url``). See ``docs/frameworks/langgraph.md``.
"""

from ltm.integrations.langgraph.aio import AsyncLtmStore
from ltm.integrations.langgraph.store import LtmStore

__all__ = ["AsyncLtmStore", "LtmStore"]
