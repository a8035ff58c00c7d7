"""The store's result records: a page of :meth:`MemoryStorage.list`, and :meth:`MemoryStorage.stats`.

A page's cursor is opaque to callers. Inside it is the last message seq the page covered: seqs only grow
(SQLite AUTOINCREMENT never reuses one), so a cursor stays valid while others append, and the next page
starts right after it whatever was added or deleted meanwhile.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from ltm.errors import InvalidInput
from ltm.message import Message

__all__ = ["LIST_MAX", "MessagePage", "StoreStats", "check_limit", "decode_cursor", "encode_cursor"]

_CURSOR_PREFIX = "ltm-seq:"
LIST_MAX = 10_000  # messages per list() page: a page is held in RAM at once


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
        if text.startswith(_CURSOR_PREFIX) and text[len(_CURSOR_PREFIX):].isdigit():
            return int(text[len(_CURSOR_PREFIX):])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidInput(f"cursor {cursor!r} is not one list() returned; pass a page's next_cursor, or None to start")
