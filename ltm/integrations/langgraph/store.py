"""``LtmStore``: LangGraph's ``BaseStore`` over one ltm namespace (see :mod:`.records` for the layout).

A batch reads first (gets, searches, namespace listings see the store as it was before the batch), then writes
all its puts and deletes in ONE transaction (:mod:`.writes`): a put on a stored key supersedes the item's
version, a delete removes the item with its versions, and a refused value, a failed model call or a crash
leaves the batch's writes all done or none. Reads see the current versions; ``store.storage``'s reads with
``as_of`` / ``known_at`` see the past ones. A TTL refresh on read moves the items' expiry only
(:meth:`MemoryStorage.set_expiry`): no rewrite, no history event.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from typing_extensions import Self

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.integrations.langgraph.embeddings import LangChainEmbedding
from ltm.integrations.langgraph.listing import check_labels, literal_prefix, matching_namespaces
from ltm.integrations.langgraph.records import (
    check_value,
    head_of,
    is_head,
    item_filter,
    item_key,
    item_of,
    matches,
    namespace_filter,
    nothing_outside,
    part_id,
    search_item_of,
    texts_of,
    value_filter,
    value_of,
    within,
)
from ltm.integrations.langgraph.writes import write_puts
from ltm.message import Message
from ltm.store import MemoryHit, MemoryStorage, Mode

__all__ = ["ItemStore", "LtmStore"]

_PAGE = 10_000  # messages per list() page, and ids per "in" filter (the store's largest)
_MAX_K = 100_000  # the most results one store search ranks
_HEADS = {"metadata.lg_part": 0}
_QUERY = "query"  # the embedder's purpose of a search's query vector (cached apart from stored texts')
_MIXED_SEARCHES, _MIXED_KEPT = 256, 1024  # searches before a prefix with items outside is probed again; prefixes kept
_Ranked = tuple[Message, dict[str, tuple[str, float | None]]]  # an item's head; its parts found: text, cosine


def _and(*parts: dict[str, Any] | None) -> dict[str, Any] | None:
    kept = [p for p in parts if p]
    return None if not kept else kept[0] if len(kept) == 1 else {"AND": kept}


def _exact(head: Message, filters: dict[str, Any] | None) -> bool:
    return matches(value_of(head), filters)


class ItemStore(BaseStore):
    """What :class:`LtmStore` and :class:`~ltm.integrations.langgraph.aio.AsyncLtmStore` share: everything but
    the TTL sweeper, which each runs its own way (a thread; an asyncio task)."""

    supports_ttl: bool = True

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        namespace: str = "langgraph",
        mode: Mode = "hybrid",
    ) -> None:
        if mode not in ("hybrid", "dense", "keyword"):
            raise InvalidInput(f"mode is hybrid, dense or keyword, got {mode!r}")
        self.settings = settings if settings is not None else Settings.load()
        self.mode: Mode = mode
        self.ttl_config: TTLConfig | None = dict(ttl) if ttl else None  # type: ignore[assignment]
        embedding = None
        if index:
            embedding = LangChainEmbedding(index.get("embed"), index.get("dims", 0))
            self.index_config: IndexConfig | None = IndexConfig(**index)
            self.index_config["embed"] = embedding.embeddings
            self.embeddings: Any = embedding.embeddings
        else:
            self.index_config = None
            self.embeddings = None
        fields: Any = (index or {}).get("fields") or (index or {}).get("text_fields") or ["$"]  # SqliteStore's name
        self._fields: list[str] = [fields] if isinstance(fields, str) else list(fields)
        self.storage = MemoryStorage(namespace, kind="langgraph", settings=self.settings, embedding=embedding)
        self._mixed: dict[tuple[str, ...], int] = {}  # prefix -> searches left before it is probed again
        self.storage.index_metadata("lg_item")  # an item's parts: an index lookup for put, delete and refresh
        self.storage.index_metadata("lg_ns")  # a namespace and its prefixes: an index probe per search
        self.storage.index_metadata("lg_indexed")  # "any unindexed item?": an index probe per search

    # -- the two entry points ------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order of kind: reads first (they see the store as it was), then every put."""
        listed = list(ops)
        results: list[Result] = [None] * len(listed)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        refresh: dict[str, Message] = {}
        for i, op in enumerate(listed):
            if isinstance(op, GetOp):
                check_labels(op.namespace)
                results[i] = self._get(op, refresh)
            elif isinstance(op, SearchOp):
                check_labels(op.namespace_prefix)
                results[i] = self._search(op, refresh)
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    check_labels(tuple(condition.path))
                results[i] = matching_namespaces(self._namespaces(op), op)
            elif isinstance(op, PutOp):
                check_labels(op.namespace)
                puts[(op.namespace, op.key)] = op  # the last put of a key in a batch wins
            else:
                raise InvalidInput(f"unknown store operation {type(op).__name__}")
        if refresh:
            self._refresh(list(refresh.values()))
        if puts:
            self._write(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread: the event loop never waits on SQLite, the server or the model."""
        listed = list(ops)
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, listed)

    # -- reads ---------------------------------------------------------------------------------------------
    def _get(self, op: GetOp, refresh: dict[str, Message]) -> Item | None:
        heads = self.storage.list(_and(item_filter([item_key(op.namespace, op.key)]), _HEADS), limit=_PAGE).messages
        if not heads:
            return None
        head = max(heads, key=lambda m: float(m.metadata["lg_updated"]))  # two: first puts of a key racing
        if op.refresh_ttl and "lg_ttl" in head.metadata:
            refresh[head.metadata["lg_item"]] = head
        return item_of(head)

    def _search(self, op: SearchOp, refresh: dict[str, Message]) -> list[SearchItem]:
        if op.query is not None and not isinstance(op.query, str):
            raise InvalidInput(f"query must be a str (or None to list without ranking), got {type(op.query).__name__}")
        where = _and(namespace_filter(op.namespace_prefix), value_filter(op.filter))
        exact = partial(_exact, filters=op.filter)
        found: list[tuple[Message, float | None]]
        if op.query and op.query.strip():
            found = self._scored(op.query, self._ranked(op.query, op, exact)[op.offset : op.offset + op.limit])
            if len(found) < op.limit:  # as LangGraph's stores do: unindexed matches fill what is left
                rest = [m for m in self._heads(_and(where, {"metadata.lg_indexed": False})) if exact(m)]
                found.extend((m, None) for m in rest[: op.limit - len(found)])
        else:
            unranked = [m for m in self._heads(where) if exact(m)][op.offset : op.offset + op.limit]
            found = [(m, None) for m in unranked]
        if op.refresh_ttl:
            refresh.update((m.metadata["lg_item"], m) for m, _ in found if "lg_ttl" in m.metadata)
        return [search_item_of(m, score) for m, score in found]

    def _ranked(self, query: str, op: SearchOp, exact: Callable[[Message], bool]) -> list[_Ranked]:
        """The best ``offset + limit`` items for ``query`` in the store's mode, each once (where its best part
        ranks, read through its head), with the parts found and, in dense mode, their cosines. Only heads hold
        the value, so the value filter narrows heads in SQL and the other parts by their head."""
        wanted = op.offset + op.limit
        narrowed = value_filter(op.filter)
        if narrowed is not None:
            narrowed = {"OR": [{"AND": [_HEADS, narrowed]}, {"metadata.lg_part": {"ne": 0}}]}
        prefix = op.namespace_prefix
        scoped = not self._all_within(prefix)
        heads: dict[str, Message | None] = {}  # an item's head, None when it fails the filter
        k = min(max(2 * wanted, 10), _MAX_K)
        while True:
            scope = _and(namespace_filter(prefix), {"metadata.lg_indexed": True}) if scoped else None
            hits = self.storage.search(query, k, mode=self.mode, filters=_and(scope, narrowed))
            if not scoped and not all(within(h.message, prefix) for h in hits):
                scoped = True  # written since the probe, or not an item: search again within the scope
                continue
            self._resolve(hits, heads, exact)
            items: dict[str, _Ranked] = {}
            for hit in hits:
                stem = hit.message.metadata["lg_item"]
                head = heads.get(stem)
                if head is None:
                    continue
                score = hit.score if self.mode == "dense" else None
                items.setdefault(stem, (head, {}))[1][hit.message.id] = (hit.message.content, score)
            if len(items) >= wanted or len(hits) < k:
                return list(items.values())
            if k >= _MAX_K:
                raise InvalidInput(
                    f"search with a query ranks at most {_MAX_K:,} stored texts, and offset + limit = "
                    f"{op.offset:,} + {op.limit:,} reaches past the {len(items):,} items among them; narrow it "
                    "(namespace_prefix, filter) or page through the items without a query"
                )
            k = min(4 * k, _MAX_K)

    def _all_within(self, prefix: tuple[str, ...]) -> bool:
        """Whether every stored item is indexed and under ``prefix`` (index probes that find nothing): then a
        search needs no filter, and the engine ranks its whole index instead of first reading which rows a filter
        lets through. A prefix with items outside it is remembered for a while (a filter is always right, only
        slower). On PostgreSQL a search's filter is planned inside its query: no probe."""
        if self.settings.store_url is not None:
            return False
        seen = self._mixed.get(prefix)
        if seen is not None and seen > 0:
            self._mixed[prefix] = seen - 1
            return False
        if nothing_outside(self.storage, prefix):
            self._mixed.pop(prefix, None)
            return True
        if len(self._mixed) >= _MIXED_KEPT:
            self._mixed.clear()
        self._mixed[prefix] = _MIXED_SEARCHES
        return False

    def _scored(self, query: str, ranked: list[_Ranked]) -> list[tuple[Message, float | None]]:
        """Each item with its score: the best cosine similarity of the query to its parts found (None in keyword
        mode, which has no query vector). A hybrid search's own scores are fused ones: the cosines are the query's
        vector (the one the search just cached) against the parts' stored vectors (read by content, no model
        call), with no second search and no ``explain``."""
        if self.mode == "hybrid" and ranked:
            texts = {i: text for _, parts in ranked for i, (text, _) in parts.items()}
            embedder, dim = self.storage.embedder, self.storage.dimension()
            query_vector = embedder.embed([query], dim, purpose=_QUERY)[0]
            cosines = self.storage.embed_texts(list(texts.values())) @ query_vector
            score = dict(zip(texts, (float(c) for c in cosines), strict=True))
            for _, parts in ranked:
                parts.update((i, (text, score[i])) for i, (text, _) in parts.items())
        out: list[tuple[Message, float | None]] = []
        for head, parts in ranked:
            scores = [v for _, v in parts.values() if v is not None]
            out.append((head, max(scores) if scores else None))
        return out

    def _resolve(
        self, hits: Sequence[MemoryHit], heads: dict[str, Message | None], exact: Callable[[Message], bool]
    ) -> None:
        """Each hit's item's head in ``heads`` (None: the item fails the filter): a hit that is not its item's
        head is read through the head, by id."""
        wanted: dict[str, str] = {}
        for hit in hits:
            stem = hit.message.metadata["lg_item"]
            if stem in heads:
                continue
            if is_head(hit.message):
                heads[stem] = hit.message if exact(hit.message) else None
                wanted.pop(stem, None)
            else:
                wanted[stem] = head_of(hit.message)
        for stem in wanted:
            heads[stem] = None
        for head in self._by_ids(list(wanted.values())):
            heads[head.metadata["lg_item"]] = head if exact(head) else None

    def _by_ids(self, ids: Sequence[str]) -> list[Message]:
        out: list[Message] = []
        for start in range(0, len(ids), _PAGE):
            chunk = list(ids[start : start + _PAGE])
            out.extend(self.storage.list({"id": {"in": chunk}}, limit=len(chunk)).messages)
        return out

    def _heads(self, where: dict[str, Any] | None) -> list[Message]:
        """Every item matching ``where``, most recently updated first."""
        heads = list(self.storage.iter(_and(where, _HEADS), page=_PAGE))
        heads.reverse()  # list() is in write order: this is nearly sorted already
        heads.sort(key=lambda m: float(m.metadata["lg_updated"]), reverse=True)
        return heads

    def _namespaces(self, op: ListNamespacesOp) -> set[tuple[str, ...]]:
        """The distinct namespaces of the stored items (narrowed by a literal leading prefix, when given)."""
        return {item_of(m).namespace for m in self._heads(namespace_filter(literal_prefix(op)))}

    # -- writes --------------------------------------------------------------------------------------------
    def _write(self, puts: Sequence[PutOp]) -> None:
        write_puts(self.storage, puts, self._texts)

    def _texts(self, op: PutOp) -> list[str]:
        value = check_value(op.value)
        return [] if op.index is False else texts_of(value, self._fields if op.index is None else list(op.index))

    # -- time to live --------------------------------------------------------------------------------------
    def _refresh(self, heads: list[Message]) -> None:
        """Push back the expiry of items read with ``refresh_ttl`` (their TTL from now), every part at once;
        only the expiry moves."""
        now = time.time()
        expiries: dict[str, float] = {}
        for head in heads:
            when = now + float(head.metadata["lg_ttl"]) * 60.0
            stem, version = head.metadata["lg_item"], str(head.metadata.get("lg_v", ""))
            expiries.update((part_id(stem, version, i), when) for i in range(int(head.metadata["lg_parts"])))
        self.storage.set_expiry(expiries)

    def _sweep(self) -> int:
        """Delete what has expired now; how many stored records went."""
        return self.storage.purge_expired()

    def _sweep_seconds(self, sweep_interval_minutes: float | None) -> float:
        """The sweeper's period: the argument, else the TTL config's, else 5 minutes."""
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        return float(minutes) * 60.0

    def _stop_sweeping(self) -> None:
        """Stop the sweeper without waiting (:meth:`close`): each store kind says how."""

    # -- lifecycle -----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the sweeper and close the namespace (the data stays)."""
        self._stop_sweeping()
        self.storage.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        indexed = self.index_config is not None
        name = type(self).__name__
        return f"{name}(namespace={self.storage.namespace!r}, mode={self.mode!r}, indexed={indexed})"


