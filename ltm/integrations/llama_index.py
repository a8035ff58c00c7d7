"""ltm inside llama-index: :class:`LtmVectorStore` (a vector store over :class:`MemoryStorage`) and
:class:`LtmMemoryBlock` (long-term memories in the context of an agent's ``Memory``).

A node is stored as one message: its text as the content, its metadata as the message's metadata (filterable
as ``metadata.KEY``), the rest of the node (relationships, templates) as ``metadata["_node_content"]``, the
vector the index computed as the message's vector. Filters are translated into the store's one filter
language (:mod:`ltm.store`'s ``filters``), so they run as SQL inside the store, never over fetched nodes.

Query modes: ``default`` is dense (scores are cosine similarities), ``text_search`` / ``sparse`` is BM25
keyword search (``-bm25``), ``hybrid`` fuses both (the store's calibrated fusion, :mod:`ltm.store.search.fusion`). The
store is durable on every add: an index built with :meth:`VectorStoreIndex.from_vector_store` over the same
namespace after a restart sees every node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store import MemoryHit, MemoryStorage, Mode

__all__ = ["LtmMemoryBlock", "LtmVectorStore", "to_filters"]

_MODES: dict[VectorStoreQueryMode, Mode] = {
    VectorStoreQueryMode.DEFAULT: "dense",
    VectorStoreQueryMode.TEXT_SEARCH: "keyword",
    VectorStoreQueryMode.SPARSE: "keyword",
    VectorStoreQueryMode.HYBRID: "hybrid",
}
_OPS = {
    FilterOperator.EQ: "eq",
    FilterOperator.NE: "ne",
    FilterOperator.GT: "gt",
    FilterOperator.GTE: "gte",
    FilterOperator.LT: "lt",
    FilterOperator.LTE: "lte",
    FilterOperator.IN: "in",
    FilterOperator.NIN: "nin",
    FilterOperator.CONTAINS: "contains",
    FilterOperator.TEXT_MATCH: "contains",
    FilterOperator.TEXT_MATCH_INSENSITIVE: "icontains",
}
_NODE_ROLE = "llama_index"  # the role of messages that hold nodes


def to_filters(filters: MetadataFilters | None) -> dict[str, Any] | None:
    """llama-index ``MetadataFilters`` (nested, AND / OR / NOT) as the store's filter dict; None when empty.

    ``ANY`` / ``ALL`` become an OR / AND of ``contains``. ``IS_EMPTY`` is refused (the language has no "absent"
    test; ``{"key": None}`` matches a null value).
    """
    if filters is None or not filters.filters:
        return None
    parts = [_one(f) if isinstance(f, MetadataFilter) else to_filters(f) for f in filters.filters]
    kept = [p for p in parts if p]
    if not kept:
        return None
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.NOT:
        return {"NOT": {"AND": kept}}
    return {"OR" if condition == FilterCondition.OR else "AND": kept}


def _one(f: MetadataFilter) -> dict[str, Any]:
    key = "metadata." + f.key
    if f.operator in _OPS:
        return {key: {_OPS[f.operator]: f.value}}
    if f.operator in (FilterOperator.ANY, FilterOperator.ALL):
        if not isinstance(f.value, list) or not f.value:
            raise InvalidInput(f"filter {f.key!r} {f.operator.value} takes a non-empty list, got {f.value!r}")
        return {"OR" if f.operator == FilterOperator.ANY else "AND": [{key: {"contains": v}} for v in f.value]}
    raise InvalidInput(
        f"filter operator {f.operator.value!r} on {f.key!r} is not supported by ltm; use one of "
        f"{sorted(o.value for o in (*_OPS, FilterOperator.ANY, FilterOperator.ALL))}"
    )


def _and(*parts: dict[str, Any] | None) -> dict[str, Any] | None:
    kept = [p for p in parts if p]
    return None if not kept else kept[0] if len(kept) == 1 else {"AND": kept}


class LtmVectorStore(BasePydanticVectorStore):
    """A llama-index vector store over one :class:`MemoryStorage` namespace (text stored: ``stores_text``).

    ``LtmVectorStore(MemoryStorage("docs", kind="index", embedding=embed_model))``: pass the index's
    ``embed_model`` to the storage as well, so keyword-free store APIs (``MemoryStorage.search``) embed queries
    with the model the nodes were embedded with; the store's manifest then refuses another model on reopen.
    """

    stores_text: bool = True
    is_embedding_query: bool = True
    flat_metadata: bool = False
    _storage: MemoryStorage = PrivateAttr()

    def __init__(self, storage: MemoryStorage, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(storage, MemoryStorage):
            raise InvalidInput(f"LtmVectorStore wraps a MemoryStorage, got {type(storage).__name__}")
        self._storage = storage
        storage.index_metadata("ref_doc_id")  # delete(ref_doc_id) and doc_ids queries: index lookups

    @classmethod
    def class_name(cls) -> str:
        return "LtmVectorStore"

    @property
    def client(self) -> MemoryStorage:
        """The :class:`MemoryStorage` underneath."""
        return self._storage

    # -- writes ------------------------------------------------------------------------------------------
    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Store nodes (with their embeddings) in one transaction; returns their ids. A node id already
        stored is replaced in that same transaction (llama-index re-adds a node to update it)."""
        if not nodes:
            return []
        messages, vectors = self._messages(nodes)
        self._storage.replace_batch(messages, vectors=vectors)  # one transaction, re-added ids replaced
        return [m.id for m in messages]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Async twin of :meth:`add` (given vectors: nothing to await but the write)."""
        return self.add(nodes, **kwargs)

    def _messages(self, nodes: Sequence[BaseNode]) -> tuple[list[Message], list[list[float]]]:
        messages, vectors = [], []
        for node in nodes:
            embedding = node.get_embedding() if node.embedding is not None else None
            if embedding is None:
                raise InvalidInput(
                    f"node {node.node_id} has no embedding; build the index with an embed_model "
                    "(VectorStoreIndex computes them) or set node.embedding"
                )
            metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=False)
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            messages.append(Message(text, id=node.node_id, role=_NODE_ROLE, metadata=metadata))
            vectors.append(embedding)
        return messages, vectors

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the source document ``ref_doc_id``."""
        self._storage.delete_where({"metadata.ref_doc_id": ref_doc_id})

    def delete_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, **delete_kwargs: Any
    ) -> None:
        """Delete the nodes with these ids and / or matching ``filters`` (both: the nodes matching both)."""
        where = _and({"id": {"in": list(node_ids)}} if node_ids else None, to_filters(filters))
        if where is None:
            if node_ids is not None:
                return  # an empty id list deletes nothing
            raise InvalidInput("delete_nodes needs node_ids or filters; use clear() to delete every node")
        self._storage.delete_where(where)

    def clear(self) -> None:
        """Delete every node (the namespace stays, with its history)."""
        self._storage.delete_all()

    # -- reads -------------------------------------------------------------------------------------------
    def get_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None) -> list[BaseNode]:
        """The stored nodes with these ids and / or matching ``filters`` (all nodes when neither is given)."""
        where = _and({"id": {"in": list(node_ids)}} if node_ids else None, to_filters(filters))
        if node_ids is not None and not node_ids:
            return []
        return [_node(m) for m in self._storage.iter(where)]

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Top ``similarity_top_k`` nodes for ``query`` in its mode, filtered inside the store."""
        mode = _MODES.get(query.mode)
        if mode is None:
            raise InvalidInput(
                f"query mode {query.mode.value!r} is not supported by ltm; use one of {sorted(m.value for m in _MODES)}"
            )
        where = _and(
            to_filters(query.filters),
            {"id": {"in": list(query.node_ids)}} if query.node_ids else None,
            {"metadata.ref_doc_id": {"in": list(query.doc_ids)}} if query.doc_ids else None,
        )
        k = query.hybrid_top_k or query.similarity_top_k if mode == "hybrid" else query.similarity_top_k
        text = query.query_str or ""
        if mode != "dense" and not text.strip():
            raise InvalidInput(f"query mode {query.mode.value!r} needs query_str (the words to match)")
        if mode != "keyword" and query.query_embedding is None:
            raise InvalidInput("this query mode needs query_embedding; query through an index with an embed_model")
        hits = self._storage.search(
            text, k, mode=mode, filters=where, vector=query.query_embedding if mode != "keyword" else None
        )
        return _result(hits)


def _node(message: Message) -> BaseNode:
    return metadata_dict_to_node(message.metadata, text=message.content)


def _result(hits: list[MemoryHit]) -> VectorStoreQueryResult:
    nodes = [_node(h.message) for h in hits]
    return VectorStoreQueryResult(nodes=nodes, similarities=[h.score for h in hits], ids=[n.node_id for n in nodes])


class LtmMemoryBlock(BaseMemoryBlock[str]):
    """A block of llama-index's ``Memory`` that recalls relevant long-term memories into the agent's context.

    ``aget`` searches the store with the latest ``context_window`` chat messages and returns the ``k`` best
    hits (at least ``threshold`` when set, within ``filters`` when set) as lines of text. ``aput`` (messages
    flushed out of the short-term chat history) stores them as long-term messages, scoped with ``scope``
    (``user_id`` / ``agent_id`` / ``run_id``) and tagged with the chat's ``session_id``.
    """

    name: str = Field(default="long_term_memory", description="The name of the memory block.")
    storage: Any = Field(description="The MemoryStorage to recall from and store into.")
    k: int = Field(default=3, ge=1, description="Memories recalled per turn.")
    mode: str = Field(default="hybrid", description="Search mode: hybrid, dense or keyword.")
    threshold: float | None = Field(default=None, description="Minimum score of a recalled memory.")
    filters: dict[str, Any] | None = Field(default=None, description="Store filter applied to every recall.")
    scope: dict[str, str] = Field(default_factory=dict, description="user_id / agent_id / run_id of new memories.")
    context_window: int = Field(default=3, ge=1, description="Latest chat messages used as the query.")

    def __init__(self, **data: Any) -> None:
        # checked before pydantic runs, so the caller gets ltm's InvalidInput rather than a ValidationError
        storage = data.get("storage")
        if not isinstance(storage, MemoryStorage):
            raise InvalidInput(f"LtmMemoryBlock needs storage=MemoryStorage(...), got {type(storage).__name__}")
        unknown = set(data.get("scope") or {}) - {"user_id", "agent_id", "run_id"}
        if unknown:
            raise InvalidInput(f"scope keys are user_id, agent_id and run_id, got {sorted(unknown)}")
        super().__init__(**data)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = " ".join(_text(m) for m in (messages or [])[-self.context_window :]).strip()
        if not query:
            return ""
        hits = await self.storage.asearch(query, self.k, mode=self.mode, filters=self.filters, threshold=self.threshold)
        return "\n".join(f"- {h.message.content}" for h in hits)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        batch = []
        for chat in messages:
            text = _text(chat)
            if not text.strip():
                continue
            metadata: dict[str, Any] = dict(self.scope)
            session = chat.additional_kwargs.get("session_id")
            if isinstance(session, str):
                metadata["session_id"] = session
            batch.append(Message(text, role=chat.role.value, metadata=metadata))
        if batch:
            await self.storage.aadd_batch(batch)


def _text(message: ChatMessage) -> str:
    return "".join(b.text for b in message.blocks if isinstance(b, TextBlock))
