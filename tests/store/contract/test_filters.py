"""The filter language (ltm.store.search.filters): checking, SQL compiled against real SQLite rows, and a Python
oracle of the documented semantics that every compiled filter must agree with."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import pytest

from ltm.config import Settings
from ltm.errors import InvalidInput, LTMError
from ltm.message import Message
from ltm.store import MemoryStorage
from ltm.store.embedded.filters import compile_sql
from ltm.store.pg.filters import pg_filter
from ltm.store.search.filters import And, Compare, Not, Or, parse, text_number
from tests.store.conftest import BACKENDS
from tests.support.embedded import embedded_of

_ROLES = ["user", "assistant", "Engineer", "ProductManager"]
_CAUSES = ["a.WriteCode", "a.WritePRD", "a.UserRequirement"]
_TAGS = ["alpha", "Beta", "gamma", "Ärger"]


class WriteCode:
    """An action class, as MetaGPT passes them for cause_by."""


def _messages(n: int = 80) -> list[Message]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        meta: dict[str, Any] = {}
        if i % 2:
            meta["user_id"] = f"u{i % 3}"
        if i % 5 == 0:
            meta["run_id"] = f"r{i % 4}"
        if i % 7:
            meta["agent_id"] = "agent-" + rng.choice("xyz")
        choice = rng.randrange(6)
        if choice == 0:
            meta["score"] = rng.randrange(10)
        elif choice == 1:
            meta["score"] = rng.random() * 10
        elif choice == 2:
            meta["score"] = rng.choice(["7", "high", "LOW"])
        elif choice == 3:
            meta["score"] = rng.choice([True, False, None])
        if rng.random() < 0.5:
            meta["tags"] = rng.sample(_TAGS, rng.randrange(0, 3))
        elif rng.random() < 0.5:
            meta["tags"] = rng.choice(_TAGS) + " note"
        if rng.random() < 0.3:
            meta["doc"] = {"kind": rng.choice(["pdf", "md"]), "pages": rng.randrange(5)}
        out.append(
            Message(
                f"message {i} about {rng.choice(['cats', 'Dogs', 'code', 'ÄRGER'])}",
                id=f"m{i:03d}",
                role=rng.choice(_ROLES),
                cause_by=WriteCode if i % 4 == 0 else rng.choice(_CAUSES),
                sent_from=rng.choice(["alice", "bob", ""]),
                send_to=rng.choice([{"alice"}, {"bob", "carol"}, set()]),
                created_at=1_700_000_000 + i * 60,
                metadata=meta,
            )
        )
    return out


@pytest.fixture(scope="module", params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> MemoryStorage:
    """The same 80 messages on each engine: every emitted dialect is checked against the oracle."""
    settings = Settings(storage_dir=tmp_path_factory.mktemp("filters") / "storage", embedding="hash")
    if request.param == "postgres":
        server = request.getfixturevalue("pg_server")
        server.truncate()
        settings = settings.with_(store_url=server.url)
    s = MemoryStorage("filters", settings=settings)
    s.add_batch(_messages())
    return s


def _sql_ids(store: MemoryStorage, filters: Mapping[str, Any]) -> set[str]:
    """The ids the engine's own SQL dialect selects for ``filters`` (SQLite's or PostgreSQL's emitter)."""
    if store.settings.store_url:
        from ltm.store.pg.backend import PgBackend  # here: the PostgreSQL client is an extra (not at MetaGPT's pins)

        where, named = pg_filter(filters)
        backend = store._engine()
        assert isinstance(backend, PgBackend)
        with backend.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT id FROM ltm_messages m WHERE m.ns = %(ns)s AND ({where})", {**named, "ns": backend.ns}
            ).fetchall()
        return {r[0] for r in rows}
    where, params = compile_sql(filters)
    log = embedded_of(store)._log
    assert log is not None
    return {r[0] for r in log.db.execute(f"SELECT id FROM messages m WHERE {where}", params)}


