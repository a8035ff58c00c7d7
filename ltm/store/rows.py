"""From messages to rows: what the write path does between checking input and the SQLite transaction.

A write embeds every message's content plus, for conversation turns, a context text (see
:func:`ltm.message.with_context`); :class:`Pending` keeps both in one list so the embedder batches them in one
call. Vectors the caller already has (``add_batch(vectors=...)``, e.g. from :meth:`export`) replace the
content part of that list, so only the context texts reach the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store.records import VECTOR_DTYPE, Row
from ltm.store.scopes import scope_values
from ltm.store.search.query import keyword_columns
from ltm.store.validation import checked_json, context_text, normalise
from ltm.store.validity import validity_values

__all__ = [
    "NO_VECTOR",
    "Given",
    "NoVector",
    "Pending",
    "build_rows",
    "draft_rows",
    "finish_rows",
    "given_vectors",
    "no_vector_key",
    "placeholder",
    "prepare",
    "texts_to_embed",
    "with_given",
]


@dataclass
class Pending:
    """Messages about to be written and the texts to embed for them."""

    messages: list[Message]
    texts: list[str]  # every message's content, then the context texts of those that have one
    with_context: list[int]  # positions in ``messages`` of the messages that have a context text
    drafts: list[Row] | None = None  # draft_rows', made while the model embeds the texts (add_groups)
    unvectored: frozenset[str] = frozenset()  # ids of the messages stored without a vector (with_given sets it)
    # each message's metadata as the JSON its row stores, when the check made it already (None: made with the row)
    metadata_json: list[str] | None = None

    @property
    def contents(self) -> list[str]:
        """The messages' own texts (``texts`` without the context texts): what their content keys are of."""
        return self.texts[: len(self.messages)]


def prepare(
    messages: Iterable[Message],
    max_bytes: int,
    existing: Callable[[list[str]], set[str]] | None,
    *,
    checked: bool = False,
) -> Pending:
    """Check ``messages`` (InvalidInput before anything is written) and plan their embedding.

    With ``existing`` (ids already stored), those messages are left out, and of several with one id the
    first is kept: the ``add`` semantics. Without it every message is kept, the last of an id winning
    (``replace``). ``checked``: the caller ran this very check on these messages already (``add_batch``
    does, so that bad input fails in its own call, not in a group's), so only the planning is left."""
    if isinstance(messages, Message):
        messages = [messages]
    listed = list(messages)
    # the check writes each message's metadata as JSON to measure it: the row stores that very text
    encoded: list[str | None] = [None] * len(listed) if checked else [checked_json(m, max_bytes) for m in listed]
    ready = list(zip(listed, encoded, strict=True))
    known = existing([m.id for m in listed]) if existing is not None else set()
    if existing is not None:
        kept = list({m.id: (m, j) for m, j in reversed(ready) if m.id not in known}.values())[::-1]
    else:
        kept = list({m.id: (m, j) for m, j in ready}.values())
    fresh = [m for m, _ in kept]
    found = [(i, context_text(m, max_bytes)) for i, m in enumerate(fresh)]
    contexts = [(i, text) for i, text in found if text is not None]
    texts = [m.content for m in fresh] + [t for _, t in contexts]
    jsons = None if checked else [str(j) for _, j in kept]
    return Pending(fresh, texts, [i for i, _ in contexts], metadata_json=jsons)


class NoVector:
    """A row of ``add_batch`` / ``replace_batch``'s ``vectors`` that stores its message without a vector:
    :data:`NO_VECTOR`, or ``NO_VECTOR(dim)`` where nothing else tells the store the vectors' dimension (a new
    namespace of vectors the caller computes)."""

    def __init__(self, dim: int | None = None) -> None:
        if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or dim < 1):
            raise InvalidInput(f"NO_VECTOR(dim) takes the vectors' dimension, a positive int, got {dim!r}")
        self.dim = dim

    def __call__(self, dim: int) -> NoVector:
        return NoVector(dim)

    def __repr__(self) -> str:
        return "NO_VECTOR" if self.dim is None else f"NO_VECTOR({self.dim})"


