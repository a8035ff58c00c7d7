"""What :class:`~ltm.store.pg.backend.PgBackend` answers a :class:`~ltm.store.storage.MemoryStorage` handle beyond
the rows: how it is opened and removed, and a group of adds, which on the server is a plain transaction each
(PostgreSQL has neither staged adds nor write-behind: the facade finds no such capability and adds as ever)."""

from __future__ import annotations

import builtins
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltm.config import Settings
from ltm.store import rows as rowplan
from ltm.store.handle import Handle
from ltm.store.pg.warm import WARM
from ltm.store.records import Row
from ltm.store.search.filters import Filter

__all__ = ["PgSeam"]


class PgSeam:
    """The handle-facing half of :class:`~ltm.store.pg.backend.PgBackend` (a base class of it)."""

    engine_name = "postgresql"
    settings: Settings
    _handle: weakref.ref[Handle] | None = None

    @classmethod
    def open(cls, store: Handle, namespace: str) -> Any:
        """Open (creating when new) ``namespace`` for the handle ``store``, on ``store.settings.store_url``."""
        make: Any = cls  # PgBackend: its constructor opens the namespace
        backend = make(store.settings.store_url, store.kind, namespace, store.embedder.model, store.settings)
        backend._handle = weakref.ref(store)
        return backend

    @classmethod
    def discard(cls, store: Handle, namespace: str) -> None:
        """Delete ``namespace``'s rows: found through the open namespace."""
        cls.open(store, namespace).drop()

    @property
    def directory(self) -> Path | None:
        """None: the server keeps the namespace."""
        return None

    def touch(self) -> None:
        """The handle was used: the least recently used handles' embedding caches go (:mod:`ltm.store.pg.warm`)."""
        handle = None if self._handle is None else self._handle()
        if handle is not None:
            WARM.touch(handle, self.settings.max_open_namespaces)

    if TYPE_CHECKING:  # PgBackend's own

        def dimension(self) -> int | None: ...
        def ensure_dim(self, dim: int) -> None: ...
        def drop(self) -> None: ...
        def write(
            self,
            rows: Sequence[Row],
            *,
            replace: bool,
            update: bool = False,
            history_limit: int = 0,
            delete: Filter | None = None,
        ) -> int: ...

    def known_dimension(self) -> int | None:
        return self.dimension()

    def write_groups(
        self,
        items: Sequence[tuple[rowplan.Pending, np.ndarray]],
        keys: Callable[[Sequence[str]], builtins.list[bytes]],
        history_limit: int,
        staging: object = None,
    ) -> builtins.list[int]:
        """The adds of several callers: one server transaction each (``staging`` is always None here: see
        :meth:`staging`)."""
        counts = []
        for pending, vectors in items:
            self.ensure_dim(vectors.shape[1])
            rows = rowplan.build_rows(pending, keys(pending.contents), vectors)
            counts.append(self.write(rows, replace=False, history_limit=history_limit))
        return counts
