"""LLM-assisted search, off by default: ``search(query, rewrite=True)`` asks the configured LLM for a few more
queries (the question's parts, each person or event it names, the words an answer would use), searches each the
ordinary way, and merges the lists, the question's own first.

The default search never calls an LLM and its figures (docs/search.md) are never measured with one. A rewrite costs
one LLM request per search: ``explain=True`` reports it on every hit as ``rewrite_prompt_tokens``,
``rewrite_answer_tokens`` (cl100k counts of what was sent and received), ``rewrite_ms`` (the request's wall time)
and ``rewrite_queries`` (how many queries were searched beside the question). Its effect on recall is not measured
here: no LLM runs where the sets are measured.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ltm.errors import ConfigError
from ltm.llm.base import LLM
from ltm.llm.tokens import count_tokens
from ltm.store.records import MemoryHit

__all__ = ["REWRITES", "SYSTEM", "Rewrite", "merged", "parse", "rewrite", "rewritten_search"]

REWRITES = 3  # queries asked of the LLM beside the question: each is one more search
SYSTEM = (
    "You turn a question about past conversations into search queries for a memory store. Write at most {n} short "
    "queries, one per line, without numbering or quotes: each part of the question on its own, each person, place "
    "or event it names on its own, and the words an answer to it would use. Write nothing else."
)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")


@dataclass(frozen=True)
class Rewrite:
    """The queries an LLM wrote for one question, and what asking cost."""

    queries: tuple[str, ...]
    prompt_tokens: int
    answer_tokens: int
    ms: float

    def costs(self) -> dict[str, float]:
        """What ``explain`` reports on each hit."""
        return {
            "rewrite_prompt_tokens": float(self.prompt_tokens),
            "rewrite_answer_tokens": float(self.answer_tokens),
            "rewrite_ms": self.ms,
            "rewrite_queries": float(len(self.queries)),
        }


def parse(answer: str, question: str, limit: int = REWRITES) -> tuple[str, ...]:
    """The queries of an LLM's ``answer``: one a line, bullets, numbers and quotes dropped, the question itself and
    repeats left out (compared case-folded), at most ``limit``."""
    seen = {question.strip().casefold()}
    out: list[str] = []
    for line in answer.splitlines():
        text = _BULLET.sub("", line).strip().strip("\"'").strip()
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return tuple(out[:limit])


def rewrite(llm: LLM, question: str, limit: int = REWRITES) -> Rewrite:
    """Ask ``llm`` for up to ``limit`` more queries for ``question`` (:data:`SYSTEM`)."""
    system = SYSTEM.format(n=limit)
    started = time.perf_counter()
    answer = llm.ask(question, system=system)
    ms = 1000 * (time.perf_counter() - started)
    return Rewrite(parse(answer, question, limit), count_tokens(system + "\n" + question), count_tokens(answer), ms)


def merged(lists: Sequence[Sequence[MemoryHit]], k: int) -> list[MemoryHit]:
    """The first ``k`` distinct messages (by id) taking each list's hits in turn, rank by rank, the question's own list
    (the first) first at every rank: its best hit stays first, and each query's best is in the top ``len(lists)``."""
    out: list[MemoryHit] = []
    seen: set[str] = set()
    for rank in range(max((len(hits) for hits in lists), default=0)):
        for hits in lists:
            if rank < len(hits) and hits[rank].message.id not in seen:
                seen.add(hits[rank].message.id)
                out.append(hits[rank])
                if len(out) == k:
                    return out
    return out


def rewritten_search(
    llm_setting: str,
    make_llm: Callable[[], LLM],
    question: str,
    k: int,
    search: Callable[[str], list[MemoryHit]],
    explain: bool,
) -> list[MemoryHit]:
    """``search`` (one query -> its hits) of ``question`` and of the queries the LLM writes for it, merged
    (:func:`merged`); with ``explain``, each hit also carries the rewrite's costs (:meth:`Rewrite.costs`).
    ``llm_setting`` is ``Settings.llm``: "none" (no LLM configured) is refused."""
    if llm_setting == "none":
        raise ConfigError(
            "search(rewrite=True) needs an LLM: configure one, e.g. Settings(llm='openai', llm_model=..., "
            "openai_base_url=...) or LTM_LLM=openai; the default search (rewrite=False) needs none"
        )
    llm = make_llm()
    try:
        asked = rewrite(llm, question)
    finally:
        close: Any = getattr(llm, "close", None)
        if callable(close):
            close()
    hits = merged([search(question), *(search(q) for q in asked.queries)], k)
    if not explain:
        return hits
    costs = asked.costs()
    return [replace(h, explain={**(h.explain or {}), **costs}) for h in hits]
