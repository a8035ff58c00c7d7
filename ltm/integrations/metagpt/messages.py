"""The one place where MetaGPT's messages and ltm's meet, plus the two shape adapters MetaGPT's callers need.

- :func:`to_ltm` / :func:`to_metagpt`: a lossless round trip of id, content, instruct_content, role, cause_by,
  sent_from, send_to, metadata (when the MetaGPT version has that field) and the message's class
  (``UserMessage``, ``AIMessage``, ...). MetaGPT's own serialized ``instruct_content`` travels in the ltm
  message's metadata under ``_metagpt``, so a message read back after a restart is rebuilt by MetaGPT's own
  validator (``ActionNode`` classes from their field mapping), exactly as MetaGPT's ``Message.load`` does.
  Both functions pass through what is already on their side, so layered calls never convert twice.
- :class:`AwaitableList`: a list that can also be awaited. MetaGPT's ``Role._observe`` calls
  ``memory.find_news(...)`` without ``await`` while MetaGPT's tests ``await`` it; the work is done at the
  call and both uses get the same list.
- :class:`OriginLiftedEmbedding`: MetaGPT compares vectors by L2 distance, where the all-zero vector is a
  point like any other (MetaGPT's own test fixture embeds texts as all-zeros and all-ones). ltm compares
  directions (cosine) and refuses zero vectors. One extra coordinate, 0 for every non-zero vector (so their
  cosines are unchanged) and 1 for the zero vector, gives the origin a direction of its own: it is similar
  only to itself, as at L2 distance 0.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any, TypeVar

import metagpt.schema as mg_schema
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr  # pydantic.v1 under llama-index 0.10, v2 later
from metagpt.schema import Message as MetaGPTMessage
from metagpt.utils.common import any_to_str
from pydantic import BaseModel

from ltm.config import mask_url
from ltm.errors import BackendUnavailable, InvalidInput
from ltm.message import USER_REQUIREMENT
from ltm.message import Message as LtmMessage

__all__ = ["METAGPT_USER_REQUIREMENT", "AwaitableList", "OriginLiftedEmbedding", "to_ltm", "to_metagpt"]

METAGPT_USER_REQUIREMENT = "metagpt.actions.add_requirement.UserRequirement"
_KEY = "_metagpt"  # the metadata key that carries what only MetaGPT knows how to rebuild
# The message classes a stored record may name: looked up here, never imported from stored text.
_CLASSES: dict[str, type[MetaGPTMessage]] = {
    name: cls
    for name in ("Message", "UserMessage", "SystemMessage", "AIMessage")
    if isinstance(cls := getattr(mg_schema, name, None), type) and issubclass(cls, MetaGPTMessage)
}
_HAS_METADATA = "metadata" in MetaGPTMessage.model_fields  # MetaGPT 0.8.2 has none; later versions do

T = TypeVar("T")


class AwaitableList(list[T]):
    """A finished list that ``await`` also accepts (it returns the list itself, without suspending)."""

    def __await__(self) -> Generator[Any, None, AwaitableList[T]]:
        return self
        yield  # pragma: no cover - makes this a generator, as __await__ must be


def to_ltm(message: MetaGPTMessage | LtmMessage) -> LtmMessage:
    """ltm's message for a MetaGPT message (an ltm message is returned as it is)."""
    if isinstance(message, LtmMessage):
        return message
    if not isinstance(message, MetaGPTMessage):
        raise InvalidInput(
            f"expected a metagpt.schema.Message (or ltm.Message), got {type(message).__module__}."
            f"{type(message).__name__}"
        )
    extra: dict[str, Any] = {"class": type(message).__name__}
    if message.instruct_content is not None:
        # MetaGPT's own serialized form: its validator rebuilds ActionNode models from the mapping.
        extra["instruct_content"] = message.model_dump(include={"instruct_content"})["instruct_content"]
    metadata = dict(getattr(message, "metadata", None) or {})
    metadata[_KEY] = extra
    return LtmMessage(
        id=message.id,
        content=message.content,
        instruct_content=message.instruct_content,
        role=message.role,
        cause_by=message.cause_by,
        sent_from=message.sent_from,
        send_to=set(message.send_to),
        metadata=metadata,
    )


