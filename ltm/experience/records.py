"""Lesson and Policy: the two records of experience memory, and how each maps to a stored ``Message``.

A :class:`Lesson` is one observed failure (or success) of a tool call, kept in structured fields so that the
offline distiller can build a principle from them without an LLM. A :class:`Policy` is a short, actionable
principle distilled from lessons; it keeps the ids of the lessons it came from (provenance) and counts how
often it was served and how the calls it was served for went.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field

from ltm.errors import InvalidInput
from ltm.message import Message

__all__ = ["LESSON_CAUSE", "MAX_TASKS", "POLICY_CAUSE", "Lesson", "Policy", "check_tool", "first_distinct"]

LESSON_CAUSE = "ltm.experience.memory.Lesson"
POLICY_CAUSE = "ltm.experience.memory.Policy"

MAX_TASKS = 3  # tasks a policy keeps as retrieval context: enough to say where it applies, few to stay short
LessonStatus = Literal["pending", "retired"]
PolicySource = Literal["llm", "offline"]


def _new_id() -> str:
    return uuid.uuid4().hex


class Lesson(BaseModel):
    """One failed tool call, remembered so that distillation can learn from it.

    ``precondition`` is what should have been checked before the call (given by the caller, or inferred from
    the error by :func:`ltm.experience.distill.infer_precondition`); ``reflection`` is the one-line after-action
    note the failure hook writes. ``status`` is ``pending`` until a distillation retires it.
    """

    id: str = Field(default_factory=_new_id)
    tool: str
    tool_doc: str = Field("", description="What the tool does (its docstring's first line): context for retrieval.")
    error: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    task: str = ""
    context: dict[str, Any] = Field(default_factory=dict)
    precondition: str = ""
    reflection: str = ""
    status: LessonStatus = "pending"
    created_at: float = Field(default_factory=time.time)

    def text(self) -> str:
        """The searchable text of the lesson: what failed, how, and on which task."""
        parts = [f"{self.tool} failed"]
        if self.error:
            parts.append(f"error: {self.error}")
        if self.precondition:
            parts.append(f"precondition: {self.precondition}")
        if self.task:
            parts.append(f"task: {self.task}")
        return "; ".join(parts)

    def to_message(self) -> Message:
        data = self.model_dump(mode="json", exclude={"id", "created_at"})
        # args/context may hold anything JSON-able; keep them as one JSON string so store filters stay flat.
        data["args"] = json.dumps(self.args, ensure_ascii=False, default=str)
        data["context"] = json.dumps(self.context, ensure_ascii=False, default=str)
        return Message(
            self.text(),
            id=self.id,
            role="experience",
            cause_by=LESSON_CAUSE,
            metadata={"kind": "lesson", **data},
            created_at=self.created_at,
        )

    @classmethod
    def from_message(cls, message: Message) -> Lesson:
        meta = dict(message.metadata)
        if meta.pop("kind", None) != "lesson":
            raise InvalidInput(f"message {message.id} is not a lesson (its metadata kind is not 'lesson')")
        meta["args"] = _load_json(meta.get("args"))
        meta["context"] = _load_json(meta.get("context"))
        return cls(id=message.id, created_at=message.created_at, **meta)


class Policy(BaseModel):
    """A distilled principle to inject into a prompt, with provenance and usage counts.

    ``source`` says how it was made: ``llm`` (an LLM distilled it) or ``offline`` (built from the structured
    fields of similar lessons, no LLM). ``tools`` are the tools its lessons are about: outcomes of calls to
    those tools on a task the policy was served for count as its successes and failures. A policy whose
    failures outweigh its successes after enough tries is ``demoted`` and no longer served.
    """

    id: str = Field(default_factory=_new_id)
    text: str
    source: PolicySource = "offline"
    key: str = Field("", description="Offline policies: tool and error shape they cover (merges re-distillation).")
    tools: list[str] = Field(default_factory=list)
    lesson_ids: list[str] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list, description="Up to MAX_TASKS tasks its lessons came from.")
    hits: int = 0
    successes: int = 0
    failures: int = 0
    demoted: bool = False
    revisions: int = 1
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)

    def to_message(self) -> Message:
        data = self.model_dump(mode="json", exclude={"id", "created_at"})
        for name in ("tools", "lesson_ids", "tasks"):
            data[name] = json.dumps(data[name], ensure_ascii=False)
        return Message(
            self.search_text(),
            id=self.id,
            role="experience",
            cause_by=POLICY_CAUSE,
            metadata={"kind": "policy", **data},
            created_at=self.created_at,
        )

    @classmethod
    def from_message(cls, message: Message) -> Policy:
        meta = dict(message.metadata)
        if meta.pop("kind", None) != "policy":
            raise InvalidInput(f"message {message.id} is not a policy (its metadata kind is not 'policy')")
        for name in ("tools", "lesson_ids", "tasks"):
            meta[name] = _load_json(meta.get(name), [])
        meta.setdefault("text", message.content)
        return cls(id=message.id, created_at=message.created_at, **meta)

    def search_text(self) -> str:
        """What retrieval embeds: the principle alone. (Appending the tasks it was learned on was tried: all
        customer requests look alike to a small model, so every policy then matched every request.)"""
        return self.text

    def label(self) -> str:
        """One line for a prompt: the principle, marked when it was built offline."""
        return f"{self.text} [offline]" if self.source == "offline" else self.text


def _load_json(raw: Any, default: Any = None) -> Any:
    if raw is None:
        return {} if default is None else default
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return {"raw": raw} if default is None else default


def first_distinct(items: list[str], n: int) -> list[str]:
    """The first ``n`` distinct items, in order."""
    return list(dict.fromkeys(items))[:n]


def check_tool(tool: Any) -> str:
    """A tool's name, stripped; InvalidInput for anything but a non-empty string."""
    if not isinstance(tool, str) or not tool.strip():
        raise InvalidInput(f"tool must be the tool's name (a non-empty string), got {tool!r}")
    return tool.strip()
