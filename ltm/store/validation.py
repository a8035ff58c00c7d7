"""What the store accepts, checked before anything is written so bad input never reaches the files.

Decisions (documented here because the signatures cannot say them):

- Empty or whitespace-only content is refused: it has no meaning to embed, and remote embedding APIs
  reject it. Keep such messages in short-term memory only.
- Content above ``settings.max_content_bytes`` UTF-8 bytes is refused; split it first.
- NUL characters and unpaired surrogates are refused (SQLite text and UTF-8 cannot hold them faithfully).
  Other control characters (tabs, ANSI colour codes from tool output) are stored verbatim.
- Vectors from an embedding must have the namespace's dimension, be finite and non-zero; they are
  L2-normalised here so inner product is cosine similarity.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ltm.errors import InvalidInput
from ltm.message import Message

__all__ = ["CONTEXT_KEY", "check_content", "check_message", "context_text", "normalise"]

CONTEXT_KEY = "embed_context"  # metadata key: text embedded as a conversation turn's second vector


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


def check_message(message: object, max_bytes: int) -> Message:
    """The message itself when it can be stored; InvalidInput naming its id otherwise."""
    if not isinstance(message, Message):
        kind = type(message)
        hint = (
            "use ltm.integrations.metagpt, whose classes take MetaGPT's messages"
            if kind.__module__.startswith("metagpt.") else "wrap it: ltm.Message(...)"
        )
        got = f"{kind.__module__}.{kind.__name__}"
        raise InvalidInput(f"the store holds ltm.message.Message objects, got {got}; {hint}")
    check_content(message.content, max_bytes, what=f"message {message.id} content")
    return message


def context_text(message: Message, max_bytes: int) -> str | None:
    """The message's ``metadata["embed_context"]`` (set by ``with_context``), checked; None when absent."""
    text = message.metadata.get(CONTEXT_KEY)
    if text is None or text == "":
        return None
    check_content(text, max_bytes, what=f"message {message.id} metadata[{CONTEXT_KEY!r}]")
    return str(text)


def normalise(vectors: Sequence[Sequence[float]] | np.ndarray, dim: int | None, source: str) -> np.ndarray:
    """Vectors as a C-contiguous float32 (n, dim) array of unit rows, or InvalidInput naming ``source``."""
    if not isinstance(vectors, np.ndarray):
        lengths = sorted({len(v) for v in vectors})
        if len(lengths) > 1:
            raise InvalidInput(
                f"{source} returned vectors of unequal dimension {lengths}; fix the embedding model"
            )
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
