"""RemoteStorage: :class:`~ltm.store.MemoryStorage`'s interface over ``ltm serve``'s HTTP API."""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

import httpx
import numpy as np

from ltm.client.calls import Call, asend, path_of, send
from ltm.errors import InvalidInput, NotFound
from ltm.message import Message, any_to_str
from ltm.store.records import ForgetReceipt, MemoryHit, MessagePage, StoreStats

__all__ = ["RemoteStorage"]

DEFAULT_URL = "http://127.0.0.1:8765"


def _messages(body: Any) -> list[Message]:
    return [Message.load(m) for m in body["messages"]]


def _hits(body: Any) -> list[MemoryHit]:
    return [
        MemoryHit(Message.load(h["message"]), float(h["score"]), tuple(h["signals"]), similarity=h.get("similarity"))
        for h in body["hits"]
    ]


def _listed(messages: Iterable[Message] | Message) -> list[Message]:
    listed = [messages] if isinstance(messages, Message) else list(messages)
    for m in listed:
        if not isinstance(m, Message):
            raise InvalidInput(f"expected Message objects, got {type(m).__name__}")
    return listed


def _jsonable(value: Any) -> Any:
    """Filters as JSON: action classes become their ``cause_by`` strings (as the library reads them), sets
    and tuples become lists."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, type):
        return any_to_str(value)
    return value


def _time(value: Any) -> Any:
    """A time for the server: a datetime or date as ISO 8601 text, unix seconds and ISO text as they are."""
    return value.isoformat() if isinstance(value, datetime | date) else value


def _times(as_of: Any, known_at: Any) -> dict[str, Any]:
    """The ``as_of`` / ``known_at`` parameters that are given."""
    return {k: _time(v) for k, v in (("as_of", as_of), ("known_at", known_at)) if v is not None}


def _text_of(message: Message | str) -> str:
    if isinstance(message, Message):
        return message.content
    if isinstance(message, str):
        return message
    raise InvalidInput(f"expected a Message or a str, got {type(message).__name__}")


class RemoteStorage:
    """One namespace of a remote ltm server, used like a :class:`~ltm.store.MemoryStorage`.

    ``url`` is the server's base URL, ``api_key`` a key from ``ltm keys create`` (None for a ``--no-auth``
    server). Errors are the library's own (``NotFound``, ``InvalidInput``, ``Forbidden``...), rebuilt from the
    server's JSON; an unreachable server raises ``BackendUnavailable``. ``transport`` (an httpx transport) is
    for tests. Thread-safe like httpx's clients; the async methods use their own ``httpx.AsyncClient``.
    """

    def __init__(
        self,
        namespace: str | None = None,
        *,
        url: str = DEFAULT_URL,
        api_key: str | None = None,
        timeout: float = 60.0,
        recover_recent: int = 100,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.namespace = namespace
        self.recover_recent = recover_recent
        self._url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._transport = transport
        self._client = self._new_client()
        self._aclient: httpx.AsyncClient | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._threshold: float | None = None
        self._open = namespace is not None

    def __repr__(self) -> str:  # no key, no URL: reprs end up in logs
        return f"RemoteStorage(namespace={self.namespace!r}, open={self._open})"

    # -- plumbing ------------------------------------------------------------------------------------------
    def _ns(self) -> str:
        if self.namespace is None:
            raise InvalidInput("no namespace is open: pass RemoteStorage(namespace) or call recover_memory(id)")
        return self.namespace

    def _new_client(self) -> httpx.Client:
        return httpx.Client(base_url=self._url, headers=self._headers, timeout=self._timeout, transport=self._transport)

    def _call(self, call: Call[Any]) -> Any:
        if self._client.is_closed:  # used again after close(): reconnect, as MemoryStorage reopens
            self._client = self._new_client()
        self._open = True
        return send(self._client, call)

    async def _acall(self, call: Call[Any]) -> Any:
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:  # connections belong to the loop that made them
            self._aclient = httpx.AsyncClient(base_url=self._url, headers=self._headers, timeout=self._timeout)
            self._aloop = loop
        self._open = True
        return await asend(self._aclient, call)

    # -- the calls, shared by the sync and async twins ------------------------------------------------------
    def _add_call(self, messages: Iterable[Message] | Message, vectors: Any) -> Call[int]:
        if vectors is not None:
            raise InvalidInput("RemoteStorage embeds on the server: add_batch(vectors=...) is not supported")
        body = {"messages": [m.to_dict() for m in _listed(messages)]}
        return Call("POST", path_of(self._ns(), "/messages"), lambda r: int(r["added"]), json=body)

    def _search_call(
        self, query: str, k: int, mode: str, filters: Mapping[str, Any] | None, as_of: Any = None, known_at: Any = None
    ) -> Call[builtins.list[MemoryHit]]:
        body = {"query": query, "k": k, "mode": mode, "filters": _jsonable(filters) if filters else None}
        body.update(_times(as_of, known_at))
        return Call("POST", path_of(self._ns(), "/search"), _hits, json=body)

    def _similar_call(self, message: Message | str, k: int) -> Call[builtins.list[Message]]:
        text = _text_of(message)
        return Call("POST", path_of(self._ns(), "/similar"), _messages, json={"text": text, "k": k})

    def _embed_call(self, texts: builtins.list[str]) -> Call[np.ndarray]:
        def parse(body: Any) -> np.ndarray:
            return np.asarray(body["vectors"], dtype=np.float32).reshape(len(texts), -1)

        return Call("POST", path_of(self._ns(), "/embed"), parse, json={"texts": list(texts)})

    # -- MetaGPT's API -------------------------------------------------------------------------------------
    @property
    def is_initialized(self) -> bool:
        """True once a namespace is chosen and used; False after :meth:`clean` or :meth:`close`."""
        return self._open and self.namespace is not None

    @property
    def threshold(self) -> float:
        """The server's similarity threshold for this namespace (a cosine in [0, 1])."""
        if self._threshold is None:
            self._threshold = float(self._stats()["threshold"])
        return self._threshold

    def recover_memory(self, role_id: str) -> builtins.list[Message]:
        """Use ``role_id``'s namespace; returns its ``recover_recent`` newest messages, oldest first."""
        self.namespace, self._threshold = role_id, None
        return self.recent(self.recover_recent)

    def add(self, message: Message) -> bool:
        """Store one message (committed on the server before this returns); False when its id is stored."""
        return self.add_batch([message]) == 1

    async def aadd(self, message: Message) -> bool:
        """Async twin of :meth:`add`."""
        return await self.aadd_batch([message]) == 1

    def add_batch(self, messages: Iterable[Message], *, vectors: Any = None) -> int:
        """Store messages in one server transaction (all or none); returns how many were new."""
        return int(self._call(self._add_call(messages, vectors)))

    async def aadd_batch(self, messages: Iterable[Message], *, vectors: Any = None) -> int:
        """Async twin of :meth:`add_batch`."""
        return int(await self._acall(self._add_call(messages, vectors)))

    def search_similar(self, message: Message | str, k: int = 4) -> builtins.list[Message]:
        """Stored messages at or above the similarity threshold, best first."""
        result: builtins.list[Message] = self._call(self._similar_call(message, k))
        return result

    async def asearch_similar(self, message: Message | str, k: int = 4) -> builtins.list[Message]:
        """Async twin of :meth:`search_similar`."""
        result: builtins.list[Message] = await self._acall(self._similar_call(message, k))
        return result

    def persist(self) -> None:
        """Nothing to do: the server commits every add before answering."""
        self._ns()

    def clean(self) -> None:
        """Delete the namespace's data on the server; ``is_initialized`` becomes False."""
        self._call(Call("DELETE", path_of(self._ns(), ""), lambda r: None))
        self._open = False

    # -- beyond MetaGPT ------------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int = 10,
        *,
        mode: str = "hybrid",
        filters: Mapping[str, Any] | None = None,
        as_of: Any = None,
        known_at: Any = None,
    ) -> builtins.list[MemoryHit]:
        """The ``k`` best hits for ``query`` valid now, or ``as_of`` / ``known_at`` a time (see
        :meth:`MemoryStorage.search`)."""
        result: builtins.list[MemoryHit] = self._call(self._search_call(query, k, mode, filters, as_of, known_at))
        return result

    async def asearch(
        self,
        query: str,
        k: int = 10,
        *,
        mode: str = "hybrid",
        filters: Mapping[str, Any] | None = None,
        as_of: Any = None,
        known_at: Any = None,
    ) -> builtins.list[MemoryHit]:
        """Async twin of :meth:`search`."""
        call = self._search_call(query, k, mode, filters, as_of, known_at)
        result: builtins.list[MemoryHit] = await self._acall(call)
        return result

    def supersede(self, old_id: str, new: Message | str, *, reason: str | None = None) -> str:
        """Store ``new`` as the next version of ``old_id``; its id (see :meth:`MemoryStorage.supersede`)."""
        message = Message(new) if isinstance(new, str) else new
        body = {"message": message.to_dict(), "reason": reason}
        path = path_of(self._ns(), f"/messages/{old_id}/supersede")
        return str(self._call(Call("POST", path, lambda r: r["id"], json=body)))

    def versions(self, message_id: str) -> builtins.list[Message]:
        """The version chain ``message_id`` belongs to, oldest first (see :meth:`MemoryStorage.versions`)."""
        result: builtins.list[Message] = self._call(
            Call("GET", path_of(self._ns(), f"/messages/{message_id}/versions"), _messages)
        )
        return result

    def put(self, key: str, message: Message | str, *, reason: str | None = None) -> str:
        """Store ``message`` under ``key``, superseding the version stored there (see :meth:`MemoryStorage.put`)."""
        given = Message(message) if isinstance(message, str) else message
        body = {"key": key, "message": given.to_dict(), "reason": reason}
        return str(self._call(Call("PUT", path_of(self._ns(), "/keys"), lambda r: r["id"], json=body)))

    def current(self, key: str, *, as_of: Any = None, known_at: Any = None) -> Message | None:
        """The version under ``key`` now, or ``as_of`` / ``known_at`` a time; None when there is none."""
        params = {"key": key, **_times(as_of, known_at)}
        try:
            return Message.load(self._call(Call("GET", path_of(self._ns(), "/keys"), dict, params=params)))
        except NotFound:
            return None

    def list(
        self,
        filters: Mapping[str, Any] | None = None,
        *,
        limit: int = 100,
        cursor: str | None = None,
        as_of: Any = None,
        known_at: Any = None,
    ) -> MessagePage:
        """A page of stored messages valid now (or ``as_of`` / ``known_at`` a time), oldest first, and the cursor
        of the next (see :meth:`MemoryStorage.list`)."""
        params: dict[str, Any] = {"limit": limit, **_times(as_of, known_at)}
        if cursor is not None:
            params["cursor"] = cursor
        if filters:
            params["filters"] = json.dumps(_jsonable(filters))

        def parse(body: Any) -> MessagePage:
            return MessagePage(_messages(body), body["next_cursor"])

        page: MessagePage = self._call(Call("GET", path_of(self._ns(), "/messages"), parse, params=params))
        return page

    def get(self, message_id: str) -> Message:
        """The stored message with this id; NotFound otherwise."""
        return Message.load(self._call(Call("GET", path_of(self._ns(), f"/messages/{message_id}"), dict)))

    def delete(self, message_or_id: Message | str) -> bool:
        """Delete a message (or its id); False when it was not stored."""
        message_id = message_or_id.id if isinstance(message_or_id, Message) else str(message_or_id)
        return bool(self._call(Call("DELETE", path_of(self._ns(), f"/messages/{message_id}"), lambda r: r["deleted"])))

    def forget(
        self,
        ids: str | Iterable[str] | None = None,
        *,
        filters: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> ForgetReceipt:
        """Erase messages and every copy the server's store keeps of them (:meth:`MemoryStorage.forget`); the
        receipt. The server refuses an empty request as the library does."""
        listed = None if ids is None else [ids] if isinstance(ids, str) else [str(i) for i in ids]
        body = {"ids": listed, "filters": _jsonable(filters) if filters is not None else None, "reason": reason}
        receipt: ForgetReceipt = self._call(
            Call("POST", path_of(self._ns(), "/forget"), ForgetReceipt.from_dict, json=body)
        )
        return receipt

    def count(self, filters: Mapping[str, Any] | None = None, *, as_of: Any = None, known_at: Any = None) -> int:
        """How many messages match ``filters`` and are valid now, or ``as_of`` / ``known_at`` a time (see
        :meth:`MemoryStorage.count`)."""
        params: dict[str, Any] = _times(as_of, known_at)
        if filters:
            params["filters"] = json.dumps(_jsonable(filters))
        return int(self._call(Call("GET", path_of(self._ns(), "/count"), lambda r: r["count"], params=params)))

    def __len__(self) -> int:
        """How many messages the namespace holds, every version included."""
        return int(self._stats()["messages"])

    def stats(self) -> StoreStats:
        """The server's counts for the namespace (:class:`~ltm.store.StoreStats`; ``path`` is empty: the
        server does not say where its files are)."""
        body = self._stats()
        known = {f.name for f in dataclasses.fields(StoreStats)}
        return StoreStats(**{**{k: v for k, v in body.items() if k in known}, "path": ""})

    def _stats(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call(Call("GET", path_of(self._ns(), "/stats"), dict))
        return result

    def recent(self, n: int) -> builtins.list[Message]:
        """The ``n`` most recently added messages, oldest first."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise InvalidInput(f"k must be an int >= 0, got {n!r}")
        if n == 0:
            return []
        call = Call("GET", path_of(self._ns(), "/recent"), _messages, params={"n": n})
        result: builtins.list[Message] = self._call(call)
        return result

    def embed_texts(self, texts: builtins.list[str]) -> np.ndarray:
        """Unit vectors for ``texts`` from the server's model (comparable with the stored ones)."""
        result: np.ndarray = self._call(self._embed_call(texts))
        return result

    async def aembed_texts(self, texts: builtins.list[str]) -> np.ndarray:
        """Async twin of :meth:`embed_texts`."""
        result: np.ndarray = await self._acall(self._embed_call(texts))
        return result

    def best_similarities(self, vectors: np.ndarray, texts: Sequence[str] | None = None) -> np.ndarray:
        """Each row's best cosine to a stored message (-1.0 when the namespace is empty)."""
        body = {
            "vectors": np.asarray(vectors, dtype=np.float32).tolist(),
            "texts": list(texts) if texts is not None else None,
        }
        best = self._call(Call("POST", path_of(self._ns(), "/similarities"), lambda r: r["best"], json=body))
        return np.asarray(best, dtype=np.float32)

    def close(self) -> None:
        """Close the HTTP connections (the async client is closed by :meth:`aclose`)."""
        self._client.close()
        self._open = False

    async def aclose(self) -> None:
        """Close the async client's connections (and the sync ones)."""
        if self._aclient is not None:
            await self._aclient.aclose()
            self._aclient = None
        self.close()

    def __enter__(self) -> RemoteStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