# -- the oracle: the documented semantics in plain Python --------------------------------------------------
_MISSING = object()


def _get(m: Message, field: str) -> Any:
    if field.startswith("metadata."):
        value: Any = m.metadata
        for part in field[len("metadata.") :].split("."):
            if not isinstance(value, dict) or part not in value:
                return _MISSING
            value = value[part]
        return value
    if field in ("user_id", "agent_id", "run_id"):
        return m.metadata.get(field)
    return getattr(m, field)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _leaf(m: Message, node: Compare) -> bool:
    value = _get(m, node.field)
    if node.op == "ne":
        return not _leaf(m, Compare(node.field, "eq", node.value))
    if node.op == "nin":
        return not _leaf(m, Compare(node.field, "in", node.value))
    if node.field == "send_to":
        return any(_leaf_value(v, node) for v in value)
    return _leaf_value(value, node)


def _leaf_value(value: Any, node: Compare) -> bool:
    if value is _MISSING:
        return False
    if node.op == "eq":
        return value is None if node.value is None else _same(value, node.value)
    if node.op == "in":
        return any((value is None) if v is None else _same(value, v) for v in node.value)
    if node.op in ("gt", "gte", "lt", "lte"):
        numeric = isinstance(node.value, int | float)
        if numeric and text_number(value) is not None:  # a number written as text compares by its value
            value = text_number(value)
        if (
            value is None
            or isinstance(value, bool)
            or (numeric != isinstance(value, int | float) or (not numeric and not isinstance(value, str)))
        ):
            return False
        return bool(
            {
                "gt": value > node.value,
                "gte": value >= node.value,
                "lt": value < node.value,
                "lte": value <= node.value,
            }[node.op]
        )
    fold = node.op == "icontains"
    needle = node.value.casefold() if fold else node.value
    if isinstance(value, str):
        return isinstance(needle, str) and needle in (value.casefold() if fold else value)
    if isinstance(value, list):
        return any(
            not isinstance(v, list | dict) and _same(v.casefold() if fold and isinstance(v, str) else v, needle)
            for v in value
        )
    return False


def _oracle(m: Message, node: Any) -> bool:
    if isinstance(node, And):
        return all(_oracle(m, p) for p in node.parts)
    if isinstance(node, Or):
        return any(_oracle(m, p) for p in node.parts)
    if isinstance(node, Not):
        return not _oracle(m, node.part)
    return _leaf(m, node)


_CASES: list[dict[str, Any]] = [
    {"role": "user"},
    {"role": ["user", "Engineer"]},
    {"role": {"ne": "user"}},
    {"role": {"nin": ["user", "assistant"]}},
    {"cause_by": WriteCode},
    {"cause_by": {"in": [WriteCode, "a.WritePRD"]}},
    {"sent_from": {"contains": "li"}},
    {"content": {"icontains": "dogs"}},
    {"content": {"icontains": "ärger"}},
    {"content": {"contains": "Dogs"}},
    {"send_to": "bob"},
    {"send_to": {"ne": "bob"}},
    {"send_to": {"in": ["alice", "carol"]}},
    {"created_at": {"gte": 1_700_000_600, "lt": 1_700_001_800}},
    {"created_at": {"gt": datetime.fromtimestamp(1_700_002_000, tz=timezone.utc)}},
    {"user_id": "u1"},
    {"user_id": None},
    {"user_id": {"ne": "u1"}},
    {"user_id": {"in": ["u0", None]}},
    {"run_id": "r1", "user_id": {"ne": None}},
    {"agent_id": {"contains": "x"}},
    {"metadata.score": 7},
    {"metadata.score": "7"},
    {"metadata.score": True},
    {"metadata.score": None},
    {"metadata.score": {"ne": None}},
    {"metadata.score": {"gt": 5}},
    {"metadata.score": {"lte": 3.5}},
    {"metadata.score": {"gte": "a"}},
    {"metadata.score": {"in": [1, 2, 3, "high"]}},
    {"metadata.score": {"in": [True, None, 7, "7", 3.5, "high", False]}},  # one IN list per JSON type
    {"metadata.score": {"nin": [1, 2, 3]}},
    {"metadata.tags": {"contains": "alpha"}},
    {"metadata.tags": {"icontains": "beta"}},
    {"metadata.tags": {"icontains": "ärger"}},
    {"metadata.tags": {"contains": "note"}},
    {"metadata.doc.kind": "pdf"},
    {"metadata.doc.pages": {"gte": 2}},
    {"metadata.missing": {"ne": 1}},
    {"OR": [{"role": "user"}, {"metadata.score": {"gt": 8}}]},
    {"AND": [{"role": "user"}, {"NOT": {"user_id": "u1"}}]},
    {"NOT": {"OR": [{"metadata.score": {"gt": 2}}, {"metadata.tags": {"contains": "gamma"}}]}},
    {"NOT": {"NOT": {"metadata.doc.kind": "md"}}},
    {
        "OR": [{"AND": [{"role": "assistant"}, {"created_at": {"lt": 1_700_002_000}}]}, {"NOT": {"send_to": "alice"}}],
        "agent_id": {"ne": "agent-z"},
    },
]


