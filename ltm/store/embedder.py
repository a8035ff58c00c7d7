"""Embedding calls for the store: batched, validated, and never repeated for the same content.

Every vector is keyed by ``sha256(model name, purpose, text)``. The store looks keys up in its own
SQLite rows first (so a restart never re-embeds stored content); this object keeps two bounded in-process
LRUs on top: recent content vectors (``find_news`` batches that are added right after), and query vectors
(``Settings.query_cache_size``, default 1024), so a repeated search never reaches the model: the query
vector is most of a search's time. They are apart so that a large batch of adds does not push
out the queries. Sync and async paths share everything but the model call.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ltm.config import Settings
from ltm.errors import BackendUnavailable, InvalidInput, LLMError, LTMError
from ltm.llm.names import configured_model_name
from ltm.store.beside import beside
from ltm.store.validation import normalise

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    from ltm.llm.onnx_embedding import OnnxEmbedding
    from ltm.llm.onnx_model import OnnxModel

__all__ = ["Embedder", "beside", "content_key", "make_embedder"]

# "text" vectors are what stored messages get; "query" vectors serve free-text search. Models such as
# instruction-tuned ones embed the two differently, so they are cached apart.
TEXT, QUERY = "text", "query"


class _OwnVectors(np.ndarray):
    """The vectors of ltm's own ONNX model, straight from its graph (mean pooling and L2 normalisation inside
    it): C-contiguous float32 unit rows, so the store takes them without the check any other model's get."""


# A model whose recent calls took less than this is "fast" (lookup tables, hashes, a cache in front of the
# model): work handed beside its runs cannot overlap them and only adds its hand-off (see Embedder.slow).
SLOW_RUN_S = 0.001
_RUNS_KEPT = 8  # the model's recent call times Embedder.slow looks at (their minimum: load only adds to it)


def content_key(model: str, text: str, purpose: str = TEXT) -> bytes:
    """The cache key of ``text`` embedded by ``model`` for ``purpose``."""
    return hashlib.sha256(f"{model}\x00{purpose}\x00{text}".encode("utf-8", "surrogatepass")).digest()


def make_embedder(settings: Settings, embedding: Any = None) -> Embedder:
    """The store's embedder: over ``embedding`` when the caller gave one (already loaded, its own name),
    else over the model ``settings`` names, loaded on the first embedding call and not before (a store that
    is only read never loads it)."""
    if embedding is not None:
        from ltm.llm.embeddings import model_name, resolve_embedding

        resolved = resolve_embedding(settings, embedding)
        return Embedder(resolved, model_name(resolved), query_cache_size=settings.query_cache_size)

    def load() -> BaseEmbedding | OnnxModel:
        if settings.embedding == "hash":  # the same vectors as HashEmbedding, without importing llama-index
            from ltm.llm.hashing import PlainHashEmbedding

            return cast("BaseEmbedding", PlainHashEmbedding(settings.embedding_dim))
        if settings.embedding == "local":
            from ltm.llm.local import local_runtime, onnx_model

            if local_runtime(settings) != "torch":  # the model alone: llama-index's import is most of an open
                return onnx_model(settings)
        from ltm.llm.embeddings import resolve_embedding

        return resolve_embedding(settings)

    return Embedder(None, configured_model_name(settings), factory=load, query_cache_size=settings.query_cache_size)


def _own_onnx(embedding: object) -> OnnxEmbedding | None:
    """``embedding`` when it is ltm's own :class:`~ltm.llm.onnx_embedding.OnnxEmbedding` (that very class: a
    subclass may override what calling it directly would skip), else None. Any other embedding, a caller's own
    included, is only ever called through llama-index's public entry points."""
    own = sys.modules.get("ltm.llm.onnx_embedding")  # an OnnxEmbedding exists only once its module is imported
    return embedding if own is not None and type(embedding) is own.OnnxEmbedding else None  # type: ignore[return-value]