def to_metagpt(message: LtmMessage | MetaGPTMessage) -> MetaGPTMessage:
    """MetaGPT's message (of its original class) for an ltm message (a MetaGPT message is returned as it is)."""
    if isinstance(message, MetaGPTMessage):
        return message
    if not isinstance(message, LtmMessage):
        raise InvalidInput(f"expected an ltm.Message, got {type(message).__module__}.{type(message).__name__}")
    metadata = dict(message.metadata)
    extra = metadata.pop(_KEY, None)
    extra = extra if isinstance(extra, dict) else {}
    cls = _CLASSES.get(str(extra.get("class", "Message")), MetaGPTMessage)
    instruct: Any = message.instruct_content
    stored = extra.get("instruct_content")
    if isinstance(stored, dict) and "mapping" in stored:
        instruct = stored  # rebuilt by MetaGPT's validator, as its Message.load does (no import by name)
    elif isinstance(instruct, dict):
        instruct = None if not instruct else _as_model(instruct)
    cause_by = METAGPT_USER_REQUIREMENT if message.cause_by == USER_REQUIREMENT else message.cause_by
    data: dict[str, Any] = {
        "id": message.id,
        "content": message.content,
        "instruct_content": instruct,
        "role": message.role,
        "cause_by": cause_by,
        "sent_from": message.sent_from,
        "send_to": set(message.send_to),
    }
    if _HAS_METADATA:
        data["metadata"] = metadata
    validated = MetaGPTMessage.model_validate(data)  # MetaGPT's validators rebuild instruct_content, cause_by...
    if cls is MetaGPTMessage:
        return validated
    # UserMessage/AIMessage's __init__ takes only ``content`` (and pydantic calls a custom __init__ even from
    # model_validate): the subclass gets the fields its base already validated.
    return cls.model_construct(_fields_set=validated.model_fields_set, **dict(validated))


def to_metagpt_list(messages: Iterable[LtmMessage | MetaGPTMessage]) -> AwaitableList[MetaGPTMessage]:
    """:func:`to_metagpt` over a list; the result can also be awaited."""
    return AwaitableList(to_metagpt(m) for m in messages)


def _as_model(payload: dict[str, Any]) -> BaseModel:
    """A plain-dict instruct_content (written by ltm's core) as a model MetaGPT can hold."""
    from pydantic import create_model

    model = create_model("InstructContent", **{key: (Any, ...) for key in payload})  # type: ignore[call-overload]
    return model(**payload)  # type: ignore[no-any-return]


def cause_of(action: Any) -> str:
    """MetaGPT's cause string for an action class, instance or string."""
    return any_to_str(action)  # type: ignore[no-any-return]


class OriginLiftedEmbedding(BaseEmbedding):
    """Wraps an embedding so that its all-zero vector gets a direction (see the module docstring).

    An OpenAI embedding inside (MetaGPT's, from its config) asks its server once per call: its client's retries
    are turned off, and a connection that cannot be made is one ``BackendUnavailable`` naming MetaGPT's config,
    raised by that first call (the OpenAI client and llama-index would retry it for a minute or more). Nothing
    is checked before a call: a test double patched onto the inner model's class is called as the test expects.
    """

    _inner: BaseEmbedding = PrivateAttr()

    def __init__(self, inner: BaseEmbedding, **kwargs: Any) -> None:
        name = getattr(inner, "model_name", None) or type(inner).__name__
        super().__init__(model_name=f"{name}+origin", embed_batch_size=inner.embed_batch_size, **kwargs)
        self._inner = inner
        if _is_openai_embedding(inner):
            inner.max_retries = 0  # type: ignore[attr-defined]  # its client's retries (and newer llama-index's)

    @classmethod
    def class_name(cls) -> str:
        return "OriginLiftedEmbedding"

    @staticmethod
    def _lift(vector: list[float]) -> list[float]:
        return [*vector, 0.0 if any(vector) else 1.0]

    def _once(self) -> BaseEmbedding:
        """The inner model, its OpenAI client (when it has one) answering a failed connection at once."""
        if _is_openai_embedding(self._inner):
            _refuse_at_once(self._inner)
        return self._inner

    # The inner model's sync calls serve the async ones too (in a worker thread): MetaGPT's OpenAIEmbedding
    # would otherwise take separate code paths for the two, and its tests patch only the sync text path.
    def _get_query_embedding(self, query: str) -> list[float]:
        return self._lift(self._once().get_query_embedding(query))

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._lift(self._once().get_text_embedding(text))

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._lift(v) for v in self._once().get_text_embedding_batch(texts)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        import asyncio

        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        import asyncio

        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        import asyncio

        return await asyncio.to_thread(self._get_text_embeddings, texts)


