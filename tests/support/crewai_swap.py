"""The one change scripts/frameworks/crewai makes to CrewAI's own storage and memory tests: what constructs the
storage backend.

The tests' imports of ``LanceDBStorage`` / ``QdrantEdgeStorage`` are pointed here (sed), and
:func:`install` (called by the copied conftest) registers a storage factory with CrewAI's own seam
(``crewai.memory.storage.factory.set_memory_storage_factory``), so that ``Memory(storage="some/path")`` builds its
backend here too. Each builds an :class:`LtmStorage` whose data root is the path the test gave (a fresh temporary
one for the named default specs). A backend's ``vector_dim`` needs no counterpart: ltm takes the dimension of the
first vector it is given.

With ``LTM_SWAP_REFERENCE=1`` both names are CrewAI's own classes and no factory is registered: the reference run
of the same files.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ltm.config import Settings
from ltm.integrations.crewai import LtmStorage

__all__ = ["LanceDBStorage", "QdrantEdgeStorage", "REFERENCE", "install"]

REFERENCE = os.environ.get("LTM_SWAP_REFERENCE") == "1"


def ltm_storage(path: str | os.PathLike[str] | None = None, vector_dim: int | None = None, **_: Any) -> LtmStorage:
    """An LtmStorage on ``path`` (a data root), or on a fresh temporary one."""
    return LtmStorage(Settings(storage_dir=path if path is not None else tempfile.mkdtemp(prefix="ltm-crewai-")))


def _factory(spec: str) -> LtmStorage:
    return ltm_storage(None if spec in ("lancedb", "qdrant-edge") else spec)


def install() -> None:
    """Make every ``Memory(storage="...")`` of the tests build an LtmStorage (nothing with LTM_SWAP_REFERENCE=1)."""
    if not REFERENCE:
        from crewai.memory.storage.factory import set_memory_storage_factory

        set_memory_storage_factory(_factory)


def _classes() -> tuple[Any, Any]:
    """(LanceDBStorage, QdrantEdgeStorage) as the tests will call them."""
    if not REFERENCE:
        return ltm_storage, ltm_storage
    from crewai.memory.storage.lancedb_storage import LanceDBStorage as lance

    try:
        from crewai.memory.storage.qdrant_edge_storage import QdrantEdgeStorage
    except ImportError:  # the qdrant-edge extra is not installed: its tests skip themselves
        return lance, None
    return lance, QdrantEdgeStorage


LanceDBStorage, QdrantEdgeStorage = _classes()