@pytest.mark.parametrize("filters", _CASES, ids=[str(i) for i in range(len(_CASES))])
def test_sql_agrees_with_the_documented_semantics(store: MemoryStorage, filters: dict[str, Any]) -> None:
    tree = parse(filters)
    expected = {m.id for m in _messages() if _oracle(m, tree)}
    assert _sql_ids(store, filters) == expected
    assert {m.id for m in store.list(filters, limit=100).messages} == expected
    assert store.count(filters) == len(expected)


def test_the_cases_are_not_trivial(store: MemoryStorage) -> None:
    sizes = [len(_sql_ids(store, f)) for f in _CASES]
    assert sum(0 < s < 80 for s in sizes) >= len(_CASES) - 2, sizes


def test_complements_partition_the_store(store: MemoryStorage) -> None:
    for filters in _CASES:
        inside = _sql_ids(store, filters)
        outside = _sql_ids(store, {"NOT": filters})
        assert not inside & outside and len(inside | outside) == 80


def test_old_search_kwargs_are_translated() -> None:
    old = {
        "role": ["user"],
        "cause_by": WriteCode,
        "created_after": 5,
        "created_before": 9,
        "metadata": {"topic": "x", "n": None},
    }
    tree = parse(old)
    assert isinstance(tree, And)
    assert set(tree.parts) == {
        Compare("role", "in", ("user",)),
        Compare("cause_by", "eq", "tests.store.contract.test_filters.WriteCode"),
        Compare("created_at", "gte", 5.0),
        Compare("created_at", "lt", 9.0),
        Compare("metadata.topic", "eq", "x"),
        Compare("metadata.n", "eq", None),
    }


