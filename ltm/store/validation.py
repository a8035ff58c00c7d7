"""What the store accepts, checked before anything is written so bad input never reaches the files.

Decisions (documented here because the signatures cannot say them):

- Empty or whitespace-only content is refused: it has no meaning to embed, and remote embedding APIs
  reject it. Keep such messages in short-term memory only.
- Content above ``settings.max_content_bytes`` UTF-8 bytes is refused; split it first.
- NUL characters and unpaired surrogates are refused (SQLite text and UTF-8 cannot hold them faithfully).
  Other control characters (tabs, ANSI colour codes from tool output) are stored verbatim.
- Every other text field (id, role, cause_by, sent_from, send_to, metadata keys and strings) must be valid
  Unicode without NUL and at most ``MAX_FIELD_BYTES`` (metadata as JSON: ``max_content_bytes``), metadata at
  most ``MAX_DEPTH`` levels deep, and every number finite: one NaN in a row's metadata JSON made SQLite's
  json functions fail on every metadata-filtered search of the namespace, and a NaN
  ``created_at`` became NULL and was silently ignored by ``INSERT OR IGNORE``.
- A metadata key (at any depth) may hold ``.`` (every framework's own store takes such keys); a filter names it
  with the dot escaped, ``metadata.a\\.b`` for key ``a.b`` (``metadata.a.b`` is key ``b`` inside key ``a``: see
  :func:`ltm.store.search.filters.metadata_keys`).
- Vectors from an embedding must have the namespace's dimension, be finite and non-zero; they are
  L2-normalised here so inner product is cosine similarity.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ltm.errors import InvalidInput, StoreMismatch
from ltm.message import Message

__all__ = [
    "CONTEXT_KEY",
    "MAX_DEPTH",
    "MAX_FIELD_BYTES",
    "MAX_K",
    "check_content",
    "check_id",
    "check_k",
    "check_message",
    "checked_json",
    "context_text",
    "held_by_another_model",
    "normalise",
    "text_of",
]

CONTEXT_KEY = "embed_context"  # metadata key: text embedded as a conversation turn's second vector
MAX_FIELD_BYTES = 4096  # id, role, cause_by, sent_from, each send_to entry: names, not content
MAX_DEPTH = 32  # nesting levels of metadata (json and the SQLite json functions recurse)
MAX_K = 100_000  # results per search or recent(): a bigger k allocates k-sized arrays in FAISS


def check_content(text: str, max_bytes: int, what: str = "content") -> None:
    """Raise InvalidInput unless ``text`` can be stored and embedded."""
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a str, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInput(
            f"{what} is empty; the long-term store needs text to embed (keep empty messages in short-term memory)"
        )
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{what} contains an unpaired surrogate at position {exc.start}; decode the source with "
            "errors='replace' or drop the character"
        ) from exc
    if size > max_bytes:
        raise InvalidInput(
            f"{what} is {size} bytes, above max_content_bytes={max_bytes}; split it into several messages "
            "or raise LTM_MAX_CONTENT_BYTES"
        )
    if "\x00" in text:
        raise InvalidInput(f"{what} contains a NUL character at position {text.index(chr(0))}; remove it")


def _check_text(text: object, what: str | tuple[Any, ...], max_bytes: int = MAX_FIELD_BYTES) -> None:
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a str, got {type(text).__name__}")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{what} contains an unpaired surrogate at position {exc.start}; pass valid Unicode "
            "(decode the source with errors='replace')"
        ) from exc
    if size > max_bytes:
        raise InvalidInput(
            f"{what} is {size} bytes, above the {max_bytes}-byte limit; shorten it (long text belongs in content)"
        )
    if "\x00" in text:
        raise InvalidInput(f"{what} contains a NUL character; remove it")


def _check_value(value: Any, what: str, depth: int, path: tuple[Any, ...] = ()) -> None:
    """Metadata values: JSON types only in spirit (others are stored as str), finite numbers, bounded depth.
    ``path``: the keys and indexes from ``what`` down to ``value``, written into a message only on an error (a
    message's metadata holds dozens of values, and a store checks every message it writes)."""
    if depth > MAX_DEPTH:
        raise InvalidInput(f"{_at(what, path)} is nested more than {MAX_DEPTH} levels deep; flatten it")
    if isinstance(value, str):
        if "\x00" in value or not value.isascii():  # what may fail the check: NUL, or an unpaired surrogate
            _check_text(value, _at(what, path), max_bytes=1 << 62)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and (len(key) > MAX_FIELD_BYTES // 4 or "\x00" in key or not key.isascii()):
                _check_text(key, f"{_at(what, path)} key", max_bytes=MAX_FIELD_BYTES)
            if isinstance(item, str) and depth < MAX_DEPTH:  # the common value, checked here without a call
                if "\x00" in item or not item.isascii():
                    _check_text(item, _at(what, (*path, key)), max_bytes=1 << 62)
            elif type(item) is float and depth < MAX_DEPTH:  # a time, a score: checked here too
                if not math.isfinite(item):
                    _check_value(item, what, depth + 1, (*path, key))
            elif isinstance(item, dict | list | tuple | set | frozenset | float) or depth >= MAX_DEPTH:
                _check_value(item, what, depth + 1, (*path, key))
    elif isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            if isinstance(item, str | dict | list | tuple | set | frozenset | float) or depth >= MAX_DEPTH:
                _check_value(item, what, depth + 1, (*path, i))
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(
            f"{_at(what, path)} is {value!r}; metadata numbers must be finite (store it as a string or None)"
        )


def _at(what: str, path: tuple[Any, ...]) -> str:
    """``what`` followed by the path into it, as ``what['key'][0]``."""
    return what + "".join(f"[{step!r}]" if isinstance(step, str) else f"[{step}]" for step in path)


def check_id(message_id: object) -> str:
    """A message id as given to ``get`` / ``delete``: a non-empty str, else InvalidInput."""
    if not isinstance(message_id, str) or not message_id:
        raise InvalidInput(f"a message id is a non-empty str, got {message_id!r}; pass message.id")
    _check_text(message_id, "message id")
    return message_id


def check_k(k: object, what: str = "k") -> int:
    """``k`` (results wanted) as an int in [0, MAX_K], else InvalidInput."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise InvalidInput(f"{what} must be an int >= 0, got {k!r}")
    if k > MAX_K:
        raise InvalidInput(f"{what}={k} is above {MAX_K:,}; read everything with export() instead")
    return k


def check_message(message: object, max_bytes: int) -> Message:
    """The message itself when it can be stored; InvalidInput naming its id otherwise."""
    checked_json(message, max_bytes)
    assert isinstance(message, Message)
    return message


def checked_json(message: object, max_bytes: int) -> str:
    """:func:`check_message`, returning the message's metadata as the JSON its row stores."""
    if not isinstance(message, Message):
        kind = type(message)
        hint = (
            "use ltm.integrations.metagpt, whose classes take MetaGPT's messages"
            if kind.__module__.startswith("metagpt.")
            else "wrap it: ltm.Message(...)"
        )
        got = f"{kind.__module__}.{kind.__name__}"
        raise InvalidInput(f"the store holds ltm.message.Message objects, got {got}; {hint}")
    _check_text(message.id, "message id")
    what = f"message {message.id}"
    check_content(message.content, max_bytes, what=f"{what} content")
    for name in ("role", "cause_by", "sent_from"):
        _check_text(getattr(message, name), f"{what} {name}")
    for target in message.send_to:
        _check_text(target, f"{what} send_to entry")
    created = message.created_at
    if not isinstance(created, int | float) or isinstance(created, bool) or not math.isfinite(created):
        raise InvalidInput(f"{what} created_at is {created!r}; it must be finite unix seconds (time.time())")
    _check_value(message.metadata, f"{what} metadata", 1)
    ic = message.instruct_content
    if ic is not None:
        _check_value(ic if isinstance(ic, dict) else ic.model_dump(mode="python"), f"{what} instruct_content", 1)
    try:
        encoded = json.dumps(message.metadata, default=str, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError) as exc:
        raise InvalidInput(f"{what} metadata cannot be stored as JSON ({exc}); use JSON types") from exc
    size = len(encoded.encode("utf-8"))
    if size > max_bytes:
        raise InvalidInput(
            f"{what} metadata is {size} bytes as JSON, above max_content_bytes={max_bytes}; "
            "keep large data in content or outside the store"
        )
    return encoded


def context_text(message: Message, max_bytes: int) -> str | None:
    """The message's ``metadata["embed_context"]`` (set by ``with_context``), checked; None when absent."""
    text = message.metadata.get(CONTEXT_KEY)
    if text is None or text == "":
        return None
    check_content(text, max_bytes, what=f"message {message.id} metadata[{CONTEXT_KEY!r}]")
    return str(text)


def held_by_another_model(namespace: str, held: int, recorded: str, model: str, migrate: str) -> StoreMismatch:
    """The refusal of ``model`` by a namespace holding ``held`` messages' vectors of ``recorded``: what is there and
    the fix. A namespace records its model with its first vector, so this is only ever said of one that holds
    vectors (one without takes any model)."""
    return StoreMismatch(
        f"namespace {namespace!r} holds the vectors of {held} message{'s' if held != 1 else ''} made by embedding "
        f"model {recorded!r}, not {model!r}: vectors of two models cannot be compared. Open it with {recorded!r}, "
        f"or {migrate}; or delete its messages (delete_all) and it takes any model"
    )


def normalise(vectors: Sequence[Sequence[float]] | np.ndarray, dim: int | None, source: str) -> np.ndarray:
    """Vectors as a C-contiguous float32 (n, dim) array of unit rows, or InvalidInput naming ``source``."""
    if not isinstance(vectors, np.ndarray):
        lengths = sorted({len(v) for v in vectors})
        if len(lengths) > 1:
            raise InvalidInput(f"{source} returned vectors of unequal dimension {lengths}; fix the embedding model")
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{source} returned something that is not a list of equal-dimension vectors") from exc
    if array.ndim != 2 or array.shape[1] == 0:
        raise InvalidInput(f"{source} returned vectors of shape {array.shape}; expected (n, dim)")
    if dim is not None and array.shape[1] != dim:
        raise InvalidInput(
            f"{source} returned {array.shape[1]}-dimensional vectors but this namespace holds {dim}; "
            "use the embedding the namespace was built with"
        )
    if not np.isfinite(array).all():
        raise InvalidInput(f"{source} returned NaN or infinite values; fix the embedding model or its input")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if (norms == 0).any():
        raise InvalidInput(f"{source} returned an all-zero vector, which has no direction; fix the embedding")
    return np.ascontiguousarray(array / norms, dtype=np.float32)


def text_of(message: Message | str) -> str:
    """The text a similarity query compares: a message's content, or the string itself."""
    if isinstance(message, Message):
        return message.content
    if isinstance(message, str):
        return message
    raise InvalidInput(f"expected a Message or a str, got {type(message).__name__}")
