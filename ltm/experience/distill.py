"""Distillation: turn pending lessons into at most N short policies, with an LLM or offline.

Offline (no LLM configured), lessons are grouped by tool and the *shape* of their error (ids, numbers and
quoted values masked), the largest and most recent groups first, and each group gives one principle built
from its structured fields: ``Before calling <tool>, check that <precondition>: it failed with "<error>"``.
Such policies are marked ``source="offline"``. With an LLM, :func:`distill_prompt` asks for at most N
concrete principles as JSON with the numbers of the lessons each comes from, and :func:`parse_principles`
reads the answer (JSON, or a bullet list as a fallback).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ltm.experience.records import Lesson, PolicySource

__all__ = [
    "DISTILL_SYSTEM",
    "Draft",
    "distill_prompt",
    "error_signature",
    "group_lessons",
    "infer_precondition",
    "offline_drafts",
    "parse_principles",
    "reflect",
]

DISTILL_SYSTEM = (
    "You distill an AI agent's failed tool calls into short operating principles that prevent them. "
    "Answer with JSON only."
)

# (pattern over the lowercased error, precondition template); the first match wins. {key} is the argument
# the error is most likely about (an id-like argument when there is one).
_PRECONDITIONS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"not found|does not exist|doesn't exist|unknown|no such|missing record"),
        "the {key} exists (ask the user for it when the request gives none)",
    ),
    (
        re.compile(r"not allowed|forbidden|status is|state is|must be|only allowed|cannot .* while|requires"),
        "the current state allows it",
    ),
    (
        re.compile(r"invalid|malformed|missing|required|must not be empty|too (long|large|big)|out of range"),
        "the arguments are valid",
    ),
    (
        re.compile(r"timeout|timed out|rate limit|unavailable|connection|try again"),
        "the service is reachable (retry later with backoff, not at once)",
    ),
    (re.compile(r"permission|unauthori[sz]ed|denied|forbidden"), "the caller has permission for it"),
]

_MASKS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"'[^']*'|\"[^\"]*\""), "<q>"),
    (re.compile(r"\b[A-Za-z]+-\d+\b"), "<id>"),
    (re.compile(r"\b[0-9a-f]{8,}\b"), "<hex>"),
    (re.compile(r"\d+(\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
]


@dataclass
class Draft:
    """A principle before it is stored: its text, where it came from and the lessons it rests on."""

    text: str
    source: PolicySource
    lesson_ids: list[str]
    tools: list[str]
    key: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _key_arg(args: dict[str, Any]) -> str:
    for name in args:
        if name.lower() == "id" or name.lower().endswith("_id") or name.lower().endswith("id"):
            return name
    return next(iter(args), "target")


def infer_precondition(tool: str, error: str, args: dict[str, Any] | None = None) -> str:
    """What should have been checked before calling ``tool``, read from the shape of ``error``."""
    lowered = error.lower()
    key = _key_arg(args or {})
    for pattern, template in _PRECONDITIONS:
        if pattern.search(lowered):
            return template.format(key=key, tool=tool)
    return "the condition behind this error holds"


def reflect(tool: str, error: str, precondition: str) -> str:
    """The after-action note of a failure (document 000's reflection: check the precondition next time)."""
    return f"Next time, before calling {tool}, check that {precondition}; it failed with: {error}"


def error_signature(error: str) -> str:
    """The error with ids, numbers and quoted values masked, so the same failure on other data groups together."""
    text = error.strip().lower()
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text.strip()


def group_lessons(lessons: Sequence[Lesson]) -> list[list[Lesson]]:
    """Lessons grouped by (tool, error signature): biggest groups first, then the most recent."""
    groups: dict[tuple[str, str], list[Lesson]] = {}
    for lesson in lessons:
        groups.setdefault((lesson.tool, error_signature(lesson.error)), []).append(lesson)
    ordered = sorted(groups.values(), key=lambda g: (len(g), max(x.created_at for x in g)), reverse=True)
    return [sorted(g, key=lambda x: x.created_at) for g in ordered]


def offline_drafts(lessons: Sequence[Lesson], max_policies: int) -> list[Draft]:
    """At most ``max_policies`` principles built from the structured fields of grouped lessons, no LLM.

    The text depends only on the group's tool (and its description), most common error and precondition, so
    distilling the same group again yields the same text (and merges with the stored policy).
    """
    drafts: list[Draft] = []
    for group in group_lessons(lessons)[:max_policies]:
        tool = group[0].tool
        error = Counter(x.error for x in group).most_common(1)[0][0]
        precondition = Counter(x.precondition or infer_precondition(tool, x.error, x.args) for x in group)
        # Short on purpose: example arguments and boilerplate make every policy look alike to retrieval.
        doc = next((x.tool_doc for x in reversed(group) if x.tool_doc), "")
        # The tool's own description is what tells a small embedding model a refund rule from a note rule.
        about = f" ({doc})" if doc else ""
        check = precondition.most_common(1)[0][0]
        text = f'Before calling {tool}{about}, check that {check}: it failed with "{error}".'
        drafts.append(
            Draft(
                text=text,
                source="offline",
                lesson_ids=[x.id for x in group],
                tools=[tool],
                key=f"{tool}|{error_signature(error)}",
            )
        )
    return drafts


def distill_prompt(lessons: Sequence[Lesson], existing: Sequence[str], max_policies: int) -> str:
    """The distillation prompt: numbered failures as JSON, the principles already held, the answer format."""
    records = [
        {
            "n": n,
            "tool": x.tool,
            **({"tool_does": x.tool_doc} if x.tool_doc else {}),
            "error": x.error,
            "args": x.args,
            "task": x.task,
            "precondition": x.precondition,
        }
        for n, x in enumerate(lessons, start=1)
    ]
    held = "\n".join(f"- {text}" for text in existing) or "(none)"
    return (
        "These are the agent's past failed tool calls:\n"
        f"{json.dumps(records, ensure_ascii=False, indent=1)}\n\n"
        f"Principles it already follows:\n{held}\n\n"
        f"Distill at most {max_policies} concrete, actionable principles, in English, that would have prevented "
        "these failures. Each names the tool and what to check or do before calling it. Do not repeat a "
        "principle it already follows unless you improve it.\n"
        'Answer with a JSON list only: [{"principle": "...", "lessons": [numbers of the failures it comes from]}]'
    )


_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.+?)\s*$")


