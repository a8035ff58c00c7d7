"""``forget_user``: erase one user across every memory kind that holds data for them, with one receipt.

Where a user's data lives, and how it is found (docs/forget.md has the guarantees and their limits per backend):

- the long-term store: every namespace of every kind on the configured engine (the data root's directories, or
  the PostgreSQL database's namespaces) holding messages scoped to the user (metadata ``user_id``, what
  :func:`~ltm.store.scoped` and every adapter's ``user_id`` write); experience records whose context names the
  user (``{"user_id": ...}`` in the lesson's context); each is erased with :meth:`MemoryStorage.forget`;
- memory files of the user's scope (``user:<id>``): its keys in the KV store (files, versions, pending changes,
  the audit log) and its search index (the store namespace ``user:<id>`` of kind ``files``, erased whole);
- BrainMemory chats of the user: the chat keys :meth:`BrainMemory.to_redis_key` makes (``prefix:user_id:chat_id``),
  whatever the prefix and the chat;
- step records (:class:`~ltm.steps.StepMemory` lives in the process only): the items whose ``user_id`` field names
  the user, in the step memories passed as ``steps``.

Then the KV store drops the bytes it keeps of deleted keys (:func:`ltm.kv.erase.compact`).
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.kv import KVStore, open_kv
from ltm.kv.erase import compact
from ltm.llm.names import LOCAL_MODEL_NAME, configured_model_name
from ltm.steps import StepMemory
from ltm.store import ForgetReceipt, MemoryStorage, database_namespaces, namespaces

__all__ = ["UserForgetReceipt", "forget_user"]

_HASH_MODEL = re.compile(r"hash-(\d+)")


@dataclass(frozen=True)
class UserForgetReceipt:
    """What :func:`forget_user` erased: ``stores``, one :class:`~ltm.store.ForgetReceipt` per store namespace that
    held something of the user (kind and name in ``namespaces``, same order); ``chats``: the BrainMemory chat keys
    erased; ``files``: the memory-file scopes erased; ``kv_keys``: keys deleted from the KV store (chats and
    files); ``steps``: step records removed; ``kv_compaction``: what the KV store did to drop the bytes;
    ``skipped``: namespaces that could not be opened (kind/name: why), which still hold what they held."""

    user_id: str
    reason: str | None
    at: float
    stores: tuple[ForgetReceipt, ...] = ()
    namespaces: tuple[str, ...] = ()
    chats: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    kv_keys: int = 0
    steps: int = 0
    kv_compaction: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()

    @property
    def removed(self) -> int:
        """Memories removed from the long-term store (every namespace), plus chats and step records."""
        return sum(r.removed for r in self.stores) + len(self.chats) + self.steps

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the CLI's ``--json``, the REST API)."""
        return {
            "user_id": self.user_id,
            "reason": self.reason,
            "at": self.at,
            "removed": self.removed,
            "stores": [{"kind_namespace": n, **r.to_dict()} for n, r in zip(self.namespaces, self.stores, strict=True)],
            "chats": list(self.chats),
            "files": list(self.files),
            "kv_keys": self.kv_keys,
            "steps": self.steps,
            "kv_compaction": list(self.kv_compaction),
            "skipped": list(self.skipped),
        }


def forget_user(
    user_id: str,
    settings: Settings | None = None,
    *,
    reason: str | None = None,
    steps: Iterable[StepMemory] = (),
    kv: KVStore | None = None,
) -> UserForgetReceipt:
    """Erase ``user_id`` from every memory kind on the settings' backends (see the module); the combined receipt.

    ``kv``: the KV store of chats and memory files when not the settings' (:func:`~ltm.kv.open_kv`); ``steps``:
    step memories of this process to remove the user's items from. Idempotent: a second call finds nothing."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidInput(f"forget_user needs a user id (a non-empty str), got {user_id!r}")
    settings = settings if settings is not None else Settings.load()
    at = time.time()
    named, receipts, skipped = _stores(user_id, settings, reason)
    own_kv = kv is None
    store = open_kv(settings) if kv is None else kv
    try:
        chats, files, deleted = _kv_erase(store, user_id)
        # always: a chat deleted or folded into its summary before left its bytes behind too
        kv_compaction = compact(store)
    finally:
        if own_kv:
            store.close()
    removed_steps = sum(_drop_steps(memory, user_id) for memory in steps)
    return UserForgetReceipt(
        user_id=user_id,
        reason=reason,
        at=at,
        stores=tuple(receipts),
        namespaces=tuple(named),
        chats=tuple(chats),
        files=tuple(files),
        kv_keys=deleted,
        steps=removed_steps,
        kv_compaction=kv_compaction,
        skipped=tuple(skipped),
    )


# -- the long-term store -------------------------------------------------------------------------------------
def _stores(user_id: str, settings: Settings, reason: str | None) -> tuple[list[str], list[ForgetReceipt], list[str]]:
    named: list[str] = []
    receipts: list[ForgetReceipt] = []
    skipped: list[str] = []
    scope = f"user:{user_id}"
    for kind, name, model in _all_namespaces(settings):
        try:
            store = MemoryStorage(name, kind=kind, settings=_reading(settings, model))
        except Exception as exc:  # noqa: BLE001 - reported in the receipt: the other namespaces are still erased
            skipped.append(f"{kind}/{name}: {type(exc).__name__}: {exc}")
            continue
        try:
            if kind == "files" and name == scope:
                receipt = _erase_namespace(store, reason)
            else:
                receipt = store.forget(filters=_user_filter(kind, user_id), reason=reason)
                earlier = sorted(_deleted_ids(store, user_id) - set(receipt.ids))
                if earlier:  # deleted before, their content kept in history: erased too
                    receipt = _merged(receipt, store.forget(earlier, reason=reason))
        finally:
            store.close()
        if receipt.ids:
            named.append(f"{kind}/{name}")
            receipts.append(receipt)
    return named, receipts, skipped


def _all_namespaces(settings: Settings) -> Iterator[tuple[str, str, str | None]]:
    """(kind, name, recorded model) of every namespace on the settings' engine."""
    if settings.store_url:
        for found in database_namespaces(settings.store_url):
            yield found.kind, found.name, found.model
        return
    for info in namespaces(settings):
        if info.problem is None:
            yield info.kind, info.namespace, info.embedding_model


