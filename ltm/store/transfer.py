"""Export / import as JSON Lines: the portable form of a namespace, for moving memories between machines.

One line per message: the message's own JSON (``Message.to_dict``), plus, when vectors are exported,
``"embedding"`` (its stored vector, 7 decimals) and ``"embedding_model"``. This is the format ``ltm export``
and ``ltm import`` have always written, so old files still load. On import a vector is reused only when its
model is the store's model (anything else is re-embedded), and reading a line never imports or runs code
(``Message.load`` builds data only).

:class:`Transfers` is the store's side of it (``export_jsonl``, ``import_jsonl``, the audit trail that ``ltm migrate``
carries, ``bulk_load``), a base class of :class:`~ltm.store.documents.DocumentStore`.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store.locks import HandleLock
from ltm.store.records import EVENTS, MessagePage

if TYPE_CHECKING:
    from ltm.store.backend import DocumentBackend

__all__ = ["Transfers", "read_lines", "write_lines"]


def write_lines(items: Iterable[tuple[Message, np.ndarray | None]], out: TextIO, model: str) -> int:
    """Write each (message, vector or None) as one line; how many were written."""
    n = 0
    for message, vector in items:
        data: dict[str, Any] = message.to_dict()
        if vector is not None:
            data["embedding"] = [round(float(x), 7) for x in vector]
            data["embedding_model"] = model
        out.write(json.dumps(data, ensure_ascii=False) + "\n")
        n += 1
    return n


def read_lines(stream: Iterable[str], model: str) -> Iterator[tuple[Message, list[float] | None]]:
    """(message, vector when it was made by ``model``) per non-blank line; InvalidInput names the line."""
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(
                f"line {number} is not JSON ({exc}); an ltm export has one message object per line"
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("content"), str):
            raise InvalidInput(f"line {number} is not a message of an ltm export (an object with a 'content' text)")
        vector = data.pop("embedding", None)
        made_by = data.pop("embedding_model", None)
        try:
            message = Message.load(data)
        except InvalidInput as exc:
            raise InvalidInput(f"line {number}: {exc}") from exc
        if vector is not None and not (isinstance(vector, list) and all(isinstance(x, int | float) for x in vector)):
            raise InvalidInput(f"line {number}: 'embedding' must be a list of numbers")
        yield message, (vector if made_by == model else None)


class Transfers:
    """A namespace moved as a whole: JSONL export and import, its audit trail, bulk loads (a base class of
    :class:`~ltm.store.documents.DocumentStore`, which holds the reads and writes these go through)."""

    settings: Settings
    _lock: HandleLock

    if TYPE_CHECKING:  # DocumentStore's

        @property
        def model(self) -> str: ...
        def _engine(self) -> DocumentBackend: ...
        def add_batch(self, messages: Iterable[Message], *, vectors: Any = None) -> int: ...
        def export(
            self, *, with_vectors: bool = False, batch: int = 1000
        ) -> Iterator[tuple[Message, np.ndarray | None]]: ...
        def list(
            self,
            filters: Mapping[str, Any] | None = None,
            *,
            limit: int = 100,
            cursor: str | None = None,
            as_of: Any = None,
            known_at: Any = None,
        ) -> MessagePage: ...

    # -- export / import ----------------------------------------------------------------------------------
    def export_jsonl(
        self, target: str | Path | TextIO, *, with_vectors: bool = False, filters: Mapping[str, Any] | None = None
    ) -> int:
        """Write the namespace (or the messages matching ``filters``) as JSON Lines, oldest first; how many.

        ``target`` is a path or an open text file. With ``with_vectors`` each line carries its stored vector
        and model name, so :meth:`import_jsonl` into a store of the same model embeds nothing."""
        wanted: set[str] | None = None
        if filters:
            wanted = set()
            cursor: str | None = None
            while True:
                page = self.list(filters, limit=10_000, cursor=cursor)
                wanted.update(m.id for m in page.messages)
                if (cursor := page.next_cursor) is None:
                    break
        items = ((m, v) for m, v in self.export(with_vectors=with_vectors) if wanted is None or m.id in wanted)
        with _opened(target, "w") as out:
            return write_lines(items, out, self.model)

    def history_rows(self) -> builtins.list[tuple[str, str, str | None, float]]:
        """The namespace's whole audit trail, oldest first, as (id, event, old message JSON, unix time): what
        ``ltm migrate`` carries to the other engine (see :meth:`load_history`)."""
        with self._lock:
            return self._engine().history.trail_rows()

    def load_history(self, rows: Iterable[tuple[str, str, str | None, float]]) -> None:
        """Make ``rows`` (from :meth:`history_rows` of another store) the history of the ids they name, in one
        transaction, replacing what those ids had (so loading twice leaves one copy); bounded as ever."""
        listed = [(str(i), str(e), o, float(a)) for i, e, o, a in rows]
        if any(e not in EVENTS for _, e, _, _ in listed):
            raise InvalidInput(f"history events are one of {EVENTS}")
        with self._lock:
            self._engine().history.load_trail(listed, self.settings.history_limit)

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """A load of many :meth:`add_batch` calls: ``with store.bulk_load(): ...``. Each batch is still one
        transaction, visible to readers when it returns. On PostgreSQL, a namespace without its HNSW index yet
        (new, or under 1,000 rows) gets the index once when the block ends instead of one graph insert per row
        (readers meanwhile search it exactly); the embedded engine writes as ever."""
        with self._lock:
            bulk = self._engine().upkeep.bulk()
        with bulk:
            yield

    def import_jsonl(self, source: str | Path | TextIO, *, batch: int = 1000) -> int:
        """Add the messages of a JSON Lines export (see :meth:`export_jsonl`); how many were new (ids already
        stored are skipped). The whole file is checked before anything is written; then written in batches
        under :meth:`bulk_load`."""
        with _opened(source, "r") as stream:
            items = list(read_lines(stream, self.model))
        with self.bulk_load():
            return self._import_items(items, batch)

    def _import_items(self, items: builtins.list[tuple[Message, builtins.list[float] | None]], batch: int) -> int:
        added = 0
        for start in range(0, len(items), batch):
            part = items[start : start + batch]
            messages = [m for m, _ in part]
            if all(v is not None for _, v in part):
                added += self.add_batch(messages, vectors=np.array([v for _, v in part], dtype=np.float32))
            else:
                added += self.add_batch(messages)
        return added


@contextmanager
def _opened(target: str | Path | TextIO, mode: str) -> Iterator[TextIO]:
    if isinstance(target, str | Path):
        with open(target, mode, encoding="utf-8") as handle:
            yield handle  # type: ignore[misc]
    else:
        yield target