def _is_openai_embedding(embedding: object) -> bool:
    try:
        from llama_index.embeddings.openai import OpenAIEmbedding
    except ImportError:  # pragma: no cover - MetaGPT requires it
        return False
    return isinstance(embedding, OpenAIEmbedding)


class _RefusedAtOnce:
    """An OpenAI client's ``embeddings`` resource whose failed connection is ltm's ``BackendUnavailable``.

    llama-index 0.10's OpenAI embedding retries any ``openai`` error up to six times, a minute in all, whatever
    the client's own ``max_retries``; an ltm error is none of those, so it ends the call at the first try.
    """

    def __init__(self, resource: Any, base_url: str) -> None:
        self._resource = resource
        self._base_url = base_url

    def create(self, *args: Any, **kwargs: Any) -> Any:
        import openai

        try:
            return self._resource.create(*args, **kwargs)
        except openai.APIConnectionError as exc:  # refused, reset or timed out: no HTTP answer at all
            raise BackendUnavailable(
                f"no embedding server is reachable at {mask_url(self._base_url)} ({_reason(exc)}). MetaGPT's "
                "embedding comes from its config (~/.metagpt/config2.yaml: llm.base_url): start that server, or "
                "point the config at one"
            ) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._resource, name)


def _refuse_at_once(inner: Any) -> None:
    """Give ``inner`` (an OpenAIEmbedding) a client whose failed connection raises at once."""
    if not getattr(inner, "reuse_client", False) or not callable(getattr(inner, "_get_client", None)):
        return  # a new client per call: max_retries=0 still holds for each, llama-index's own retries stay
    try:
        client = inner._get_client()
    except Exception:  # noqa: BLE001 - no client (a missing key...): the call itself reports that, as before
        return
    if not isinstance(client.embeddings, _RefusedAtOnce):
        client.embeddings = _RefusedAtOnce(client.embeddings, str(inner.api_base))


def _reason(exc: BaseException) -> str:
    """The innermost cause of a failed connection, in words ("Connection refused")."""
    seen = {id(exc)}
    while (cause := exc.__cause__ or exc.__context__) is not None and id(cause) not in seen:
        seen.add(id(cause))
        exc = cause
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else None) or str(exc) or type(exc).__name__


def metagpt_embedding() -> BaseEmbedding:
    """The embedding MetaGPT's own MemoryStorage uses (from MetaGPT's config), origin-lifted."""
    from metagpt.utils.embedding import get_embedding

    return OriginLiftedEmbedding(get_embedding())


class MetaGPTLLM:
    """ltm's LLM protocol (``ask``/``aask`` with a system prompt) over a MetaGPT LLM (``metagpt.llm.LLM()``)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def __repr__(self) -> str:
        return f"MetaGPTLLM({type(self.llm).__name__})"

    async def aask(self, prompt: str, system: str | None = None) -> str:
        answer = await self.llm.aask(prompt, system_msgs=[system] if system else None, stream=False)
        return str(answer)

    def ask(self, prompt: str, system: str | None = None) -> str:
        import asyncio
        import concurrent.futures

        # A fresh event loop in a worker thread: callable from sync code even while a loop runs here.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.aask(prompt, system)).result()


def adapt_llm(llm: Any) -> Any:
    """A MetaGPT LLM wrapped for ltm's summarizers; anything else unchanged (ltm resolves it)."""
    from metagpt.provider.base_llm import BaseLLM

    return MetaGPTLLM(llm) if isinstance(llm, BaseLLM) else llm