NO_VECTOR = NoVector()


class Given(dict[str, np.ndarray]):
    """The vectors a caller gave for its messages' content, by message id; ``unvectored``: the ids of the messages
    given :data:`NO_VECTOR` (stored without a vector: :func:`placeholder` in their place)."""

    unvectored: frozenset[str] = frozenset()


def given_vectors(
    messages: Iterable[Message],
    vectors: Any,
    dim: Callable[[], int | None],
    model_dim: Callable[[], int] | None = None,
) -> tuple[list[Message], Given | None]:
    """The messages as a list and, when ``vectors`` were given, each message id's checked unit vector
    (``dim()``: the dimension they must have, asked only then). A row that is :class:`NoVector` stores its message
    without a vector, under :func:`placeholder` of the namespace's dimension (``dim()``, else the other rows',
    else the one ``NO_VECTOR(dim)`` declares, else ``model_dim()``: the model's)."""
    listed = [messages] if isinstance(messages, Message) else list(messages)
    if vectors is None or not listed:
        return listed, None
    rows: Any = vectors
    absent: list[int] = []
    if not isinstance(vectors, np.ndarray):
        rows = _check_rows(vectors, listed)
        absent = [i for i, row in enumerate(rows) if isinstance(row, NoVector)]
        if absent and len(rows) != len(listed):
            raise InvalidInput(
                f"add_batch got {len(listed)} messages but {len(rows)} vectors; pass one vector per message"
            )
    declared = {rows[i].dim for i in absent if rows[i].dim is not None}
    if absent and len(absent) == len(rows):
        array = _placeholders(len(listed), dim(), declared, model_dim)
    elif absent:
        present = [i for i, row in enumerate(rows) if not isinstance(row, NoVector)]
        found = normalise([rows[i] for i in present], dim(), "the vectors argument")
        array = _placeholders(len(rows), found.shape[1], declared, model_dim)
        array[present] = found
    else:
        array = normalise(rows, dim(), "the vectors argument")
    if array.shape[0] != len(listed):
        raise InvalidInput(
            f"add_batch got {len(listed)} messages but {array.shape[0]} vectors; pass one vector per message"
        )
    given = Given((m.id, array[i]) for i, m in enumerate(listed))
    given.unvectored = frozenset(listed[i].id for i in absent)
    return listed, given


def _placeholders(n: int, known: int | None, declared: set[int], model_dim: Callable[[], int] | None) -> np.ndarray:
    """``n`` rows of :func:`placeholder`: of the ``known`` dimension, else the one ``NO_VECTOR(dim)`` declared,
    else (a new namespace) ``model_dim()``'s."""
    if len(declared) > 1 or (known is not None and declared and declared != {known}):
        raise InvalidInput(
            f"NO_VECTOR(dim) declared {sorted(declared)} but the vectors' dimension is {known}; declare that one"
        )
    width = known if known is not None else next(iter(declared)) if declared else None
    if width is None:
        if model_dim is None:
            raise InvalidInput("the namespace's dimension is unknown: give at least one vector")
        width = model_dim()
    return np.tile(placeholder(width), (n, 1))


