"""``ltm migrate``: move every namespace between the embedded store (a data root) and PostgreSQL, either way, or
from one PostgreSQL database into another (into a database partitioned by namespace: ``--to-partitions N``).

Streaming: each namespace is read with :meth:`MemoryStorage.export` in pages and written with ``add_batch``
(one transaction per page), so memory stays flat whatever the size. Resumable: ``add_batch`` skips ids the
destination already holds before any embedding, so running the same command again after an interruption
finishes the job without duplicates or model calls. Vectors are carried over when the destination's
embedding model is the source namespace's (no model call at all); otherwise the destination re-embeds. The
pages are written under :meth:`MemoryStorage.bulk_load`: on PostgreSQL a new namespace's HNSW index is built
once after the copy, not one graph insert per row.
Scopes and expiry ride in each message's metadata, so they travel with it; the audit trail (``history``) is
carried after the messages, each event with its original time, replacing the ADD events the copy wrote (so a
second run leaves one trail). Verified: per namespace, the message counts must match, and for a sample of
messages the destination must return the same message by id and find it by its own content in a dense search
(with the same cosine as the source when vectors were carried).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltm.cli.common import EXIT_OK, AddCommand, Options, settings_from
from ltm.cli.output import visible
from ltm.config import Settings, mask_url
from ltm.errors import InvalidInput, StoreCorrupted

COMMANDS = {
    "migrate": "copy every namespace between a data root and postgresql:// (either way) or two PostgreSQL "
    "databases; resumable, verified",
}

_PAGE = 1000


@dataclass(frozen=True)
class Source:
    """One namespace to move: its kind, name and the embedding model its vectors came from."""

    kind: str
    name: str
    model: str


def _is_url(place: str) -> bool:
    return place.split("://", 1)[0] in ("postgresql", "postgres")


def _settings_for(place: str, base: Settings, *, source: bool = False) -> Settings:
    """Settings on ``place``. A source database is read with the layout it has (plain or partitioned by
    namespace); a destination database is created with ``store_partitions`` (and refused when an existing one
    has another layout)."""
    if _is_url(place):
        if source:
            from ltm.store import database_partitions

            return base.with_(store_url=place, store_partitions=database_partitions(place))
        return base.with_(store_url=place)
    return base.with_(storage_dir=Path(place).expanduser(), store_url=None)


def _sources(place: str, kind: str | None) -> Iterator[Source]:
    if _is_url(place):
        from ltm.store import database_namespaces

        for info in database_namespaces(place):
            if kind is None or info.kind == kind:
                yield Source(info.kind, info.name, info.model)
        return
    root = Path(place).expanduser()
    if not root.is_dir():
        raise InvalidInput(
            f"--from {place}: no such data root; pass the folder holding <kind>/<namespace>/ "
            "directories (LTM_STORAGE_DIR), or a postgresql:// URL"
        )
    for manifest in sorted(root.glob("*/*/manifest.json")):
        data = json.loads(manifest.read_text("utf-8"))
        if kind is None or manifest.parent.parent.name == kind:
            yield Source(manifest.parent.parent.name, str(data["namespace"]), str(data["embedding_model"]))


def migrate_namespace(
    source: Source, src: Settings, dst: Settings, *, sample: int = 5, embedding: Any = None
) -> dict[str, Any]:
    """Copy one namespace and verify it; a summary dict. StoreCorrupted when the verification fails."""
    from ltm.store import MemoryStorage

    with (
        MemoryStorage(source.name, kind=source.kind, settings=src, embedding=embedding) as a,
        MemoryStorage(source.name, kind=source.kind, settings=dst, embedding=embedding) as b,
    ):
        carry = b.embedder.model == source.model
        added = 0
        picks: list[str] = []
        every = max(1, a.count() // max(sample, 1))
        page: list[Any] = []
        vectors: list[np.ndarray] = []

        def flush() -> int:
            stack = np.stack(vectors) if carry and vectors else None
            done = b.add_batch(page, vectors=stack) if page else 0
            page.clear()
            vectors.clear()
            return done

        with b.bulk_load():  # on PostgreSQL a new namespace's HNSW index is built once, after the copy
            for total, (message, vector) in enumerate(a.export(with_vectors=carry, batch=_PAGE), 1):
                page.append(message)
                if carry and vector is not None:
                    vectors.append(vector)
                if (total - 1) % every == 0 and len(picks) < sample:
                    picks.append(message.id)
                if len(page) >= _PAGE:
                    added += flush()
            added += flush()
        counts = (a.count(), b.count())
        if counts[0] != counts[1]:
            raise StoreCorrupted(
                f"{source.kind}/{source.name}: {counts[0]} messages in the source but {counts[1]} "
                "in the destination after the copy; run the command again (it resumes)"
            )
        for message_id in picks:
            _verify(a, b, message_id, carry)
        events = a.history_rows()
        b.load_history(events)  # the trail as it was (times included), not the copy's fresh ADDs
        return {
            "kind": source.kind,
            "namespace": source.name,
            "messages": counts[1],
            "added": added,
            "vectors": "carried" if carry else "re-embedded",
            "verified": len(picks),
            "history": len(events),
        }


def _verify(a: Any, b: Any, message_id: str, carry: bool) -> None:
    original, copy = a.get(message_id), b.get(message_id)
    if original.dump() != copy.dump():
        raise StoreCorrupted(f"message {message_id!r} differs after the copy; run the command again")
    hits = b.search(copy.content, k=10, mode="dense")
    mine = [h for h in hits if h.message.content == copy.content]
    if not mine:
        raise StoreCorrupted(f"message {message_id!r} is not found by its own content in the destination")
    if carry:
        before = [h for h in a.search(original.content, k=10, mode="dense") if h.message.content == original.content]
        if before and abs(before[0].score - mine[0].score) > 1e-3:
            raise StoreCorrupted(
                f"message {message_id!r}: cosine {mine[0].score:.4f} in the destination but "
                f"{before[0].score:.4f} in the source; the vectors did not carry over"
            )


def cmd_migrate(args: argparse.Namespace) -> int:
    if not (_is_url(args.source) or _is_url(args.target)) or args.source == args.target:
        raise InvalidInput(
            "migrate copies between a data root and a postgresql:// URL, or between two PostgreSQL "
            "databases (--from DIR --to postgresql://..., --from postgresql://... --to DIR, or "
            "--from postgresql://old --to postgresql://new)"
        )
    base = settings_from(args)
    src = _settings_for(args.source, base, source=True)
    target = base.with_(embedding=args.to_embedding) if args.to_embedding else base
    if args.to_partitions is not None:
        target = target.with_(store_partitions=args.to_partitions)
    dst = _settings_for(args.target, target)
    moved = 0
    for source in _sources(args.source, args.only_kind):
        summary = migrate_namespace(source, src, dst, sample=args.verify)
        moved += 1
        print(
            f"{visible(summary['kind'])}/{visible(summary['namespace'])}: {summary['messages']:,} messages "
            f"({summary['added']:,} new), vectors {summary['vectors']}, "
            f"{summary['verified']} sampled searches verified, {summary['history']:,} history events",
            file=sys.stdout,
        )
    print(visible(f"migrated {moved} namespace(s) from {_shown(args.source)} to {_shown(args.target)}"))
    return EXIT_OK


def _shown(place: str) -> str:
    return mask_url(place) if _is_url(place) else place


def register(add: AddCommand, opts: Options) -> None:
    p = add("migrate")
    p.add_argument("--from", dest="source", required=True, help="a data root (DIR) or a postgresql:// URL")
    p.add_argument("--to", dest="target", required=True, help="a postgresql:// URL or a data root (DIR)")
    p.add_argument("--kind", dest="only_kind", help="only namespaces of this kind")
    p.add_argument("--verify", type=int, default=5, help="sampled searches per namespace (default 5)")
    p.add_argument(
        "--to-embedding",
        choices=["local", "openai", "hash"],
        help="the destination's embedding when it differs (the messages are then re-embedded)",
    )
    p.add_argument(
        "--to-partitions",
        type=int,
        metavar="N",
        help="a new destination database's hash partitions by namespace (default LTM_STORE_PARTITIONS)",
    )
    p.set_defaults(func=cmd_migrate)
