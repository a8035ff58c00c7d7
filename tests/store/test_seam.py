"""The seam between the store's facade and its engines (ltm/store/backend.py) stays typed: no engine or facade
function takes the handle as ``Any``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STORE = Path(__file__).resolve().parents[2] / "ltm" / "store"


def test_no_function_of_the_store_takes_the_handle_untyped() -> None:
    untyped = []
    for path in sorted(STORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if (
                    arg.arg in {"store", "handle", "backend"}
                    and ast.unparse(arg.annotation or ast.Name("Any")) == "Any"
                ):
                    untyped.append(f"{path.relative_to(STORE.parent.parent)}:{node.lineno} {node.name}({arg.arg})")
    assert not untyped, f"the handle crosses the seam as Any: {untyped}"


def test_each_engine_has_the_capabilities_it_fills_and_stubs_none() -> None:
    """What only one engine does is a capability the facade checks for, so PostgreSQL lacks those members instead
    of answering them with None."""
    from ltm.store.backend import KeywordFirst, StagedAdds, TermStatistics, WritesBehind
    from ltm.store.embedded import EmbeddedBackend

    capabilities = (StagedAdds, WritesBehind, KeywordFirst, TermStatistics)
    assert all(issubclass(EmbeddedBackend, c) for c in capabilities)
    pytest.importorskip("psycopg")
    from ltm.store.pg import PgBackend

    assert not [c.__name__ for c in capabilities if issubclass(PgBackend, c)]


def test_one_class_is_called_engine() -> None:
    named = [
        f"{path.relative_to(STORE)}:{node.lineno}"
        for path in sorted(STORE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == "Engine"
    ]
    assert [where.split(":")[0] for where in named] == ["backend.py"], named


def test_the_seam_holds_what_every_engine_implements_and_no_more() -> None:
    """DocumentBackend is the core both engines implement (what only one engine does is a capability beside it);
    members the facade never calls are not part of it."""
    import typing

    from ltm.store.backend import DocumentBackend

    members = typing._get_protocol_attrs(DocumentBackend)  # type: ignore[attr-defined]
    assert len(members) <= 34, sorted(members)
    assert not members & {"staging", "add_behind", "keyword_candidates", "keyword_beside", "term_stats", "count"}
