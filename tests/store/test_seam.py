"""The seam between the store's facade and its engines (ltm/store/backend.py) stays typed: no engine or facade
function takes the handle as ``Any``."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.store.backend import DocumentBackend, Engine, backend_for
from ltm.store.handle import Handle

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
    """DocumentBackend is the core both engines implement (what only one engine does is a capability beside it;
    reads, history, lifespan and upkeep are small roles it hands out: ltm.store.roles); members the facade never
    calls are not part of it."""
    import typing

    from ltm.store.backend import DocumentBackend

    members = typing._get_protocol_attrs(DocumentBackend)  # type: ignore[attr-defined]
    assert len(members) <= 21, sorted(members)
    assert not members & {"staging", "add_behind", "keyword_ahead", "term_stats", "count", "signal_scores"}


class _Counted:
    """An engine's open namespace as the handle sees it, recording each call that crosses into it."""

    def __init__(self, inner: Any, calls: list[str]) -> None:
        self._inner, self._calls = inner, calls

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        def crossing(*args: Any, **kwargs: Any) -> Any:
            self._calls.append(name)
            return value(*args, **kwargs)

        return crossing


class _CountingEngine:
    """An engine whose namespaces count the calls a handle makes into them (as httpx's MockTransport wraps a
    transport): every crossing of the seam, ``touch`` included."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.calls: list[str] = []
        self.engine_name = getattr(engine, "engine_name", "embedded")

    def open(self, store: Handle, namespace: str) -> DocumentBackend:
        counted: Any = _Counted(self.engine.open(store, namespace), self.calls)
        return counted  # type: ignore[no-any-return]

    def discard(self, store: Handle, namespace: str) -> None:
        self.engine.discard(store, namespace)


@pytest.mark.parametrize("beside", [False, True], ids=["keyword side under the lock", "keyword side beside"])
@pytest.mark.parametrize("run", ["search", "asearch"])
def test_a_hybrid_search_crosses_the_seam_at_most_four_times(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, beside: bool, run: str
) -> None:
    """A default hybrid search with filters, on a namespace whose versions hide a row: one ``touch``, the engine's
    context before the model (validity, dimension, the question's speaker names), its keyword side where it finds
    that first, and one request that it compiles, ranks, reads and explains itself."""
    if beside:
        if settings.store_url:
            pytest.skip("PostgreSQL ranks the keyword side inside its statement")
        monkeypatch.setattr("ltm.store.embedded.backend.READ_BESIDE_FROM", 0)
    engine = _CountingEngine(backend_for(settings))
    store = MemoryStorage("seam", settings=settings, backend=engine)
    store.add_batch(
        [
            Message("Fahim went for a morning run after the rain", id="a", sent_from="Fahim", metadata={"s": 1}),
            Message("Elise cancelled her plans, she was ill", id="b", sent_from="Elise", metadata={"s": 1}),
            Message("the rain stopped before noon", id="c", sent_from="Elise", metadata={"s": 2}),
        ]
    )
    store.supersede("b", Message("Elise cancelled her plans with friends", id="b2", metadata={"s": 1}))
    engine.calls.clear()
    query, filters = "When did Fahim go for a run in the rain?", {"metadata.s": 1}
    if run == "search":
        hits = store.search(query, 3, filters=filters)
    else:
        hits = asyncio.run(store.asearch(query, 3, filters=filters))
    assert [h.message.id for h in hits][:1] == ["a"] and "b" not in [h.message.id for h in hits]
    assert len(engine.calls) <= 4, engine.calls
    assert engine.calls.count("touch") == 1 and engine.calls[-1] == "search", engine.calls
    store.close()
