"""The store's records, shared by every engine: a search's hits (:class:`MemoryHit`) and keyword side,
a row ready to be written (:class:`Row`, its vectors' stored encoding), a message's history events, a page of
:meth:`MemoryStorage.list`, :meth:`MemoryStorage.stats`, and what the catalog lists (:class:`NamespaceInfo` of a
data root, :class:`DatabaseNamespace` of a database).

A page's cursor is opaque to callers. Inside it is the last message seq the page covered: seqs only grow
(SQLite AUTOINCREMENT never reuses one), so a cursor stays valid while others append, and the next page
starts right after it whatever was added or deleted meanwhile.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeAlias, get_args

import numpy as np

from ltm.errors import InvalidInput
from ltm.message import Message

__all__ = [
    "EVENTS",
    "FORGET",
    "LIST_MAX",
    "MODES",
    "VECTOR_DTYPE",
    "Analysis",
    "DatabaseNamespace",
    "Event",
    "ForgetReceipt",
    "HistoryEvent",
    "KeywordAhead",
    "KeywordSide",
    "MemoryHit",
    "MessagePage",
    "Mode",
    "NamespaceInfo",
    "Row",
    "StoreStats",
    "assemble",
    "check_limit",
    "decode",
    "decode_cursor",
    "encode_cursor",
    "forget_note",
    "pack",
    "unpack",
]

_CURSOR_PREFIX = "ltm-seq:"
LIST_MAX = 10_000  # messages per list() page: a page is held in RAM at once

VECTOR_DTYPE = np.float16  # how vectors are stored (schema 2; schema 1 stored float32)
EVENTS = ("ADD", "UPDATE", "DELETE", "FORGET")
Event = Literal["ADD", "UPDATE", "DELETE", "FORGET"]
# A FORGET event (MemoryStorage.forget) keeps no content: its stored ``old`` is only ``{"reason": ...}``, and
# every earlier event of the id has its stored content erased.
FORGET: Event = "FORGET"

Mode = Literal["hybrid", "dense", "keyword"]
MODES: tuple[Mode, ...] = get_args(Mode)


class KeywordSide(NamedTuple):
    """A hybrid search's keyword side, found on a worker thread while the model embeds the query
    (:meth:`~ltm.store.backend.KeywordFirst.keyword_ahead`): the candidates, best first, and the engine's
    rows of them read then too, with the store's ``version`` at that read (the engine reads a row again when the
    store has changed since: a message deleted meanwhile is never returned)."""

    hits: list[tuple[int, float]]  # (seq, raw keyword score), best first
    rows: Mapping[int, Any]  # seq -> the engine's candidate row (empty: none read ahead)
    version: Any = None  # what the engine compares before it trusts ``rows``


# What a hybrid search takes as its keyword side: found, or still being found on a worker thread that needs no store
# lock (:meth:`~ltm.store.backend.KeywordFirst.keyword_ahead`), waited for when the search needs it.
KeywordAhead: TypeAlias = KeywordSide | Future[KeywordSide | None]


@dataclass(frozen=True)
class Analysis:
    """A query as every stop of a search reads it, derived once (:func:`ltm.store.search.query.analyse`): its
    terms, whether it is *long* (more than ``LONG_QUERY_TERMS`` of them: a pasted conversation, weighed by
    ``LONG_QUERY_WEIGHTS``), its question stems and its lines (:mod:`ltm.store.search.query`)."""

    text: str
    terms: tuple[str, ...]
    long: bool
    stems: frozenset[str] | None
    lines: tuple[str, ...]


@dataclass(frozen=True)
class MemoryHit:
    """One search result: the message, its score (each mode's scale: :mod:`ltm.store.storage`) and the
    signals that found it: ``("dense",)``, ``("keyword",)`` or ``("dense", "keyword")``.

    ``similarity`` is the cosine similarity of the message's content vector to the query's, in [-1, 1], whichever
    signal found it, as ``explain["dense"]`` reports it and ``threshold`` bounds it: set by every dense and hybrid
    search (in dense mode it is the score), without the explanation's extra read; None in keyword mode."""

    message: Message
    score: float
    signals: tuple[str, ...]
    # per-signal scores, with search(explain=True): see ltm.store.search.explain
    explain: dict[str, float] | None = None
    similarity: float | None = None


@dataclass(frozen=True)
class Row:
    """One message ready to be written: the columns plus its keyword-index text per FTS column."""

    id: str
    role: str
    cause_by: str
    sent_from: str
    created_at: float
    metadata: str
    body: str
    text_key: bytes
    vector: np.ndarray
    fts: tuple[str, str, str, str]
    context_vector: np.ndarray | None = None  # a conversation turn's context text, embedded
    scopes: tuple[str | None, str | None, str | None, float | None] = (None, None, None, None)  # see scopes.py
    # valid_from, valid_to, superseded_at, recorded_at (None: when written): see ltm/store/validity.py
    validity: tuple[float | None, float | None, float | None, float | None] = (None, None, None, None)


@dataclass(frozen=True)
class HistoryEvent:
    """One change to one message: ``event`` is ADD, UPDATE, DELETE or FORGET; ``old`` is None for ADD, ``new``
    None for DELETE; ``at`` is unix seconds. A forgotten message's events keep their kind and time but no
    content (``old`` and ``new`` None), and its FORGET event carries the ``reason`` forget was given."""

    id: str
    event: Event
    old: Message | None
    new: Message | None
    at: float
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the CLI prints it)."""
        out = {
            "id": self.id,
            "event": self.event,
            "at": self.at,
            "old": None if self.old is None else self.old.to_dict(),
            "new": None if self.new is None else self.new.to_dict(),
        }
        if self.event == FORGET:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class ForgetReceipt:
    """What :meth:`MemoryStorage.forget` erased, and where: an erasure's receipt.

    ``removed``: memories that were stored and are gone. Where their copies were: ``rows`` (message rows),
    ``keyword_entries`` (keyword index entries), ``vectors`` (content and context vectors, from the database
    and the in-memory indexes), ``history_scrubbed`` (earlier history events whose stored content was erased),
    ``staged`` (rows waiting for their vectors: write-behind or a staged add), ``caches`` (entries dropped from
    this process's caches), ``snapshots`` (index snapshot files rewritten or deleted). ``ids``: the ids
    forgotten (stored, or with content left in history); ``not_found``: ids asked for that held nothing.
    ``compaction``: what was done to the files or tables so the bytes are gone too (e.g. ``"VACUUM"``), in
    order. ``reason`` and ``at`` (unix seconds) are those of the FORGET events written to history."""

    namespace: str | None
    engine: str
    removed: int
    ids: tuple[str, ...]
    not_found: tuple[str, ...]
    reason: str | None
    at: float
    rows: int = 0
    keyword_entries: int = 0
    vectors: int = 0
    history_scrubbed: int = 0
    staged: int = 0
    caches: int = 0
    snapshots: int = 0
    compaction: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the CLI's ``--json``, the REST API)."""
        return {
            "namespace": self.namespace,
            "engine": self.engine,
            "removed": self.removed,
            "ids": list(self.ids),
            "not_found": list(self.not_found),
            "reason": self.reason,
            "at": self.at,
            "rows": self.rows,
            "keyword_entries": self.keyword_entries,
            "vectors": self.vectors,
            "history_scrubbed": self.history_scrubbed,
            "staged": self.staged,
            "caches": self.caches,
            "snapshots": self.snapshots,
            "compaction": list(self.compaction),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ForgetReceipt:
        """The receipt :meth:`to_dict` wrote (the HTTP client reads the REST API's)."""
        return cls(
            **{
                **{k: data[k] for k in ("namespace", "engine", "removed", "reason", "at") if k in data},
                **{k: int(data.get(k, 0)) for k in _RECEIPT_COUNTS},
                "ids": tuple(data.get("ids", ())),
                "not_found": tuple(data.get("not_found", ())),
                "compaction": tuple(data.get("compaction", ())),
            }
        )


_RECEIPT_COUNTS = ("rows", "keyword_entries", "vectors", "history_scrubbed", "staged", "caches", "snapshots")


@dataclass(frozen=True)
class MessagePage:
    """One page of :meth:`MemoryStorage.list`: messages oldest first (insertion order), and the cursor of
    the next page (None when this page reached the end)."""

    messages: list[Message]
    next_cursor: str | None

    @classmethod
    def of(cls, found: Sequence[tuple[int, str]], limit: int) -> MessagePage:
        """The page of ``found`` (seq, body) rows read with ``limit + 1``: the extra row only says whether
        a next page exists."""
        rows = found[:limit]
        more = len(found) > limit
        return cls([Message.load(body) for _, body in rows], encode_cursor(rows[-1][0]) if more else None)


@dataclass(frozen=True)
class StoreStats:
    """Counts for health checks. ``messages`` (SQLite) and ``vectors`` (FAISS, after catching up) agree in
    a healthy store; ``index`` is "flat", "hnsw" or "none" (no vector stored yet)."""

    namespace: str | None
    path: str
    messages: int
    vectors: int
    index: str
    context_vectors: int
    ghosts: int
    last_seq: int
    model: str
    embedding_calls: int


@dataclass(frozen=True)
class NamespaceInfo:
    """One namespace on disk, as its manifest and log say.

    ``namespace`` is the name it was opened with (the directory name when the manifest is unreadable);
    ``messages`` is None when the log cannot be read (``problem`` says why); ``bytes_on_disk`` counts the
    files of its directory (SQLite, its WAL, snapshots, manifest)."""

    kind: str
    namespace: str
    path: Path
    messages: int | None
    bytes_on_disk: int
    embedding_model: str | None
    index_type: str | None
    dim: int | None
    problem: str | None = None


@dataclass(frozen=True)
class DatabaseNamespace:
    """One namespace row of a database: kind, name, embedding model, dimension (None before a vector), live
    messages."""

    kind: str
    name: str
    model: str
    dim: int | None
    messages: int


def encode_cursor(seq: int) -> str:
    """The opaque cursor for "after message seq ``seq``"."""
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{int(seq)}".encode()).decode().rstrip("=")


def check_limit(limit: object) -> int:
    """A page size: an int from 1 to :data:`LIST_MAX`, else InvalidInput."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= LIST_MAX:
        raise InvalidInput(f"limit must be an int from 1 to {LIST_MAX:,}, got {limit!r}")
    return limit


def decode_cursor(cursor: str | None) -> int:
    """The seq a cursor from :func:`encode_cursor` stands for (0 for None: from the start)."""
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode() if isinstance(cursor, str) else ""
        if text.startswith(_CURSOR_PREFIX) and text[len(_CURSOR_PREFIX) :].isdigit():
            return int(text[len(_CURSOR_PREFIX) :])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidInput(f"cursor {cursor!r} is not one list() returned; pass a page's next_cursor, or None to start")


def pack(vector: np.ndarray) -> bytes:
    """A vector as its stored blob (float16)."""
    return np.asarray(vector).astype(VECTOR_DTYPE).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    """A stored blob as the float32 unit vector the index holds for it."""
    return decode(np.frombuffer(blob, dtype=VECTOR_DTYPE))


def decode(stored: np.ndarray) -> np.ndarray:
    """Stored float16 vectors (rows) -> the float32 unit vectors searched.

    Renormalising after the rounding matters: a rounded vector's norm is off by ~1e-4, which would move a
    message's similarity to its own text that much; renormalised, the cosine of a vector and its stored form
    is 1 - O(1e-8), and cosines near the find_news threshold move by ~1e-5.
    """
    out = np.asarray(stored, dtype=np.float32)
    norms = np.linalg.norm(out, axis=-1, keepdims=True)
    return np.ascontiguousarray(out / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def assemble(message_id: str, rows: Sequence[Sequence[Any]], current: str | None) -> list[HistoryEvent]:
    """Events from stored ``(event, old body, at)`` rows, oldest first (every engine stores only old values: a
    new value is the next event's old one, or ``current``, the stored body now, for the last)."""
    out: list[HistoryEvent] = []
    for i, (event, old, at) in enumerate(rows):
        if event == FORGET:
            out.append(HistoryEvent(message_id, event, None, None, float(at), _reason(old)))
            continue
        if event == "DELETE" or (i + 1 < len(rows) and rows[i + 1][0] == FORGET):
            new = None
        elif i + 1 < len(rows):
            new = rows[i + 1][1]
        else:
            new = current
        out.append(HistoryEvent(message_id, event, _load(old), _load(new), float(at)))
    return out


def forget_note(reason: str | None) -> str:
    """What a FORGET event stores in place of an old body: its reason, no content."""
    return json.dumps({"reason": reason}, ensure_ascii=False)


def _reason(note: str | None) -> str | None:
    try:
        found = json.loads(note) if note else None
    except ValueError:
        return None
    return found.get("reason") if isinstance(found, dict) else None


def _load(body: str | None) -> Message | None:
    return None if body is None else Message.load(body)
