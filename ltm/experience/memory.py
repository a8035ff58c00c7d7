"""ExperienceMemory: failures become lessons, lessons become policies, policies steer the next task.

The loop of document 000 (shared/seeds), on one agent's own store namespace (``storage/experience/<agent>/``):

1. **Failure hook.** :meth:`ExperienceMemory.record_failure` (or a tool wrapped by
   :meth:`~ExperienceMemory.watch_tool`) stores a structured :class:`Lesson`: tool, error, arguments, task,
   the precondition that should have been checked, and a one-line reflection.
2. **Distillation.** :meth:`~ExperienceMemory.distill` turns the pending lessons into at most N short
   :class:`Policy` principles, with an LLM when one is configured, else offline from the lessons' structured
   fields (see :mod:`ltm.experience.distill`). A new principle that is a near-duplicate of a held one merges
   into it (cosine similarity >= ``merge_similarity``), so policies do not pile up; every policy keeps the
   ids of its lessons. Distilled lessons are retired except the most recent ``keep_recent``.
3. **Retrieval.** :meth:`~ExperienceMemory.policies_for` finds the policies whose meaning fits a task (dense
   search: cosine >= ``min_relevance`` and within ``relevance_margin`` of the best);
   :meth:`~ExperienceMemory.render` formats them for a prompt.
4. **Usage.** Each serving counts a hit; later outcomes of calls to a served policy's tools on that task count
   as its successes or failures. A policy that keeps failing (``demote_after`` failures, more failures than
   successes) is demoted: kept, with its record, but no longer served.

Everything is stored, so lessons, policies and their counts survive a restart. Which policies were served for
which task is per process (it links a serving to the outcomes that follow it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from llama_index.core.base.embeddings.base import BaseEmbedding

from ltm.config import Settings
from ltm.errors import InvalidInput, NotFound
from ltm.experience.distill import (
    DISTILL_SYSTEM,
    Draft,
    distill_prompt,
    infer_precondition,
    offline_drafts,
    parse_principles,
    reflect,
)
from ltm.experience.records import (
    LESSON_CAUSE,
    MAX_TASKS,
    POLICY_CAUSE,
    Lesson,
    Policy,
    check_tool,
    first_distinct,
)
from ltm.experience.tuning import DEFAULT_MERGE_SIMILARITY, DEFAULT_MIN_RELEVANCE, DEFAULT_RELEVANCE_MARGIN
from ltm.experience.watch import current_task, watch
from ltm.llm.base import LLM, LLMLike, Summarizer, resolve_llm
from ltm.message import Message
from ltm.store import MemoryStorage

__all__ = [
    "DEFAULT_MERGE_SIMILARITY",
    "DEFAULT_MIN_RELEVANCE",
    "DEFAULT_RELEVANCE_MARGIN",
    "ExperienceMemory",
    "Lesson",
    "Policy",
]

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


class ExperienceMemory:
    """One agent's experience: lessons from its failures and the policies distilled from them.

    ``llm``: any object with ``ask(prompt, system=None) -> str`` (default: the one ``settings.llm`` names;
    none means offline distillation). ``embedding``: the llama-index embedding of the store (default: the one
    ``settings.embedding`` names). ``merge_similarity``, ``min_relevance`` and ``relevance_margin`` are cosine
    similarities in [0, 1] (defaults documented above, measured with the local model; the hash embedding
    scores far lower); ``demote_after`` is how many failures a policy may collect before it can be demoted.
    """

    def __init__(
        self,
        agent_id: str,
        *,
        settings: Settings | None = None,
        llm: LLMLike | None = None,
        embedding: BaseEmbedding | None = None,
        merge_similarity: float = DEFAULT_MERGE_SIMILARITY,
        min_relevance: float = DEFAULT_MIN_RELEVANCE,
        relevance_margin: float = DEFAULT_RELEVANCE_MARGIN,
        demote_after: int = 3,
    ) -> None:
        thresholds = (
            ("merge_similarity", merge_similarity),
            ("min_relevance", min_relevance),
            ("relevance_margin", relevance_margin),
        )
        for name, value in thresholds:
            if not 0.0 <= value <= 1.0:
                raise InvalidInput(f"{name} is a cosine similarity in [0, 1], got {value}")
        if demote_after < 1:
            raise InvalidInput(f"demote_after must be at least 1, got {demote_after}")
        self.agent_id = agent_id
        self.settings = settings or Settings.load()
        resolved = resolve_llm(self.settings, llm)
        # The extractive stand-in cannot invent principles: distil offline from the lessons' fields instead.
        self.llm: LLM | None = None if isinstance(resolved, Summarizer) else resolved
        self.merge_similarity = merge_similarity
        self.min_relevance = min_relevance
        self.relevance_margin = relevance_margin
        self.demote_after = demote_after
        self.store = MemoryStorage(agent_id, kind="experience", settings=self.settings, embedding=embedding)
        self._lock = threading.RLock()
        self._served: dict[str, list[str]] = {}  # task -> ids of the policies last served for it

    # -- the failure hook --------------------------------------------------------------------------------
    def record_failure(
        self,
        tool: str,
        error: str | BaseException,
        *,
        args: dict[str, Any] | None = None,
        task: str | None = None,
        context: dict[str, Any] | None = None,
        precondition: str | None = None,
        tool_doc: str | None = None,
    ) -> Lesson:
        """Store a lesson for a failed call of ``tool``; counts a failure for the policies served for ``task``.

        ``error`` may be the exception itself. ``precondition`` (what should have been checked) is inferred
        from the error when not given. ``task`` defaults to the one set by :meth:`working_on`. ``tool_doc``
        says what the tool does (watched tools pass their docstring's first line); offline principles quote it.
        """
        tool = check_tool(tool)
        message = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
        if not message.strip():
            raise InvalidInput("record_failure needs a non-empty error: pass the exception or its message")
        task = task if task is not None else current_task.get()
        arguments = dict(args or {})
        pre = precondition or infer_precondition(tool, message, arguments)
        lesson = Lesson(
            tool=tool,
            tool_doc=(tool_doc or "").strip(),
            error=message.strip(),
            args=arguments,
            task=task or "",
            context=dict(context or {}),
            precondition=pre,
            reflection=reflect(tool, message.strip(), pre),
        )
        with self._lock:
            self.store.add(lesson.to_message())
            self._settle(tool, task, success=False)
        return lesson

    def record_success(
        self,
        tool: str | None = None,
        *,
        args: dict[str, Any] | None = None,
        task: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> list[Policy]:
        """Count a success for the policies served for ``task`` (those about ``tool``, or all when None).

        Successes are not stored as lessons (nothing to learn; they would crowd out the failures); the
        policies credited are returned. ``args`` and ``context`` are accepted for symmetry with
        :meth:`record_failure` and ignored.
        """
        del args, context
        if tool is not None:
            tool = check_tool(tool)
        task = task if task is not None else current_task.get()
        with self._lock:
            return self._settle(tool, task, success=True)

    def watch_tool(self, fn: F | None = None, *, name: str | None = None) -> Any:
        """Wrap a tool (sync or async) so its failures are recorded; results and exceptions pass unchanged.

        A failure is an exception (recorded, then re-raised) or a returned mapping with an ``"error"`` key.
        Use as ``memory.watch_tool(fn)``, ``@memory.watch_tool`` or ``@memory.watch_tool(name="refund")``.
        """
        if fn is None:
            return lambda f: watch(self, f, name)
        return watch(self, fn, name)

    @contextmanager
    def working_on(self, task: str) -> Iterator[None]:
        """Within this block, watched tool calls and records without ``task=`` belong to ``task``."""
        token = current_task.set(task)
        try:
            yield
        finally:
            current_task.reset(token)

    # -- reading -----------------------------------------------------------------------------------------
    def lessons(self, pending_only: bool = True) -> list[Lesson]:
        """Lessons oldest first; only those not yet retired by a distillation unless ``pending_only=False``."""
        found = [Lesson.from_message(m) for m in self._all(LESSON_CAUSE)]
        return [x for x in found if x.status == "pending" or not pending_only]

    def policies(self, include_demoted: bool = True) -> list[Policy]:
        """Every policy, oldest first."""
        found = [Policy.from_message(m) for m in self._all(POLICY_CAUSE)]
        return [p for p in found if include_demoted or not p.demoted]

    def _all(self, cause: str) -> list[Message]:
        """Every stored record of ``cause`` (lessons or policies), oldest first by creation time."""
        messages = self.store.iter({"cause_by": cause})
        return sorted(messages, key=lambda m: m.created_at)  # a rewrite gives a record a new seq, not a new age

    # -- distillation ------------------------------------------------------------------------------------
    def distill(self, *, min_lessons: int = 3, keep_recent: int = 2, max_policies: int = 3) -> list[Policy]:
        """Distill pending lessons into at most ``max_policies`` new or strengthened policies.

        Nothing happens (``[]``) with fewer than ``min_lessons`` pending lessons. With an LLM the principles
        are its answer (when the answer has none, the offline principles are used and a warning is logged);
        without one they are built offline and marked ``source="offline"``. Returns the policies created or
        merged into; afterwards all pending lessons but the ``keep_recent`` most recent are retired.
        LLM failures (``BackendUnavailable``: the server stayed unreachable; ``LLMError``: it refused or answered
        nonsense) leave every lesson pending.
        """
        pending, prompt = self._distill_input(min_lessons, keep_recent, max_policies)
        if not pending:
            return []
        answer = self.llm.ask(prompt, system=DISTILL_SYSTEM) if self.llm is not None and prompt else None
        return self._distill_output(pending, answer, keep_recent, max_policies)

    async def adistill(self, *, min_lessons: int = 3, keep_recent: int = 2, max_policies: int = 3) -> list[Policy]:
        """Async twin of :meth:`distill` (the LLM call is awaited; the store work is the same)."""
        pending, prompt = self._distill_input(min_lessons, keep_recent, max_policies)
        if not pending:
            return []
        answer = await self.llm.aask(prompt, system=DISTILL_SYSTEM) if self.llm is not None and prompt else None
        return self._distill_output(pending, answer, keep_recent, max_policies)

    def _distill_input(self, min_lessons: int, keep_recent: int, max_policies: int) -> tuple[list[Lesson], str]:
        if min_lessons < 1 or keep_recent < 0 or max_policies < 1:
            raise InvalidInput("distill needs min_lessons >= 1, keep_recent >= 0 and max_policies >= 1")
        pending = self.lessons(pending_only=True)
        if len(pending) < min_lessons:
            return [], ""
        if self.llm is None:
            return pending, ""
        held = [p.text for p in self.policies(include_demoted=False)]
        return pending, distill_prompt(pending, held, max_policies)

    def _distill_output(
        self, pending: list[Lesson], answer: str | None, keep_recent: int, max_policies: int
    ) -> list[Policy]:
        drafts: list[Draft] = []
        if answer is not None:
            drafts = parse_principles(answer, pending, max_policies)
            if not drafts:
                log.warning("the LLM's distillation answer held no principle; distilling offline: %.200s", answer)
        drafts = drafts or offline_drafts(pending, max_policies)
        tasks = {x.id: x.task for x in pending if x.task}
        with self._lock:
            touched: dict[str, Policy] = {}
            for draft in drafts:
                policy = self._merge_or_add(draft, [tasks[i] for i in draft.lesson_ids if i in tasks])
                touched[policy.id] = policy
            for lesson in pending[: max(len(pending) - keep_recent, 0)]:
                self._rewrite(lesson.model_copy(update={"status": "retired"}))
            return list(touched.values())

    def _merge_or_add(self, draft: Draft, tasks: list[str]) -> Policy:
        target = self._near_duplicate(draft)
        now = time.time()
        if target is None:
            policy = Policy(
                text=draft.text,
                source=draft.source,
                key=draft.key,
                tools=draft.tools,
                lesson_ids=draft.lesson_ids,
                tasks=first_distinct(tasks, MAX_TASKS),
            )
            self.store.add(policy.to_message())
            return policy
        merged = target.model_copy(
            update={
                "lesson_ids": target.lesson_ids + [i for i in draft.lesson_ids if i not in target.lesson_ids],
                "tools": sorted(set(target.tools) | set(draft.tools)),
                "tasks": first_distinct(target.tasks + tasks, MAX_TASKS),
                "revisions": target.revisions + 1,
                "updated_at": now,
            }
        )
        self._rewrite(merged)
        return merged

    def _near_duplicate(self, draft: Draft) -> Policy | None:
        """The held policy that says what ``draft`` says: the same offline key, or a principle about the same
        tools (when both name some) with cosine similarity >= ``merge_similarity``."""
        held = self.policies()
        if draft.key:
            for policy in held:
                if policy.key == draft.key:
                    return policy
        candidates = [p for p in held if not (p.tools and draft.tools) or set(p.tools) & set(draft.tools)]
        if not candidates:
            return None
        vectors = self.store.embed_texts([draft.text] + [p.text for p in candidates])
        sims = vectors[1:] @ vectors[0]
        best = int(sims.argmax())
        return candidates[best] if float(sims[best]) >= self.merge_similarity else None

    # -- retrieval ---------------------------------------------------------------------------------------
    def policies_for(self, task: str, k: int = 3) -> list[Policy]:
        """Up to ``k`` non-demoted policies whose meaning fits ``task``, best first.

        A policy fits when its cosine similarity to the task is at least ``min_relevance`` and within
        ``relevance_margin`` of the best-fitting policy's.

        Each one returned counts a hit and is remembered as served for ``task``, so the outcomes recorded for
        that task next are credited to it.
        """
        if not task or not task.strip():
            raise InvalidInput("policies_for needs a task description: pass the user's request or the goal")
        if k < 1:
            raise InvalidInput(f"k must be at least 1, got {k}")
        with self._lock:
            total = self.store.count()
            if total == 0:
                return []
            hits = self.store.search(task, k=min(total, k * 4 + 8), mode="dense", filters={"cause_by": POLICY_CAUSE})
            chosen: list[Policy] = []
            best: float | None = None
            for hit in hits:
                policy = Policy.from_message(hit.message)
                if policy.demoted:
                    continue
                best = hit.score if best is None else best
                if hit.score < max(self.min_relevance, best - self.relevance_margin) or len(chosen) == k:
                    break
                chosen.append(policy.model_copy(update={"hits": policy.hits + 1}))
            for policy in chosen:
                self._rewrite(policy)
            self._served[task] = [p.id for p in chosen]
            return chosen

    def render(self, task: str, k: int = 3) -> str:
        """The policies for ``task`` as a prompt section; empty when none fits."""
        policies = self.policies_for(task, k=k)
        if not policies:
            return ""
        lines = "\n".join(f"- {p.label()}" for p in policies)
        return f"Lessons learned from past failures (follow them):\n{lines}"

    # -- bookkeeping -------------------------------------------------------------------------------------
    def _settle(self, tool: str | None, task: str | None, *, success: bool) -> list[Policy]:
        """Count an outcome for the policies served for ``task`` that are about ``tool``; demote failing ones."""
        if not task or task not in self._served:
            return []
        changed: list[Policy] = []
        for pid in self._served[task]:
            try:
                message = self.store.get(pid)
            except NotFound:  # deleted meanwhile (by another process sharing the namespace)
                continue
            policy = Policy.from_message(message)
            if tool is not None and policy.tools and tool not in policy.tools:
                continue
            if success:
                policy = policy.model_copy(update={"successes": policy.successes + 1})
            else:
                failures = policy.failures + 1
                demoted = policy.demoted or (failures >= self.demote_after and failures > policy.successes)
                policy = policy.model_copy(update={"failures": failures, "demoted": demoted})
                if demoted and not message.metadata.get("demoted"):
                    log.info("policy %s demoted after %d failures: %s", policy.id, failures, policy.text)
            self._rewrite(policy)
            changed.append(policy)
        return changed

    def _rewrite(self, record: Lesson | Policy) -> None:
        """Replace a stored record by its new version (same id) in one transaction: a crash leaves the old
        version or the new one, never neither. Unchanged text reuses its stored embedding."""
        self.store.replace(record.to_message())

    def count(self) -> int:
        """Lessons and policies stored (retired lessons and demoted policies included)."""
        return int(self.store.count())

    def close(self) -> None:
        """Close the store; the object is unusable afterwards."""
        self.store.close()

    def __enter__(self) -> ExperienceMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
