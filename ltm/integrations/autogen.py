"""ltm inside AutoGen: :class:`LtmMemory`, an ``autogen_core.memory.Memory`` over one ltm namespace.

``AssistantAgent(..., memory=[LtmMemory("assistant")])`` in place of ``ListMemory()`` or
``ChromaDBVectorMemory(...)``. A ``MemoryContent`` is stored as one message: its text as the content (a JSON dict
as its JSON text), its metadata as the message's metadata (so ``query(..., filters={"metadata.KEY": ...})`` runs
as SQL in the store; any key and value given back exactly: ltm.integrations.framework_metadata) plus
``mime_type``. :meth:`LtmMemory.query` is ltm's hybrid search (dense and keyword, fused); each result's metadata
carries its ``id`` and ``score``, the cosine similarity of the memory to the query (the hit's ``similarity``), which
``score_threshold`` bounds from below. :meth:`LtmMemory.update_context` does what AutoGen's vector memories
do: it queries with the last message of the model context and appends the results as one ``SystemMessage``
(a context with no message yet gets the ``k`` most recent memories, as ``ListMemory`` gives its memories).
Memories are durable on every add: a new ``LtmMemory`` on the same namespace after a restart sees them all.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from autogen_core import CancellationToken, Component, Image
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType, MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage
from pydantic import BaseModel, Field
from typing_extensions import Self

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.integrations.framework_metadata import (
    decode_metadata,
    encode_metadata,
    joined,
    stored_key,
    stored_path,
    without_nul,
)
from ltm.message import Message
from ltm.store import MemoryHit, MemoryStorage

__all__ = ["LtmMemory", "LtmMemoryConfig", "to_message"]

_ROLE = "memory"  # the role of the messages that hold AutoGen memories
_TEXT_TYPES = (MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value)
_QUERY_KWARGS = ("filters", "k")
_MIME = "mime_type"  # the adapter's own metadata key: the content's MIME type
_OWNED = frozenset({_MIME})


class LtmMemoryConfig(BaseModel):
    """What :meth:`LtmMemory.dump_component` writes and ``load_component`` reads back.

    ``settings`` holds the ltm settings the memory was given, without secrets (the OpenAI key, URLs with a
    password): a loaded memory reads those from the environment (``LTM_*``, ``OPENAI_API_KEY``) or ltm's config
    file, as ``Settings.load()`` does."""

    namespace: str
    k: int = Field(5, ge=1, le=10_000)
    score_threshold: float | None = Field(None, ge=-1.0, le=1.0)
    settings: dict[str, Any] = Field(default_factory=dict)


class LtmMemory(Memory, Component[LtmMemoryConfig]):
    """An AutoGen memory on ltm's store: ``k`` memories per query, none below ``score_threshold`` (a cosine
    similarity in [-1, 1]; None keeps every hit). ``settings`` as everywhere in ltm (None: ``Settings.load()``).

    Text, Markdown and JSON (a dict) contents are stored; binary and image contents are refused with an
    ``InvalidInput`` (a ``ValueError``), as AutoGen's ChromaDB memory refuses them: the store searches text.
    ``query`` takes ``filters`` (ltm's filter language, e.g. ``{"metadata.category": "city"}``) and ``k``.
    """

    component_type = "memory"
    component_config_schema = LtmMemoryConfig
    component_provider_override = "ltm.integrations.autogen.LtmMemory"

    def __init__(
        self, namespace: str, settings: Settings | None = None, k: int = 5, score_threshold: float | None = None
    ) -> None:
        self._config = LtmMemoryConfig(
            namespace=namespace, k=k, score_threshold=score_threshold, settings=_shareable(settings)
        )
        self._store = MemoryStorage(namespace, kind="autogen", settings=settings)

    @property
    def name(self) -> str:
        """The namespace (AutoGen shows it as the memory's name)."""
        return self._config.namespace

    @property
    def store(self) -> MemoryStorage:
        """The ltm store under this memory (for ltm's own API: history, export, filters...)."""
        return self._store

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        """Store ``content`` (durable when this returns)."""
        await self._store.aadd(to_message(content))

    async def query(
        self, query: str | MemoryContent = "", cancellation_token: CancellationToken | None = None, **kwargs: Any
    ) -> MemoryQueryResult:
        """The memories most relevant to ``query``, best first; each one's metadata has ``id`` and ``score``."""
        unknown = set(kwargs) - set(_QUERY_KWARGS)
        if unknown:
            raise InvalidInput(f"LtmMemory.query takes {', '.join(_QUERY_KWARGS)} as keywords, not {sorted(unknown)}")
        if isinstance(query, str):
            text = query
        elif isinstance(query, MemoryContent):
            text = _text_of(query)
        else:
            raise InvalidInput(f"query is a str or a MemoryContent, got {type(query).__name__}")
        if not text.strip():
            return MemoryQueryResult(results=[])
        filters = _stored_filters(kwargs.get("filters"))
        k, threshold = kwargs.get("k", self._config.k), self._config.score_threshold
        hits = await self._store.asearch(text, k, filters=filters, threshold=threshold)
        return MemoryQueryResult(results=[_to_content(hit) for hit in hits])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Query with the context's last message and append what was found as one ``SystemMessage`` (with an
        empty context, the ``k`` most recent memories)."""
        messages = await model_context.get_messages()
        if messages:
            last = messages[-1]
            found = await self.query(last.content if isinstance(last.content, str) else str(last))
        else:  # nothing to query with: the k most recent memories, oldest first (ListMemory gives them all)
            recent = await asyncio.to_thread(self._store.recent, self._config.k)
            found = MemoryQueryResult(results=[_to_content(message) for message in recent])
        if found.results:
            lines = [f"{i}. " + str(memory.content) for i, memory in enumerate(found.results, 1)]
            await model_context.add_message(SystemMessage(content="\nRelevant memory content:\n" + "\n".join(lines)))
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """Delete every memory of the namespace (the namespace and its history stay)."""
        await asyncio.to_thread(self._store.delete_all)

    async def close(self) -> None:
        """Close the store's files; a later call reopens them."""
        await asyncio.to_thread(self._store.close)

    def _to_config(self) -> LtmMemoryConfig:
        return self._config.model_copy(deep=True)

    @classmethod
    def _from_config(cls, config: LtmMemoryConfig) -> Self:
        settings = Settings.load(**config.settings) if config.settings else None
        return cls(config.namespace, settings=settings, k=config.k, score_threshold=config.score_threshold)


def _shareable(settings: Settings | None) -> dict[str, Any]:
    """The settings that were set, as JSON values, less the secrets: the OpenAI key, and any URL whose JSON form
    is masked (it holds a password, or a key or token in its query string: ``ltm.config.mask_url``). A masked URL
    is left out rather than written masked, which would load as a URL that cannot authenticate."""
    if settings is None:
        return {}
    shown, real = settings.model_dump(mode="json"), settings.model_dump()
    return {
        name: shown[name]
        for name in sorted(settings.model_fields_set)
        if name != "openai_api_key" and not (name.endswith("_url") and shown[name] != real[name])
    }


def _stored_filters(filters: Any) -> Any:
    """A query's filters (ltm's filter language over the memories' metadata) as filters of the stored messages:
    each ``metadata.KEY`` path over the stored keys (ltm.integrations.framework_metadata), a comparison with a
    string holding NUL decided (no memory holds one). Anything that is not a filter is left for the store to
    refuse."""
    if not isinstance(filters, Mapping):
        return filters
    parts: list[dict[str, Any]] = []
    for key, value in filters.items():
        if key in ("AND", "OR") and isinstance(value, list | tuple):
            parts.append({key: [_stored_filters(v) for v in value]})
        elif key == "NOT":
            parts.append({key: _stored_filters(value)})
        elif key == "metadata" and isinstance(value, Mapping):  # the old form: {"metadata": {KEY: value}}
            parts.extend({"metadata." + stored_key(str(k)): v} for k, v in value.items())
        elif isinstance(key, str) and key.startswith("metadata."):
            parts.append({"metadata." + stored_path(key[len("metadata.") :]): value})
        else:
            parts.append({key: value})
    if not parts:
        return filters
    return without_nul(joined(parts))


def _text_of(content: MemoryContent) -> str:
    """The searchable text of a content: AutoGen's rules (text and Markdown as they are, a JSON dict as JSON)."""
    mime = content.mime_type.value if isinstance(content.mime_type, MemoryMimeType) else str(content.mime_type)
    value = content.content
    if mime in _TEXT_TYPES:
        return str(value)
    if mime == MemoryMimeType.JSON.value:
        if isinstance(value, dict):
            try:
                return json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError, RecursionError) as exc:  # a datetime, a dict holding itself, ...
                raise InvalidInput(
                    f"JSON content must hold JSON values only (dict, list, str, number, bool, None) and no cycle: "
                    f"{exc}; convert the others first (e.g. a datetime to its isoformat())"
                ) from exc
        raise InvalidInput(f"JSON content must be a dict, got {type(value).__name__}; wrap it as {{'value': ...}}")
    if isinstance(value, Image):
        raise InvalidInput("Image content cannot be converted to text: store a caption of it as text/plain")
    raise InvalidInput(f"Unsupported content type: {mime}; ltm stores text, Markdown and JSON memories")


def to_message(content: MemoryContent) -> Message:
    """The message that stores ``content`` (InvalidInput for a binary or image content)."""
    mime = content.mime_type.value if isinstance(content.mime_type, MemoryMimeType) else str(content.mime_type)
    metadata = encode_metadata(content.metadata, _OWNED)
    return Message(_text_of(content), role=_ROLE, metadata={**metadata, _MIME: mime})


def _to_content(found: MemoryHit | Message) -> MemoryContent:
    """A stored memory as AutoGen's content: its metadata as it was added, with ``mime_type`` and ``id`` (and a
    search hit's ``score``, its cosine) set over any key of the same name, as AutoGen's ChromaDB memory does."""
    message = found.message if isinstance(found, MemoryHit) else found
    mime = str(message.metadata.get(_MIME, MemoryMimeType.TEXT.value))
    metadata = {**decode_metadata(message.metadata, _OWNED), _MIME: mime}
    value: str | dict[str, Any] = json.loads(message.content) if mime == MemoryMimeType.JSON.value else message.content
    if isinstance(found, MemoryHit):
        metadata["score"] = float(found.score if found.similarity is None else found.similarity)
    metadata["id"] = message.id
    return MemoryContent(content=value, mime_type=mime, metadata=metadata)
