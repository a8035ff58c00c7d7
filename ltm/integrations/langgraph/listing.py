"""``list_namespaces``: LangGraph's match conditions (prefix / suffix, ``*`` matching any one label), depth and
paging over a set of namespaces."""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.store.base import InvalidNamespaceError, ListNamespacesOp, MatchCondition

__all__ = ["check_labels", "literal_prefix", "matching_namespaces"]


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


def check_labels(namespace: tuple[str, ...]) -> None:
    """LangGraph's label rules for ops that reach ``batch`` without its ``put`` / ``search`` checks."""
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels are non-empty "
                "strings without periods or NUL bytes"
            )


def literal_prefix(op: ListNamespacesOp) -> list[str]:
    """The labels ``op``'s first prefix condition fixes, up to its first ``*`` (empty: none): what a listing can
    narrow the stored items by before matching."""
    literal: list[str] = []
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix":
            for label in condition.path:
                if label == "*":
                    break
                literal.append(label)
            break
    return literal