def _plain_onnx(loaded: object) -> OnnxModel | None:
    """``loaded`` when the factory gave ltm's local model alone (:class:`~ltm.llm.onnx_model.OnnxModel`)."""
    plain = sys.modules.get("ltm.llm.onnx_model")
    return loaded if plain is not None and type(loaded) is plain.OnnxModel else None  # type: ignore[return-value]


def _own_vectors(model: OnnxModel | OnnxEmbedding, purpose: str, texts: list[str]) -> np.ndarray:
    """ltm's own model's vectors for ``texts``: a text to store longer than the model's window is embedded window
    by window (``text_vectors``), so any part of a long turn can find it; a query keeps its first window, as every
    query did, so rankings of short stored texts do not move."""
    vectors = model.text_vectors(texts) if purpose != QUERY else model.vectors(texts)
    return vectors.view(_OwnVectors)


class Embedder:
    """Wraps a llama-index ``BaseEmbedding``: batches, L2-normalises, validates and caches its vectors.

    Instead of ``embedding``, a zero-argument ``factory`` may be given: it is called on the first model call
    only, so a store that is only read (``recent``, ``get``, ``export``) never loads the model. ``model`` is the
    manifest name, known up front (:func:`ltm.llm.names.configured_model_name`); cache keys need nothing more.
    ``cache_size`` bounds the LRU of content vectors, ``query_cache_size`` that of query vectors (0: none kept).
    """

    def __init__(
        self,
        embedding: BaseEmbedding | None,
        model: str,
        cache_size: int = 4096,
        *,
        factory: Callable[[], BaseEmbedding | OnnxModel] | None = None,
        query_cache_size: int = 1024,
    ) -> None:
        if embedding is None and factory is None:
            raise InvalidInput("Embedder needs an embedding or a factory that makes one")
        self._embedding = embedding
        self._factory = factory
        self.model = model
        self.calls = 0  # model calls made (one per batch), for tests and stats
        self._caches: dict[str, OrderedDict[bytes, np.ndarray]] = {TEXT: OrderedDict(), QUERY: OrderedDict()}
        self._sizes = {TEXT: cache_size, QUERY: query_cache_size}
        self._lock = threading.Lock()
        self._own = _own_onnx(embedding)
        # ltm's local model as the factory loaded it, without its llama-index wrapper (made when asked for)
        self._plain: OnnxModel | None = None
        self._runs: deque[float] = deque(maxlen=_RUNS_KEPT)  # seconds of the recent successful model calls

    @property
    def embedding(self) -> BaseEmbedding:
        """The llama-index embedding, loaded on first use (ltm's local model: wrapped when first asked for)."""
        if self._embedding is None:
            with self._lock:
                if self._embedding is None and self._factory is not None:
                    loaded = self._plain if self._plain is not None else self._factory()
                    plain = _plain_onnx(loaded)
                    if plain is not None:
                        from ltm.llm.onnx_embedding import OnnxEmbedding

                        loaded = OnnxEmbedding.of(plain)
                    self._own = _own_onnx(loaded)  # before the embedding shows: no call sees one without it
                    self._embedding = cast("BaseEmbedding", loaded)
        assert self._embedding is not None
        return self._embedding

    def _model(self) -> OnnxModel | None:
        """ltm's local model to run directly while llama-index is not even imported (then nothing can listen to
        its calls, and the wrapper is not needed); None once it is, or for any other model: see :meth:`_call`."""
        if self._embedding is None and self._plain is None and self._factory is not None:
            with self._lock:
                if self._embedding is None and self._plain is None:
                    loaded = self._factory()
                    plain = _plain_onnx(loaded)
                    if plain is None:
                        self._own = _own_onnx(loaded)
                        self._embedding = cast("BaseEmbedding", loaded)
                    self._plain = plain
        if self._embedding is None and self._plain is not None and "llama_index.core" not in sys.modules:
            return self._plain
        return None

    def slow(self) -> bool:
        """False once one of the model's recent calls took less than SLOW_RUN_S (True before any call): whether
        work run beside the next call (``embed``'s ``during``) can hide behind it. An add stages its messages
        only then (ltm.store.adding.add_groups): against a model that answers in microseconds the staged
        commit's fsync overlaps nothing, and its second transaction and hand-off cost ~13% of an add. The
        minimum, not a mean: a first call's warm-up or a loaded machine only ever makes a call slower."""
        runs = self._runs
        return not runs or min(runs) >= SLOW_RUN_S

    def keys(self, texts: Sequence[str], purpose: str = TEXT) -> list[bytes]:
        return [content_key(self.model, t, purpose) for t in texts]

    def embed(
        self,
        texts: Sequence[str],
        dim: int | None,
        known: Callable[[list[bytes]], dict[bytes, np.ndarray]] | None = None,
        purpose: str = TEXT,
        during: Callable[[], object] | None = None,
    ) -> np.ndarray:
        """Unit vectors for ``texts`` as an (n, dim) float32 array; only unseen content reaches the model.

        ``during`` runs on a helper thread while the model runs, and only if the model is called: the call
        returns (or raises the model's error) once it is done too, and raises its error if only it failed."""
        keys, have, todo = self._plan(texts, known, purpose)
        if todo:
            helper = beside(during) if during is not None else None
            try:
                got = self._call(purpose, [texts[i] for i in todo])
            except BaseException:
                if helper is not None:
                    helper.wait()  # finished before the caller undoes what it did
                raise
            if helper is not None:
                helper.result()
            self._store(keys, todo, got, dim, have, purpose)
        return self._gather(keys, have, dim)

    async def aembed(
        self,
        texts: Sequence[str],
        dim: int | None,
        known: Callable[[list[bytes]], dict[bytes, np.ndarray]] | None = None,
        purpose: str = TEXT,
        run: Callable[..., Awaitable[Any]] | None = None,
    ) -> np.ndarray:
        """Async twin of :meth:`embed` (the model call is awaited; ``run`` awaits the lookup of stored
        vectors off the event loop)."""
        keys, have, todo = await run(self._plan, texts, known, purpose) if run else self._plan(texts, known, purpose)
        if todo:
            self._store(keys, todo, await self._acall(purpose, [texts[i] for i in todo]), dim, have, purpose)
        return self._gather(keys, have, dim)

    # -- shared logic ------------------------------------------------------------------------------------
    def _plan(
        self, texts: Sequence[str], known: Callable[[list[bytes]], dict[bytes, np.ndarray]] | None, purpose: str
    ) -> tuple[list[bytes], dict[bytes, np.ndarray], list[int]]:
        keys = self.keys(texts, purpose)
        have: dict[bytes, np.ndarray] = {}
        cache = self._cache(purpose)
        with self._lock:
            for key in keys:
                vec = cache.get(key)
                if vec is not None:
                    have[key] = vec
                    cache.move_to_end(key)
        missing = [k for k in dict.fromkeys(keys) if k not in have]
        if missing and known is not None and purpose != QUERY:  # stored rows hold content keys only
            have.update(known(missing))
        todo: list[int] = []
        planned: set[bytes] = set()
        for i, key in enumerate(keys):
            if key not in have and key not in planned:
                planned.add(key)
                todo.append(i)
        return keys, have, todo

    def _store(
        self,
        keys: list[bytes],
        todo: list[int],
        raw: list[list[float]] | np.ndarray,
        dim: int | None,
        have: dict[bytes, np.ndarray],
        purpose: str,
    ) -> None:
        if len(raw) != len(todo):
            raise LLMError(f"the embedding returned {len(raw)} vectors for {len(todo)} texts; fix the model")
        if isinstance(raw, _OwnVectors) and (dim is None or raw.shape[1] == dim):
            vectors: np.ndarray = raw  # ltm's own model: unit float32 rows by construction (its graph normalises)
        else:
            vectors = normalise(raw, dim, f"embedding {self.model!r}")
        with self._lock:
            for i, vec in zip(todo, vectors, strict=True):
                have[keys[i]] = vec
                self._put(purpose, keys[i], vec)

    def _gather(self, keys: list[bytes], have: dict[bytes, np.ndarray], dim: int | None) -> np.ndarray:
        if not keys:
            return np.zeros((0, dim or 0), dtype=np.float32)
        if len(keys) == 1:  # one add, one query: a copy of the row, without stack's machinery
            return np.array(have[keys[0]], dtype=np.float32, ndmin=2)
        return np.ascontiguousarray(np.stack([have[k] for k in keys]), dtype=np.float32)

    def drop_cache(self) -> None:
        """Forget the cached vectors (a parked namespace's: stored ones come back from SQLite by key)."""
        with self._lock:
            for cache in self._caches.values():
                cache.clear()

    def cached(self, purpose: str = QUERY) -> int:
        """How many ``purpose`` vectors the in-process cache holds now."""
        return len(self._cache(purpose))

    def _cache(self, purpose: str) -> OrderedDict[bytes, np.ndarray]:
        return self._caches[QUERY if purpose == QUERY else TEXT]

    def _put(self, purpose: str, key: bytes, vec: np.ndarray) -> None:
        cache, size = self._cache(purpose), self._sizes[QUERY if purpose == QUERY else TEXT]
        if size <= 0:
            return
        cache[key] = vec
        cache.move_to_end(key)
        while len(cache) > size:
            cache.popitem(last=False)

    # -- the only I/O ------------------------------------------------------------------------------------
    def _call(self, purpose: str, texts: list[str]) -> list[list[float]] | np.ndarray:
        self.calls += 1
        try:
            # ltm's own model run directly when nobody can listen: llama-index not imported, or its wrapper unobserved
            direct: OnnxModel | OnnxEmbedding | None = self._model()
            if direct is None:
                embedding, own = self.embedding, self._own
                direct = own if own is not None and own.unobserved() else None
            start = time.perf_counter()
            if direct is not None:
                out: list[list[float]] | np.ndarray = _own_vectors(direct, purpose, texts)
            elif purpose == QUERY and (len(texts) == 1 or own is not None):
                # ltm's own model embeds a query's lines as queries (first window), stored texts window by window
                out = [embedding.get_query_embedding(text) for text in texts]
            else:
                out = embedding.get_text_embedding_batch(texts)
        except LTMError:
            raise
        except Exception as exc:  # the model is caller-supplied: any failure becomes one clear error
            raise self._failed(exc, len(texts)) from exc
        self._timed(time.perf_counter() - start)
        return out

    def _timed(self, seconds: float) -> None:
        self._runs.append(seconds)  # deque.append is atomic: threads calling the model at once lose nothing

    async def _acall(self, purpose: str, texts: list[str]) -> list[list[float]] | np.ndarray:
        self.calls += 1
        try:
            plain = self._model()
            start = time.perf_counter()
            if plain is not None:  # as in _call: the model alone (llama-index's async calls run it in line too)
                out: list[list[float]] | np.ndarray = _own_vectors(plain, purpose, texts)
            elif purpose == QUERY and (len(texts) == 1 or self._own is not None):
                embedding = self.embedding
                out = [await embedding.aget_query_embedding(text) for text in texts]
            else:
                out = await self.embedding.aget_text_embedding_batch(texts)
        except LTMError:
            raise
        except Exception as exc:
            raise self._failed(exc, len(texts)) from exc
        self._timed(time.perf_counter() - start)
        return out

    def _failed(self, exc: Exception, count: int) -> LTMError:
        """A failed model call is never the caller's input: an outage -> BackendUnavailable, else LLMError."""
        service = f"embedding {self.model!r} on {count} text(s)"
        if type(exc).__module__.split(".")[0] == "openai":  # llama-index's OpenAI embeddings: the one mapping
            from ltm.llm.openai_llm import translate_openai_error

            return translate_openai_error(exc, service)
        if isinstance(exc, ConnectionError | TimeoutError):
            return BackendUnavailable(f"{service} failed: {type(exc).__name__}: {exc}; is the model's server up?")
        return LLMError(f"{service} failed: {type(exc).__name__}: {exc}; check the embedding model")