def test_values_are_parameters_never_sql(store: MemoryStorage) -> None:
    hostile = "x' OR 1=1 --"
    where, params = compile_sql({"role": hostile, "metadata.k": {"contains": hostile}})
    assert hostile not in where and hostile in params
    pg_where, named = pg_filter({"role": hostile, "metadata.k": {"contains": hostile}})
    assert hostile not in pg_where and hostile in named.values()
    assert (
        _sql_ids(store, {"OR": [{"role": hostile}, {"content": {"contains": "'); DROP TABLE messages; --"}}]}) == set()
    )
    assert store.count() == 80


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        ({"role": {"like": "u%"}}, "unknown filter operator 'like'"),
        ({"rol": "user"}, "unknown filter field 'rol'"),
        ({"metadata.a'b": 1}, "metadata filter"),
        ({"metadata.": 1}, "metadata filter"),
        ({"role": 5}, "takes text"),
        ({"created_at": {"gte": "yesterday"}}, "ISO 8601"),
        ({"created_at": {"contains": "2024"}}, "is a time"),
        ({"role": {"gt": "a"}}, "is text"),
        ({"metadata.x": {"gt": None}}, "compares a number or text"),
        ({"metadata.x": {"eq": [1, 2]}}, "compares text, numbers"),
        ({"metadata.x": {"eq": float("nan")}}, "finite"),
        ({"role": {"in": []}}, "non-empty list"),
        ({"role": {"in": "user"}}, "non-empty list"),
        ({"role": {}}, "empty operator dict"),
        ({"AND": []}, "non-empty list"),
        ({"OR": {"role": "user"}}, "non-empty list"),
        ({"NOT": "user"}, "non-empty dict"),
        ({"metadata": "x"}, "metadata.KEY"),
        ({"content": {"icontains": 3}}, "takes text"),
    ],
)
def test_bad_filters_are_refused_with_the_fix(store: MemoryStorage, filters: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidInput, match=None) as info:
        compile_sql(filters)
    assert isinstance(info.value, LTMError) and says in str(info.value)
    with pytest.raises(InvalidInput) as on_pg:  # the other dialect: the same parser, the same message
        pg_filter(filters)
    assert str(on_pg.value) == str(info.value)


def test_not_a_dict_is_refused() -> None:
    with pytest.raises(InvalidInput, match="must be a dict"):
        parse([("role", "user")])  # type: ignore[arg-type]
    assert parse({}) is None and parse(None) is None and compile_sql(None) == ("1", [])


@pytest.mark.parametrize(
    ("filters", "index"),
    [
        ({"user_id": "u1"}, "messages_user_id"),
        ({"run_id": "r0"}, "messages_run_id"),
        ({"agent_id": {"in": ["agent-x", "agent-y"]}}, "messages_agent_id"),
        ({"cause_by": WriteCode}, "messages_cause_by"),
        ({"created_at": {"gte": 1_700_000_600, "lt": 1_700_001_800}}, "messages_created_at"),
        ({"id": "m001"}, "sqlite_autoindex_messages"),
    ],
)
def test_a_selective_filter_is_an_index_lookup(store: MemoryStorage, filters: dict[str, Any], index: str) -> None:
    if store.settings.store_url:
        pytest.skip("SQLite's query plan (PostgreSQL's: test_pg_documents.py::test_selective_filters_can_use_an_index)")
    where, params = compile_sql({**filters, "metadata.score": {"ne": 3}})
    log = embedded_of(store)._log
    assert log is not None
    plan = " | ".join(
        r[3] for r in log.db.execute(f"EXPLAIN QUERY PLAN SELECT seq FROM messages m WHERE {where}", params)
    )
    assert f"USING INDEX {index}" in plan or f"USING COVERING INDEX {index}" in plan, plan
    assert "SCAN m" not in plan.replace("SCAN m USING", ""), plan


def test_an_indexed_metadata_key_is_an_index_lookup(tmp_path_factory: pytest.TempPathFactory) -> None:
    settings = Settings(storage_dir=tmp_path_factory.mktemp("meta") / "storage", embedding="hash")
    store = MemoryStorage("meta", settings=settings)
    store.add_batch(_messages())
    filters = {"metadata.doc.kind": "pdf", "role": {"ne": "user"}}
    before = _sql_ids(store, filters)
    store.index_metadata("doc.kind")
    store.index_metadata("doc.kind")  # idempotent
    where, params = compile_sql(filters)
    log = embedded_of(store)._log
    assert log is not None
    plan = " | ".join(
        r[3] for r in log.db.execute(f"EXPLAIN QUERY PLAN SELECT seq FROM messages m WHERE {where}", params)
    )
    assert "USING INDEX messages_meta_doc__kind" in plan, plan
    assert _sql_ids(store, filters) == before and before
    with pytest.raises(InvalidInput, match="metadata filter"):
        store.index_metadata("x'); DROP TABLE messages; --")
