"""Semantic search over memory files: chunks of every live file in a ``MemoryStorage`` namespace (kind ``files``).

The index is derived data. The files in the key-value backend are the truth; before each search
:meth:`FileIndex.sync` compares each file's approved version with the versions the index holds, drops the
chunks of changed and deleted files and chunks the new text. Chunk ids are a hash of (path, version, chunk
number), so two processes syncing at once add nothing twice (the store skips known ids), and any process —
on any host sharing a Redis backend — catches up on its next search.

Chunks follow the text's structure: a SKILL.md's front matter (its name and description: what a search for
a skill should hit) is one chunk, then each Markdown section, split further at paragraphs when long.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from ltm.config import Settings
from ltm.files.markdown import split_front_matter
from ltm.files.records import SearchHit
from ltm.message import Message
from ltm.store import MemoryStorage

__all__ = ["CHUNK_CHARS", "FileIndex", "chunk"]

CHUNK_CHARS = 1200  # about 300 tokens: within all-MiniLM-L6-v2's 256-word-piece window for most prose
_HEADING = re.compile(r"^#{1,6}\s")

# path -> (approved version, a function returning its text: only called for files that need re-chunking)
Heads = Mapping[str, tuple[int, Callable[[], str]]]


def chunk(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Split ``text`` at its front matter, Markdown headings and then blank lines into pieces <= ``limit``."""
    meta, body = split_front_matter(text)
    sections: list[list[str]] = [[]] if meta is None else [meta.splitlines(), []]
    for line in body.splitlines():
        if _HEADING.match(line) and sections[-1]:
            sections.append([])
        sections[-1].append(line)
    pieces: list[str] = []
    for section in sections:
        pieces += _split("\n".join(section).strip(), limit)
    return [p for p in pieces if p]


def _split(text: str, limit: int) -> list[str]:
    if len(text) <= limit:
        return [text]
    out: list[str] = []
    current = ""
    for para in re.split(r"\n\s*\n", text):
        while len(para) > limit:  # one huge paragraph: cut at the last space before the limit
            cut = para.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            out += [current] if current else []
            current = ""
            out.append(para[:cut].strip())
            para = para[cut:].strip()
        if current and len(current) + len(para) + 2 > limit:
            out.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    return out + ([current] if current else [])


def chunk_id(scope: str, path: str, version: int, number: int) -> str:
    """Deterministic message id of one chunk, so concurrent syncs never duplicate it."""
    return "fs-" + hashlib.sha256(f"{scope}\0{path}\0{version}\0{number}".encode()).hexdigest()[:32]


class FileIndex:
    """The search index of one scope's files, kept in the store namespace ``<scope>`` of kind ``files``."""

    def __init__(self, scope: str, settings: Settings, embedding: Any = None) -> None:
        self.scope = scope
        self.settings = settings
        self._embedding = embedding
        self.storage = MemoryStorage(scope, kind="files", settings=settings, embedding=embedding)

    def close(self) -> None:
        self.storage.close()

    def count(self) -> int:
        """Chunks held."""
        return self.storage.count()

    def clear(self) -> None:
        """Drop every chunk (the next sync re-chunks all files)."""
        self.storage.clean()
        self.storage = MemoryStorage(self.scope, kind="files", settings=self.settings, embedding=self._embedding)

    def indexed(self) -> dict[str, dict[int, list[Message]]]:
        """What the index holds: path -> version -> chunk messages."""
        held: dict[str, dict[int, list[Message]]] = {}
        for message in self.storage.recent(self.storage.count()):
            meta = message.metadata
            held.setdefault(str(meta.get("path")), {}).setdefault(int(meta.get("version", 0)), []).append(message)
        return held

    def sync(self, heads: Heads) -> int:
        """Bring the index in line with ``heads``; returns the number of chunks added."""
        held = self.indexed()
        stale = [
            m
            for path, versions in held.items()
            for v, ms in versions.items()
            if path not in heads or v != heads[path][0]
            for m in ms
        ]
        for message in stale:
            self.storage.delete(message)
        fresh: list[Message] = []
        for path, (version, read) in heads.items():
            if version in held.get(path, {}):
                continue
            for number, piece in enumerate(chunk(read())):
                meta = {"path": path, "version": version, "chunk": number, "scope": self.scope}
                fresh.append(
                    Message(
                        content=piece, id=chunk_id(self.scope, path, version, number), role="memory-file", metadata=meta
                    )
                )
        return self.storage.add_batch(fresh) if fresh else 0

    def search(self, query: str, k: int, heads: Mapping[str, int] | None = None) -> list[SearchHit]:
        """The ``k`` best chunks, one hit per chunk, dropping any whose file moved on since the sync."""
        hits = self.storage.search(query, max(k * 3, 10), mode="hybrid")
        out: list[SearchHit] = []
        for hit in hits:
            meta = hit.message.metadata
            path, version = str(meta.get("path")), int(meta.get("version", 0))
            if heads is not None and heads.get(path) != version:
                continue
            out.append(SearchHit(path, hit.message.content, float(hit.score), version, self.scope))
        return out[:k]