def parse_principles(answer: str, lessons: Sequence[Lesson], max_policies: int) -> list[Draft]:
    """Principles from an LLM answer: the JSON list asked for, else bullet lines; empty when neither is found.

    Provenance comes from the lesson numbers the answer cites; when it cites none, from the lessons whose
    tool the principle names, else from all of them.
    """
    items: list[tuple[str, list[int]]] = []
    start, end = answer.find("["), answer.rfind("]")
    if start != -1 and end > start:
        try:
            data = json.loads(answer[start : end + 1])
        except json.JSONDecodeError:
            data = None
        if isinstance(data, list):
            for item in data:
                if isinstance(item, str):
                    items.append((item, []))
                elif isinstance(item, dict) and isinstance(item.get("principle"), str):
                    cited = item.get("lessons") or []
                    items.append(
                        (item["principle"], [int(n) for n in cited if isinstance(n, int | str) and str(n).isdigit()])
                    )
    if not items:
        items = [(m.group(1), []) for m in map(_BULLET.match, answer.splitlines()) if m]
    drafts: list[Draft] = []
    for text, cited in items:
        text = text.strip()
        if not text:
            continue
        chosen = [lessons[n - 1] for n in cited if 1 <= n <= len(lessons)]
        if not chosen:
            chosen = [x for x in lessons if x.tool and x.tool in text] or list(lessons)
        drafts.append(
            Draft(
                text=text,
                source="llm",
                lesson_ids=[x.id for x in chosen],
                tools=sorted({x.tool for x in chosen}),
            )
        )
        if len(drafts) == max_policies:
            break
    return drafts
