"""A Python client of ``ltm serve``: :class:`RemoteStorage` has :class:`~ltm.store.MemoryStorage`'s interface.

A role keeps its code and uses a remote store by changing the one line that builds its storage::

    memory = LongTermMemory(memory_storage=RemoteStorage(url="http://127.0.0.1:8765", api_key=key))

Needs ``httpx`` (in the ``service`` extra), nothing of the server side.
"""

from __future__ import annotations

from ltm.client.remote import RemoteStorage

__all__ = ["RemoteStorage"]
