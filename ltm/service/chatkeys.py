"""Where the service keeps a namespace's chats in the KV backend, and the one-time move from the old keys.

A chat of namespace ``N`` with id ``C`` is the BrainMemory key ``nschat:<N percent-encoded>:<C>``. The
encoded namespace holds no ``:`` (nor ``/``, ``{``, ``}`` or a glob character), so the first ``:`` after it
ends it: a key scoped to ``alice`` can never name a chat of ``alice:work``, whatever the chat id holds, and
a listing matches the exact namespace.

Before this layout the service used ``chat:<N>:<C>``, which is ambiguous (``chat:alice:work:c1`` is chat
``work:c1`` of ``alice`` and chat ``c1`` of ``alice:work``). :func:`migrate_chat_keys` moves those chats
once, when the service opens its KV store: a key is read as namespace = everything up to its last ``:``
(chat ids from before the move that held a ``:`` end up in the longer namespace, never in a shorter one).
The move copies history, summary and TTL to the new key, then deletes the old one; it is safe to repeat
after a crash half-way.
"""

from __future__ import annotations

import logging

from ltm.brain import NAMESPACE_CHATS, BrainMemory
from ltm.errors import InvalidInput
from ltm.kv import KVStore

__all__ = ["PREFIX", "chat_ids", "chat_key", "check_chat_id", "migrate_chat_keys"]

log = logging.getLogger("ltm.service")

PREFIX = NAMESPACE_CHATS
_OLD = "brain:{chat:"
_HISTORY = ":history"
MAX_CHAT_ID = 256


def check_chat_id(chat_id: str) -> str:
    """``chat_id`` when it is a usable chat id, else InvalidInput naming the limit."""
    if not chat_id or len(chat_id) > MAX_CHAT_ID:
        raise InvalidInput(f"a chat id must be 1 to {MAX_CHAT_ID} characters long, got {len(chat_id)}")
    if "\x00" in chat_id:
        raise InvalidInput("a chat id cannot contain NUL characters")
    return chat_id


def chat_key(namespace: str, chat_id: str) -> str:
    """The BrainMemory key of a namespace's chat (library code sharing a chat with the service uses it too)."""
    return BrainMemory.namespace_key(namespace, chat_id)


def chat_ids(kv: KVStore, namespace: str) -> list[str]:
    """The ids of the namespace's chats (those whose TTL has not run out), sorted; exactly this namespace."""
    prefix = f"brain:{{{chat_key(namespace, '')}"
    return sorted({k[len(prefix) : -1] for k in kv.keys(prefix + "*}") if k.endswith("}")})


def migrate_chat_keys(kv: KVStore) -> int:
    """Move every chat still under an old ``chat:<namespace>:<chat_id>`` key to its unambiguous key; returns
    how many were moved (logged as a count only: namespace names stay out of the log)."""
    found = kv.keys(_OLD + "*")
    bases = {k for k in found if k.endswith("}")}
    bases |= {k[: -len(_HISTORY)] for k in found if k.endswith("}" + _HISTORY)}
    moved = 0
    for base in sorted(bases):
        rest = base[len(_OLD) : -1]
        namespace, sep, chat_id = rest.rpartition(":")
        if not sep:
            continue  # not a key the service wrote (it always has a namespace and a chat id)
        _move(kv, base, f"brain:{{{chat_key(namespace, chat_id)}}}")
        moved += 1
    if moved:
        log.warning("moved %d chats to namespace-exact keys", moved)
    return moved


def _move(kv: KVStore, old: str, new: str) -> None:
    """Copy ``old`` (hash) and ``old:history`` (list) to ``new`` with their TTLs, then delete the old ones. A
    chat already at ``new`` (a move that crashed after copying) is kept as it is."""
    if not kv.exists(new) and not kv.exists(new + _HISTORY):
        meta, items = kv.hgetall(old), kv.lrange(old + _HISTORY)
        ttl = kv.ttl(old) or kv.ttl(old + _HISTORY)
        with kv.atomic() as tx:
            tx.hset(new, meta)
            tx.rpush(new + _HISTORY, *items)
            if ttl is not None:
                tx.expire(new, ttl)
                tx.expire(new + _HISTORY, ttl)
    with kv.atomic() as tx:
        tx.delete(old, old + _HISTORY)