def _user_filter(kind: str, user_id: str) -> dict[str, Any]:
    """The user's messages: scoped to them, and in experience namespaces lessons whose context names them."""
    scoped: dict[str, Any] = {"user_id": user_id}
    if kind != "experience":
        return scoped
    named = json.dumps({"user_id": user_id}, ensure_ascii=False)[1:-1]  # '"user_id": "u1"', as lessons store it
    return {"OR": [scoped, {"metadata.context": {"contains": named}}]}


def _deleted_ids(store: MemoryStorage, user_id: str) -> set[str]:
    """Ids whose history still holds a body of the user's (a message deleted or updated before): what a filter on
    the stored messages cannot see."""
    found = set()
    for message_id, _, old, _ in store.history_rows():
        if old and user_id in old and _belongs(old, user_id):
            found.add(message_id)
    return found


def _belongs(body: str, user_id: str) -> bool:
    try:
        data = json.loads(body)
    except ValueError:
        return False
    metadata = data.get("metadata") if isinstance(data, dict) else None
    if not isinstance(metadata, dict):
        return False
    if metadata.get("user_id") == user_id:
        return True
    context = metadata.get("context")  # an experience lesson's context, as JSON text
    return isinstance(context, str) and json.dumps({"user_id": user_id}, ensure_ascii=False)[1:-1] in context


def _merged(first: ForgetReceipt, second: ForgetReceipt) -> ForgetReceipt:
    """One receipt for two forgets of one namespace."""
    counts = ("removed", "rows", "keyword_entries", "vectors", "history_scrubbed", "staged", "caches", "snapshots")
    return dataclasses.replace(
        second,
        ids=first.ids + second.ids,
        not_found=first.not_found + second.not_found,
        compaction=first.compaction + second.compaction,
        **{name: getattr(first, name) + getattr(second, name) for name in counts},
    )


def _erase_namespace(store: MemoryStorage, reason: str | None) -> ForgetReceipt:
    """Every message of the namespace, and every id its history names, forgotten; then the namespace dropped."""
    ids = {m.id for m, _ in store.export()} | {row[0] for row in store.history_rows()}
    receipt = store.forget(sorted(ids), reason=reason) if ids else None
    store.clean()
    if receipt is None:
        return ForgetReceipt(store.namespace, "", 0, (), (), reason, time.time())
    return receipt


def _reading(settings: Settings, recorded: str | None) -> Settings:
    """``settings`` naming the model a namespace records (forget embeds nothing, so none is loaded)."""
    if recorded is None or recorded == configured_model_name(settings):
        return settings
    if recorded == LOCAL_MODEL_NAME:
        return settings.model_copy(update={"embedding": "local"})
    hashed = _HASH_MODEL.fullmatch(recorded)
    if hashed:
        return settings.model_copy(update={"embedding": "hash", "embedding_dim": int(hashed.group(1))})
    return settings.model_copy(update={"embedding": "openai", "embedding_model": recorded})


# -- chats and memory files in the KV store ------------------------------------------------------------------
def _kv_erase(kv: KVStore, user_id: str) -> tuple[list[str], list[str], int]:
    """Delete the user's chats and memory files; (chat keys, file scopes, KV keys deleted)."""
    user = _glob_escape(user_id)
    chats: dict[str, list[str]] = {}
    for key in kv.keys(f"brain:{{*:{user}:*}}*"):  # BrainMemory: brain:{prefix:user:chat}[:history]
        inner = key[len("brain:{") : key.find("}")]
        if f":{user_id}:" in inner:
            chats.setdefault(inner, []).append(key)
    deleted = 0
    for keys in chats.values():  # one chat's keys share a hash slot: one DEL each
        deleted += kv.delete(*keys)
    scope = f"user:{user_id}"
    file_keys = kv.keys(f"fs:{{{_glob_escape(scope)}}}:*")
    if file_keys:
        deleted += kv.delete(*file_keys)
    return sorted(chats), [scope] if file_keys else [], deleted


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


# -- step records (in the process) ---------------------------------------------------------------------------
def _drop_steps(memory: StepMemory, user_id: str) -> int:
    kept = [item for item in memory.content if getattr(item, "user_id", None) != user_id]
    removed = len(memory.content) - len(kept)
    if removed:
        memory.load(kept)
    return removed