class LtmStore(ItemStore):
    """LangGraph's store on ltm: durable on every put (kill -9 safe), hybrid search, PostgreSQL through
    ``Settings.store_url``.

    ``index`` is LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``, default ``["$"]``): given, items
    are embedded with ``embed``; absent, with ltm's configured model (``Settings.embedding``). ``ttl`` is
    LangGraph's ``TTLConfig`` (minutes). ``namespace`` names the ltm namespace (kind ``langgraph``) that holds
    every item; ``mode`` is the search used when a query is given (``hybrid``, ``dense`` or ``keyword``).
    A ``SearchItem``'s ``score`` is the cosine similarity of the query to the item's best indexed text (the
    scale LangGraph's own stores report); the order is the search mode's.
    """

    _sweeper: tuple[threading.Event, threading.Thread] | None = None

    def sweep_ttl(self) -> int:
        """Delete what has expired now; how many stored records went (an item indexed on several fields
        counts once per field). Reads never return an expired item, swept or not."""
        return self._sweep()

    async def asweep_ttl(self) -> int:
        """Async twin of :meth:`sweep_ttl`."""
        return await asyncio.get_running_loop().run_in_executor(None, self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Future[None]:
        """Sweep every ``sweep_interval_minutes`` (default: the TTL config's, else 5) in a daemon thread until
        :meth:`stop_ttl_sweeper`; the future completes when it stops."""
        seconds = self._sweep_seconds(sweep_interval_minutes)
        done: Future[None] = Future()
        if self._sweeper is not None:
            done.set_result(None)
            return done
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(seconds):
                self._sweep()
            done.set_result(None)

        thread = threading.Thread(target=run, name="ltm-langgraph-ttl", daemon=True)
        self._sweeper = (stop, thread)
        thread.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it has stopped within ``timeout`` seconds."""
        return self._stop_sweeper(timeout)

    def _stop_sweeper(self, timeout: float | None) -> bool:
        if self._sweeper is None:
            return True
        stop, thread = self._sweeper
        stop.set()
        thread.join(timeout)
        if not thread.is_alive():
            self._sweeper = None
        return not thread.is_alive()

    def _stop_sweeping(self) -> None:
        self._stop_sweeper(None)
