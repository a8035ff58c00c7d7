""":class:`EmbeddedBackend`: one namespace as a SQLite file + FAISS indexes on this machine (the default).

``<storage_dir>/<kind>/<safe namespace>/`` holds ``memory.sqlite`` (the truth: :mod:`ltm.store.embedded.log`), the
FAISS snapshots that follow it (:mod:`ltm.store.embedded.mirror`) and ``manifest.json`` (model, dimension, schema).
Several processes may open one namespace: SQLite serialises their writes, and each process's mirror replays
the others' commits before it reads.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ltm.config import Settings
from ltm.message import Message
from ltm.store.embedded.filters import compile_filters
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.opening import open_namespace
from ltm.store.embedded.retrieval import best_similarities, retrieve, similar
from ltm.store.naming import namespace_dir
from ltm.store.records import MemoryHit, Mode, Row, SearchQuery, StoreStats, unpack

__all__ = ["EmbeddedBackend"]


class EmbeddedBackend:
    """The log and its mirror of one namespace directory. Build it with :meth:`open`."""

    def __init__(self, directory: Path, log: MessageLog, mirror: IndexMirror) -> None:
        self.directory, self.log, self.mirror = directory, log, mirror

    @classmethod
    def open(cls, settings: Settings, kind: str, namespace: str, model: str) -> EmbeddedBackend:
        """Open (creating when new) the namespace's directory; StoreMismatch for another model."""
        directory = namespace_dir(settings.storage_dir, kind, namespace)
        log, mirror = open_namespace(directory, namespace, model, settings)
        mirror.sync(log, verify=True)
        return cls(directory, log, mirror)

    @property
    def location(self) -> str:
        return str(self.directory)

    def _synced(self) -> tuple[MessageLog, IndexMirror]:
        self.mirror.sync(self.log)
        return self.log, self.mirror

    def dimension(self) -> int | None:
        if self.mirror.manifest.dim is not None:  # recorded once, never changes
            return self.mirror.manifest.dim
        return self._synced()[1].dim

    def ensure_dim(self, dim: int) -> None:
        self.mirror.ensure_dim(dim)

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        return self.log.existing_ids(ids)

    def vectors_by_key(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        return self.log.vectors_by_key(keys)

    def write(self, rows: Sequence[Row], *, replace: bool) -> int:
        log, mirror = self.log, self.mirror
        with mirror.writing(log) as write:
            if replace:
                for row in rows:
                    write.remove(log.delete(row.id))
            write.insert(log.insert(rows))
        return len(write.removed) if replace else len(write.inserted)

    def delete(self, message_id: str) -> bool:
        with self.mirror.writing(self.log) as write:
            write.remove(self.log.delete(message_id))
        return bool(write.removed)

    def body_of(self, message_id: str) -> str | None:
        return self.log.body_of(message_id)

    def count(self) -> int:
        return self.log.count()

    def speaker_names(self, words: Sequence[str]) -> dict[str, set[str]]:
        return self.log.speaker_names(words)

    def recent(self, n: int) -> list[str]:
        return self.log.recent(n)

    def page(self, after: int, limit: int, with_vectors: bool) -> list[tuple[int, str, np.ndarray | None]]:
        return [(seq, body, None if blob is None else unpack(blob))
                for seq, body, blob in self.log.page(after, limit, with_vectors)]

    def listed(self, after: int, limit: int, filters: Mapping[str, Any] | None) -> list[tuple[int, str]]:
        where, params = compile_filters(filters)
        return self.log.listed(after, limit, where or "1", params)

    def search(self, text: str, vector: np.ndarray | None, k: int, mode: str,
               filters: Mapping[str, Any] | None, exact_key: bytes | None = None,
               lines: np.ndarray | None = None) -> list[MemoryHit]:
        where, params = compile_filters(filters)
        if k == 0:
            return []
        log, mirror = self._synced()
        mode_: Mode = mode  # type: ignore[assignment]  # checked by the facade (check_query)
        return retrieve(log, mirror, SearchQuery(text, vector, k, mode_, where, tuple(params), exact_key=exact_key,
                                                 lines=lines))

    def similar(self, vector: np.ndarray, k: int, threshold: float, key: bytes) -> list[Message]:
        log, mirror = self._synced()
        return similar(log, mirror, vector, k, threshold, key)

    def best_similarities(self, vectors: np.ndarray, keys: Sequence[bytes] | None) -> np.ndarray:
        log, mirror = self._synced()
        return best_similarities(log, mirror, vectors, keys)

    def stats(self, namespace: str | None, model: str, embedding_calls: int) -> StoreStats:
        log, mirror = self._synced()
        return mirror.stats(namespace, log, model, embedding_calls)

    def save(self) -> None:
        self._synced()[1].save()  # sync applied a staged add's deferred vectors and their upkeep first

    def close(self) -> None:
        self.mirror.settle(self.log)
        if self.mirror.unsaved:
            self.mirror.save()
        self.log.close()

    def drop(self) -> None:
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)
