"""How a batch's puts and deletes reach the store: in ONE transaction, a put on a stored key as a new version.

Every value is checked and every text embedded before anything is written. Then, in one transaction of the
store: the deleted items go (every version of them: a LangGraph delete deletes), a put on a key with a current
version supersedes it (:meth:`MemoryStorage.supersede_batch`: the old version's messages are closed, not erased,
so a read ``as_of`` a past time still finds them), and a put on a new key stores its first version, removing
what an earlier item of that key may have left (versions closed before it expired). A batch of first versions
and deletes only, the common case, is one :meth:`MemoryStorage.replace_batch`.

Two writers racing on a key: the store refuses the second supersession of a version inside its transaction, and
the batch is planned again from what is stored then (each writer's put becomes a version, the last one current).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.store.base import PutOp

from ltm.errors import InvalidInput, NotFound
from ltm.integrations.langgraph.records import is_head, item_filter, item_key, item_parts
from ltm.message import Message
from ltm.store import NO_VECTOR, MemoryStorage

__all__ = ["REASON", "write_puts"]

REASON = "langgraph put"  # the reason each supersession records in the history
_TRIES = 16  # plans of a batch whose keys other writers keep changing, before it gives up
# what the store says when another writer changed an item between this batch's read and its transaction: a
# version superseded, a first version stored, or one stored again since (so it began after this batch's time)
_RACES = ("superseded already", "stored already", "a version replaces one that began before it")
_PAGE = 10_000  # stems per "in" filter


def write_puts(storage: MemoryStorage, puts: Sequence[PutOp], texts: Callable[[PutOp], list[str]]) -> None:
    """Apply ``puts`` (the last put of each key; ``value`` None deletes) in one transaction. ``texts(op)``: the
    texts ``op`` is indexed on (it checks the value)."""
    indexed = {(op.namespace, op.key): texts(op) for op in puts if op.value is not None}
    flat = [t for found in indexed.values() for t in found]
    embedded = iter(storage.embed_texts(flat)) if flat else iter(())  # the model runs before anything is written
    vectors = {k: [next(embedded) for _ in found] for k, found in indexed.items()}
    stems = [item_key(op.namespace, op.key) for op in puts]
    for _ in range(_TRIES):
        try:
            _commit(storage, puts, stems, indexed, vectors, _current(storage, stems))
            return
        except NotFound:  # an item deleted meanwhile: plan again
            continue
        except InvalidInput as exc:  # a version superseded, or a first version stored, meanwhile: plan again
            if not any(race in str(exc) for race in _RACES):
                raise
    raise InvalidInput(f"the items of this batch changed {_TRIES} times while it was written; run it again")


def _current(storage: MemoryStorage, stems: Sequence[str]) -> dict[str, list[Message]]:
    """The messages of each item's current version (a default read: superseded versions are left out)."""
    out: dict[str, list[Message]] = {}
    unique = list(dict.fromkeys(stems))
    for start in range(0, len(unique), _PAGE):
        for message in storage.iter(item_filter(unique[start : start + _PAGE]), page=_PAGE):
            out.setdefault(message.metadata["lg_item"], []).append(message)
    return out


def _commit(
    storage: MemoryStorage,
    puts: Sequence[PutOp],
    stems: Sequence[str],
    indexed: dict[tuple[tuple[str, ...], str], list[str]],
    vectors: dict[tuple[tuple[str, ...], str], list[Any]],
    current: dict[str, list[Message]],
) -> None:
    now = time.time()
    gone: list[str] = []  # items whose every stored message goes first: deleted ones, and new keys' leftovers
    fresh: list[Message] = []
    fresh_vectors: list[Any] = []
    versions: list[tuple[list[str], list[Message]]] = []
    version_vectors: list[Any] = []
    for op, stem in zip(puts, stems, strict=True):
        found = current.get(stem, [])
        heads = sorted((m for m in found if is_head(m)), key=lambda m: float(m.metadata["lg_updated"]))
        if op.value is None:
            if found:
                gone.append(stem)
            continue
        before = heads[-1] if heads else None
        texts = indexed[(op.namespace, op.key)]
        parts = item_parts(
            op.namespace,
            op.key,
            op.value,
            texts,
            ttl_minutes=op.ttl,
            updated=now,
            created=before.metadata["lg_created"] if before is not None else now,
            version="" if before is None else secrets.token_hex(6),
            stem=stem,
        )
        # one vector per part: its text's, or NO_VECTOR for an unindexed item's head (no search reads it: every
        # search filters on lg_indexed)
        own = vectors[(op.namespace, op.key)] if texts else [NO_VECTOR]
        if before is None:
            gone.append(stem)
            fresh.extend(p.message for p in parts)
            fresh_vectors.extend(own)
        else:  # the heads first: the version's links name the first old and the first new message
            olds = [m.id for m in heads] + [m.id for m in found if not is_head(m)]
            versions.append((olds, [p.message for p in parts]))
            version_vectors.extend(own)
    delete = item_filter(gone) if gone else None
    if not versions:
        if fresh or delete is not None:
            storage.replace_batch(fresh, vectors=fresh_vectors if fresh else None, delete=delete)
        return
    pairs: list[tuple[Sequence[str], Sequence[Message]]] = list(versions)
    if fresh:
        pairs.append(([], fresh))
    storage.supersede_batch(pairs, vectors=version_vectors + fresh_vectors, delete=delete, reason=REASON)
