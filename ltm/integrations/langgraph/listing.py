"""``list_namespaces``: LangGraph's match conditions (prefix / suffix, ``*`` matching any one label), depth and
paging over a set of namespaces."""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.store.base import ListNamespacesOp, MatchCondition

__all__ = ["matching_namespaces"]


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"namespace match type is prefix or suffix, got {condition.match_type!r}")
    return all(want == "*" or have == want for have, want in pairs)


def matching_namespaces(namespaces: Iterable[tuple[str, ...]], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """The namespaces meeting every condition of ``op``, cut to ``max_depth`` labels (then deduplicated),
    sorted, and the page ``offset`` / ``limit`` of them."""
    kept = [ns for ns in namespaces if all(_matches(c, ns) for c in op.match_conditions or ())]
    if op.max_depth is not None:
        kept = list({ns[: op.max_depth] for ns in kept})
    return sorted(kept)[op.offset : op.offset + op.limit]
