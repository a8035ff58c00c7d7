"""Request and response bodies of the HTTP API (pydantic models, so ``/openapi.json`` documents them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store import MemoryHit

__all__ = [
    "ChatIn",
    "ChangeIn",
    "FindNewsIn",
    "LessonIn",
    "MessageIn",
    "MessagesIn",
    "PutIn",
    "SearchIn",
    "SimilarIn",
    "SupersedeIn",
    "TextsIn",
    "VectorsIn",
    "hit_out",
    "message_out",
]

Mode = Literal["hybrid", "dense", "keyword"]


class MessageIn(BaseModel):
    """One message to store; every field but ``content`` is optional (``id`` defaults to a new uuid)."""

    model_config = ConfigDict(extra="forbid")

    content: str
    id: str | None = None
    role: str = "user"
    cause_by: str = ""
    sent_from: str = ""
    send_to: list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: float | None = Field(None, allow_inf_nan=False)
    instruct_content: dict[str, Any] | None = None

    def to_message(self) -> Message:
        """The library's :class:`~ltm.message.Message` (validated by it: bad input raises InvalidInput)."""
        data = self.model_dump(exclude_none=True)
        if "send_to" in data:
            data["send_to"] = set(data["send_to"])
        try:
            return Message(**data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
            raise InvalidInput(f"bad message: {problems}") from None


class MessagesIn(BaseModel):
    """``{"messages": [...]}``: stored in one transaction (all or none)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[MessageIn]


class SearchIn(BaseModel):
    """A search: ``mode`` hybrid (default), dense or keyword; ``filters`` as :meth:`MemoryStorage.search` takes
    them. ``explain`` adds each hit's per-signal scores (dense cosine, keyword BM25) beside the fused one."""

    model_config = ConfigDict(extra="forbid")

    query: str
    k: int = Field(10, ge=0, le=1000)
    mode: Mode = "hybrid"
    filters: dict[str, Any] | None = None
    explain: bool = False
    # what was valid at a time / what the store knew at a time (unix seconds or ISO 8601): ltm.store.validity
    as_of: float | str | None = None
    known_at: float | str | None = None


class SupersedeIn(BaseModel):
    """The next version of a stored message (``MemoryStorage.supersede``), and why."""

    model_config = ConfigDict(extra="forbid")

    message: MessageIn
    reason: str | None = None


class PutIn(BaseModel):
    """A keyed memory (``MemoryStorage.put``): a value under ``key`` supersedes the one stored there."""

    model_config = ConfigDict(extra="forbid")

    key: str
    message: MessageIn
    reason: str | None = None


class FindNewsIn(BaseModel):
    """Observed messages; the answer keeps those not similar to anything stored nor to an earlier one."""

    model_config = ConfigDict(extra="forbid")

    messages: list[MessageIn]
    k: int = Field(0, ge=0)


class SimilarIn(BaseModel):
    """``search_similar``: stored messages whose cosine to ``text`` reaches the namespace's threshold."""

    model_config = ConfigDict(extra="forbid")

    text: str
    k: int = Field(4, ge=0, le=1000)


class TextsIn(BaseModel):
    """Texts to embed with the server's model."""

    model_config = ConfigDict(extra="forbid")

    texts: list[str]


class VectorsIn(BaseModel):
    """Vectors (from ``/embed``) to compare with the stored ones; ``texts`` are their contents, same order."""

    model_config = ConfigDict(extra="forbid")

    vectors: list[list[float]]
    texts: list[str] | None = None


class ChatIn(BaseModel):
    """Messages appended to a chat's history: role ``user`` is a talk, anything else an answer."""

    model_config = ConfigDict(extra="forbid")

    messages: list[MessageIn]


class ChangeIn(BaseModel):
    """A proposed change to one memory file (pending until a person approves it): ``text`` is the new
    content, null deletes the file."""

    model_config = ConfigDict(extra="forbid")

    path: str
    text: str | None = None
    reason: str = ""
    author: str = "agent"


class LessonIn(BaseModel):
    """A failed tool call to learn from (see :meth:`ExperienceMemory.record_failure`)."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    error: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    task: str = ""
    precondition: str = ""


def message_out(message: Message) -> dict[str, Any]:
    """A message as JSON (the structure ``Message.dump`` writes)."""
    return message.to_dict()


def hit_out(hit: MemoryHit, scores: dict[str, float] | None = None) -> dict[str, Any]:
    """A search hit as JSON (``similarity``: its cosine to the query, absent in keyword mode); ``scores`` are the
    per-signal scores when explained."""
    out: dict[str, Any] = {"message": message_out(hit.message), "score": hit.score, "signals": list(hit.signals)}
    if hit.similarity is not None:
        out["similarity"] = hit.similarity
    if scores is not None:
        out["scores"] = scores
    return out