def placeholder(dim: int) -> np.ndarray:
    """The vector of a message stored without one: the first unit vector (a unit row, as every stored vector)."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[0] = 1.0
    return vector


def no_vector_key(message_id: str) -> bytes:
    """The content key of a message stored without a vector: no text's key (:func:`ltm.store.embedder.content_key`
    hashes the model, purpose and text), so the embedder's cache never hands its placeholder out as a text's
    vector, and a search for its text verbatim does not count it."""
    return hashlib.sha256(b"ltm:no-vector\0" + message_id.encode("utf-8", "surrogatepass")).digest()


def _check_rows(vectors: Any, listed: list[Message]) -> list[Any]:
    """The rows of ``vectors`` as a list, or InvalidInput naming the first that is neither a vector nor
    ``NO_VECTOR`` (None, a number, text...)."""
    try:
        rows = list(vectors)
    except TypeError:
        raise InvalidInput(
            f"vectors must be a list of vectors (one list of floats per message), got {type(vectors).__name__}"
        ) from None
    for i, row in enumerate(rows):
        if isinstance(row, NoVector | np.ndarray) or (isinstance(row, Sequence) and not isinstance(row, str | bytes)):
            continue
        which = f" (message {listed[i].id})" if i < len(listed) else ""
        raise InvalidInput(
            f"vectors[{i}]{which} is {type(row).__name__}, not a list of floats: pass one vector per "
            "message (ltm.store.NO_VECTOR for one stored without a vector), or vectors=None to have the store "
            "embed them"
        )
    return rows


def texts_to_embed(pending: Pending, given: dict[str, np.ndarray] | None) -> list[str]:
    """The texts the model must embed: all of them, or only the context texts when vectors were given."""
    return pending.texts if given is None else pending.texts[len(pending.messages) :]


def with_given(pending: Pending, given: dict[str, np.ndarray] | None, embedded: np.ndarray) -> np.ndarray:
    """The vectors in ``pending.texts`` order: ``embedded`` itself, or the given content vectors first (and
    ``pending.unvectored`` set: the rows of those messages get :func:`no_vector_key`)."""
    if given is None:
        return embedded
    unvectored = given.unvectored if isinstance(given, Given) else frozenset()
    pending.unvectored = frozenset(m.id for m in pending.messages if m.id in unvectored)
    content = np.stack([given[m.id] for m in pending.messages])
    return np.vstack([content, embedded]) if len(embedded) else content


def build_rows(pending: Pending, keys: Sequence[bytes], vectors: np.ndarray) -> list[Row]:
    """One row per pending message. Rows keep the stored (float16) form and FAISS gets decode() of it, as a
    rebuild from SQLite would: search results and find_news decisions are the same before and after a restart."""
    return _rows(pending, keys, *_split(pending, vectors))


def draft_rows(pending: Pending, keys: Sequence[bytes]) -> list[Row]:
    """Every column but the vectors (JSON, the body, keyword texts, scopes): what can be made before the model
    answers. ``keys``: the content keys of the messages' texts."""
    n = len(pending.messages)
    return _rows(pending, keys, [np.zeros(0, dtype=VECTOR_DTYPE)] * n, [None] * n)


def _rows(
    pending: Pending, keys: Sequence[bytes], vectors: Sequence[np.ndarray], contexts: Sequence[np.ndarray | None]
) -> list[Row]:
    jsons: Sequence[str | None] = pending.metadata_json or [None] * len(pending.messages)
    return [
        Row(
            id=m.id,
            role=m.role,
            cause_by=m.cause_by,
            sent_from=m.sent_from,
            created_at=float(m.created_at),
            metadata=encoded if encoded is not None else json.dumps(m.metadata, default=str, ensure_ascii=False),
            body=m.dump(),
            text_key=no_vector_key(m.id) if m.id in pending.unvectored else key,
            vector=vector,
            fts=keyword_columns(m),
            context_vector=context,
            scopes=scope_values(m),
            validity=validity_values(m),
        )
        for m, key, encoded, vector, context in zip(pending.messages, keys, jsons, vectors, contexts, strict=True)
    ]


def finish_rows(pending: Pending, drafts: list[Row], vectors: np.ndarray) -> list[Row]:
    """``drafts`` (of ``pending``, in order) with their vectors set: ``vectors`` in ``pending.texts`` order."""
    contents, contexts = _split(pending, vectors)
    return [
        replace(row, vector=vec, context_vector=context)
        for row, vec, context in zip(drafts, contents, contexts, strict=True)
    ]


def _split(pending: Pending, vectors: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
    """``vectors`` (in ``pending.texts`` order) in their stored form, as (each message's content vector, each
    message's context vector or None)."""
    vectors = vectors.astype(VECTOR_DTYPE)
    n = len(pending.messages)
    context_of = dict(zip(pending.with_context, vectors[n:], strict=True))
    return list(vectors[:n]), [context_of.get(i) for i in range(n)]
