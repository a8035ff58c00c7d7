"""``BrainMemory``: a chat's history, running summary and title, kept in Redis or the embedded KV store.

MetaGPT's API and meanings (``add_talk``, ``loads``, ``dumps``, ``summarize``, ``get_title``, ...), with
these differences, all deliberate:

- Each chat lives under its own key (:meth:`BrainMemory.to_redis_key` ``prefix:user_id:chat_id``); the memory
  remembers the key it was loaded from or dumped to, and ``summarize``/``get_title`` write that chat's summary
  there (MetaGPT wrote every chat's summary to one global key).
- Layout under key ``K`` (inside the KV prefix): a hash ``brain:{K}`` (summary, knowledge, last ids) and a list
  ``brain:{K}:history`` of message JSON, so saving new messages appends them in O(1) each. The ``{K}`` hash tag
  keeps both in one Redis Cluster slot.
- The summary fold (write the summary, drop the summarized messages) is one atomic KV batch, done only after
  the LLM answered: a failure leaves history and summary exactly as they were. Messages added while the LLM
  was working are kept.
- Only the memory is stored: no LLM, no config, no secrets.
- Backend failures raise ``BackendUnavailable`` (never an empty history), and so does an LLM server that stays
  unreachable through its retries; an LLM that refuses the request or answers nonsense raises ``LLMError``.
- Budgets are tokens (:mod:`ltm.llm.tokens`); long histories are summarized by windowed map-reduce with at
  most ``max_llm_calls`` LLM calls (:mod:`ltm.llm.tasks`).
- ``llm=None`` means the LLM the settings configure, which is the offline extractive summarizer unless
  ``settings.llm == "openai"``. The static ``is_related``/``rewrite`` see no settings: ``None`` is offline.
- The TTL is ``settings.brain_ttl_seconds`` (MetaGPT: 30 minutes; None keeps forever) unless ``dumps`` gets one.

One writer per chat key at a time (as in MetaGPT); readers may be anywhere. The I/O methods are async, as in
MetaGPT; KV calls run in a worker thread so the event loop is never blocked.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.kv import KVStore, open_kv
from ltm.llm.base import LLM, LLMLike, Summarizer, resolve_llm
from ltm.llm.extractive import ExtractiveLLM
from ltm.llm.tasks import OVERLAP_TOKENS, SummaryRun, ask_related, ask_rewrite, ask_title, summarize_text
from ltm.llm.tokens import count_tokens, split_tokens
from ltm.message import Message

__all__ = ["BrainMemory"]

NAMESPACE_CHATS = "nschat"  # the prefix of BrainMemory.namespace_key's keys

_LOAD_ATTEMPTS = 5


class BrainMemory(BaseModel):
    """A chat's memory. Construct with ``settings`` (the KV backend comes from :func:`~ltm.kv.open_kv`)
    or an injected ``kv``; ``window_tokens``/``max_llm_calls`` bound the cost of a summary."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    history: list[Message] = Field(default_factory=list)
    knowledge: list[Message] = Field(default_factory=list)
    historical_summary: str = ""
    last_history_id: str = ""
    is_dirty: bool = False
    last_talk: str | None = None
    cacheable: bool = True
    summary_is_extractive: bool = Field(False, description="True when the summary was made offline, extractively.")

    _settings: Settings | None = PrivateAttr(default=None)
    _kv: KVStore | None = PrivateAttr(default=None)
    _key: str | None = PrivateAttr(default=None)
    _persisted: int = PrivateAttr(default=0)  # leading history messages known to be in the KV list
    _lock: asyncio.Lock = PrivateAttr(default_factory=asyncio.Lock)
    _window_tokens: int = PrivateAttr(default=4096)
    _max_llm_calls: int = PrivateAttr(default=32)
    _last_run: SummaryRun | None = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        kv: KVStore | None = None,
        window_tokens: int = 4096,
        max_llm_calls: int = 32,
        **data: Any,
    ) -> None:
        super().__init__(**data)
        self._settings = settings
        self._kv = kv
        self._window_tokens = window_tokens
        self._max_llm_calls = max_llm_calls

    # -- the in-memory API (no I/O), as in MetaGPT ----------------------------------------------------------

    @property
    def last_run(self) -> SummaryRun | None:
        """What the last ``summarize`` did (LLM calls, map levels, extractive or not)."""
        return self._last_run

    @property
    def redis_key(self) -> str | None:
        """The key this memory was loaded from or last dumped to."""
        return self._key

    def add_talk(self, msg: Message | str) -> None:
        """Add a user message (a copy with role "user"; the caller's message is not changed)."""
        self.add_history(_as_message(msg).model_copy(update={"role": "user"}))

    def add_answer(self, msg: Message | str) -> None:
        """Add an assistant message (a copy with role "assistant")."""
        self.add_history(_as_message(msg).model_copy(update={"role": "assistant"}))

    def add_history(self, msg: Message) -> None:
        """Append ``msg`` unless it repeats the last one added (same id, or a numeric id not above the last).
        InvalidInput when it could not be saved (checked now: one bad message would fail every later dumps)."""
        msg.dump()
        last = self.last_history_id
        if msg.id and last and (msg.id == last or 0 <= self.to_int(msg.id, -1) <= self.to_int(last, -2)):
            return
        self.history.append(msg)
        self.last_history_id = str(msg.id)
        self.is_dirty = True

    def get_knowledge(self) -> str:
        return "\n".join(m.content for m in self.knowledge)

    def exists(self, text: str) -> bool:
        """True when a history message has exactly this content."""
        return any(m.content == text for m in reversed(self.history))

    @staticmethod
    def to_int(v: Any, default_value: int) -> int:
        try:
            return int(v)
        except (TypeError, ValueError):
            return default_value

    def pop_last_talk(self) -> str | None:
        value, self.last_talk = self.last_talk, None
        return value

    @property
    def is_history_available(self) -> bool:
        return bool(self.history or self.historical_summary)

    @property
    def history_text(self) -> str:
        """The summary, then the history's contents except the last message (the one being answered)."""
        texts = [self.historical_summary] if self.historical_summary else []
        texts.extend(m.content for m in self.history[:-1])
        return "\n".join(texts)

    @staticmethod
    def to_redis_key(prefix: str, user_id: str, chat_id: str) -> str:
        return f"{prefix}:{user_id}:{chat_id}"

    @staticmethod
    def namespace_key(namespace: str, chat_id: str) -> str:
        """The key of chat ``chat_id`` of ``namespace`` where ltm's service keeps it, so the HTTP API and the
        inspector list it under that namespace: ``nschat:<namespace percent-encoded>:<chat_id>`` (the encoded
        namespace holds no ``:``, so the first one after it ends it; see ``ltm.service.chatkeys``)."""
        return BrainMemory.to_redis_key(NAMESPACE_CHATS, quote(namespace, safe=""), chat_id)

    @staticmethod
    def extract_info(input_string: str, pattern: str = r"\[([A-Z]+)\]:\s*(.+)") -> tuple[str | None, str]:
        """``"[TALK]:Hello"`` -> ``("TALK", "Hello")``; anything else -> ``(None, input_string)``."""
        match = re.match(pattern, input_string)
        return (match.group(1), match.group(2)) if match else (None, input_string)

    @staticmethod
    def split_texts(text: str, window_size: int) -> list[str]:
        """``text`` in windows of ``window_size`` tokens overlapping by 20 (MetaGPT counted characters)."""
        window_size = window_size if window_size > 0 else 4096
        return split_tokens(text, window_size, OVERLAP_TOKENS if window_size > OVERLAP_TOKENS else 0)

    # -- storage ------------------------------------------------------------------------------------------

    def _config(self) -> Settings:
        # read per use, not cached: a memory built without settings follows the LTM_* environment of the moment
        return self._settings or Settings.load()

    def _store(self) -> KVStore:
        if self._kv is None:
            self._kv = open_kv(self._config())
        return self._kv

    def _ttl(self, timeout_sec: int | None) -> int | None:
        if timeout_sec is not None:
            return timeout_sec
        return self._config().brain_ttl_seconds

    @staticmethod
    def _names(key: str) -> tuple[str, str]:
        if not isinstance(key, str) or not key:
            raise InvalidInput("a BrainMemory key must be a non-empty str: use BrainMemory.to_redis_key(...)")
        return f"brain:{{{key}}}", f"brain:{{{key}}}:history"

    async def loads(self, redis_key: str) -> BrainMemory:
        """The memory stored at ``redis_key`` (a fresh one bound to it when there is none).

        Raises ``BackendUnavailable`` when the backend cannot be read: an outage is never an empty history.
        """
        meta_key, hist_key = self._names(redis_key)
        store = self._store()

        def read() -> tuple[dict[str, str], list[str]]:
            for _ in range(_LOAD_ATTEMPTS):  # a fold between the reads would mix two versions: read again
                before = store.hgetall(meta_key)
                items = store.lrange(hist_key)
                if store.hgetall(meta_key).get("rev") == before.get("rev"):
                    return before, items
            return before, items

        meta, items = await asyncio.to_thread(read)
        memory = type(self)(
            settings=self._settings, kv=store, window_tokens=self._window_tokens, max_llm_calls=self._max_llm_calls
        )
        if meta:
            memory.historical_summary = meta.get("summary", "")
            memory.last_history_id = meta.get("last_history_id", "")
            memory.knowledge = [Message.load(m) for m in json.loads(meta.get("knowledge", "[]"))]
            memory.last_talk = json.loads(meta.get("last_talk", "null"))
            memory.cacheable = meta.get("cacheable", "1") == "1"
            memory.summary_is_extractive = meta.get("summary_is_extractive", "0") == "1"
        memory.history = [Message.load(m) for m in items]
        memory._key, memory._persisted = redis_key, len(items)
        return memory

    async def dumps(self, redis_key: str | None = None, timeout_sec: int | None = None) -> bool:
        """Save to ``redis_key`` (default: the remembered key) with a TTL of ``timeout_sec`` seconds (default
        ``settings.brain_ttl_seconds``). New messages are appended; returns True when something was written."""
        key = redis_key or self._key
        if not key:
            raise InvalidInput("dumps() needs a redis_key (or a memory that was loaded from one)")
        async with self._lock:
            if not self.is_dirty and key == self._key:
                return False
            if not self.cacheable:
                self._key, self.is_dirty = key, False
                return False
            await self._write(
                key,
                self._ttl(timeout_sec),
                folded=0,
                summary=self.historical_summary,
                extractive=self.summary_is_extractive,
            )
            return True

    async def delete(self, redis_key: str | None = None) -> bool:
        """Delete the chat stored at ``redis_key`` (default: the remembered key): its history, summary and title.

        Returns True when there was something to delete. This memory's own fields are left as they are.
        """
        key = redis_key or self._key
        if not key:
            raise InvalidInput("delete() needs a redis_key (or a memory that was loaded from one)")
        names = self._names(key)
        store = self._store()
        return bool(await asyncio.to_thread(store.delete, *names))

    async def set_history_summary(self, history_summary: str, redis_key: str | None = None) -> None:
        """Replace the summary and clear the history, atomically and durably (MetaGPT's meaning)."""
        key = redis_key or self._key
        async with self._lock:
            if history_summary == self.historical_summary and not self.history:
                if self.is_dirty and key:
                    await self._write(key, self._ttl(None), 0, history_summary, self.summary_is_extractive)
                return
            await self._fold(key, history_summary, len(self.history), extractive=False)

    async def _fold(self, key: str | None, summary: str, folded: int, extractive: bool) -> None:
        if key and self.cacheable:
            await self._write(key, self._ttl(None), folded, summary, extractive)
        else:  # nowhere to write: an in-memory fold
            self.history = self.history[folded:]
            self.historical_summary, self.summary_is_extractive = summary, extractive
            self.is_dirty = bool(self.history)

    async def _write(self, key: str, ttl: int | None, folded: int, summary: str, extractive: bool) -> None:
        """One atomic batch: meta, history (trimmed by ``folded``, new messages appended), TTLs. The in-memory
        state changes only after the batch committed."""
        meta_key, hist_key = self._names(key)
        store, history, persisted, same_key = self._store(), list(self.history), self._persisted, key == self._key
        meta = {
            "summary": summary,
            "summary_is_extractive": "1" if extractive else "0",
            "last_history_id": self.last_history_id,
            "knowledge": json.dumps([m.dump() for m in self.knowledge]),
            "last_talk": json.dumps(self.last_talk),
            "cacheable": "1" if self.cacheable else "0",
            "rev": uuid.uuid4().hex,
        }

        def write() -> None:
            incremental = same_key and persisted >= folded and store.llen(hist_key) == persisted
            with store.atomic() as tx:
                tx.hset(meta_key, meta)
                if incremental:
                    if folded:
                        tx.ltrim(hist_key, folded, -1)
                    tx.rpush(hist_key, *(m.dump() for m in history[persisted:]))
                else:  # another key, or the stored list is not what we wrote (e.g. the server lost it): rewrite
                    tx.delete(hist_key)
                    tx.rpush(hist_key, *(m.dump() for m in history[folded:]))
                tx.expire(meta_key, ttl)
                tx.expire(hist_key, ttl)

        await asyncio.to_thread(write)
        self.history = self.history[folded:]
        self.historical_summary, self.summary_is_extractive = summary, extractive
        self._key, self._persisted, self.is_dirty = key, len(self.history), False

    # -- LLM tasks --------------------------------------------------------------------------------------

    def _llm(self, llm: LLMLike | None) -> LLM:
        return resolve_llm(self._config(), llm)

    async def summarize(
        self,
        llm: LLMLike | None = None,
        max_words: int = 200,
        keep_language: bool = False,
        limit: int = -1,
        **kwargs: Any,
    ) -> str:
        """Summarize summary + history in at most ``max_words`` words and fold it into this chat's key.

        With ``limit > 0`` and a text under ``limit`` tokens, the text itself is returned and nothing is
        written (MetaGPT's meaning, in tokens instead of characters).
        """
        model = self._llm(llm)
        folded = len(self.history)
        # the offline summarizer keeps who said each sentence when every line names its speaker; an LLM gets the
        # contents alone, as MetaGPT sends them
        turn = _spoken if isinstance(model, Summarizer) else _content
        texts = ([self.historical_summary] if self.historical_summary else []) + [
            turn(m) for m in self.history[:folded]
        ]
        text = "\n".join(texts)
        if limit > 0 and count_tokens(text) < limit:
            return text
        if not text.strip():
            return ""
        run = await summarize_text(
            text,
            model,
            max_words=max_words,
            keep_language=keep_language,
            window_tokens=self._window_tokens,
            max_calls=self._max_llm_calls,
        )
        self._last_run = run
        async with self._lock:
            await self._fold(self._key, run.summary, folded, run.extractive)
        return run.summary

    async def get_title(self, llm: LLMLike | None = None, max_words: int = 5, **kwargs: Any) -> str:
        """A title of less than ``max_words`` words for the chat (summarizes first, as MetaGPT does)."""
        model = self._llm(llm)
        summary = await self.summarize(llm=model, max_words=500)
        if not summary.strip():
            return "New"
        return await ask_title(summary, model, max_words)

    @staticmethod
    async def is_related(text1: str, text2: str, llm: LLMLike | None = None) -> bool:
        """Whether ``text1`` is semantically related to ``text2``; a strict yes/no ("NOT TRUE" is not)."""
        return await ask_related(text1, text2, ExtractiveLLM() if llm is None else resolve_llm(None, llm))

    @staticmethod
    async def rewrite(sentence: str, context: str, llm: LLMLike | None = None) -> str:
        """``sentence`` augmented with information from ``context``."""
        return await ask_rewrite(sentence, context, ExtractiveLLM() if llm is None else resolve_llm(None, llm))


def _content(message: Message) -> str:
    return message.content


def _spoken(message: Message) -> str:
    """Each line of the turn as "speaker: line": the speaker is its metadata ``speaker``, else who sent it, else
    its role (user, assistant)."""
    speaker = str(message.metadata.get("speaker") or message.sent_from or message.role).replace(":", " ").strip()
    lines = [line for line in message.content.splitlines() if line.strip()]
    return "\n".join(f"{speaker}: {line}" if speaker else line for line in lines)


def _as_message(msg: Message | str) -> Message:
    if isinstance(msg, Message):
        return msg
    if isinstance(msg, str):
        return Message(msg)
    raise InvalidInput(f"expected a Message or str, got {type(msg).__name__}")
