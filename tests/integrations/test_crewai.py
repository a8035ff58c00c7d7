"""ltm under CrewAI, with real CrewAI objects: LtmStorage as a StorageBackend, under CrewAI's Memory (its
remember / recall / forget / scopes) and under a Crew whose LLM and embedder are the local OpenAI-compatible
server; a Crew that remembers across a killed process.

Runs in scripts/frameworks/crewai's environment; where CrewAI is not installed the module is skipped."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from crewai.memory.storage.backend import EmbeddingDimensionMismatchError, StorageBackend  # noqa: E402
from crewai.memory.types import MemoryRecord  # noqa: E402
from crewai.memory.unified_memory import Memory  # noqa: E402

from ltm.config import Settings  # noqa: E402
from ltm.errors import InvalidInput  # noqa: E402
from ltm.integrations.crewai import LtmStorage  # noqa: E402
from tests.support.openai_server import OpenAIServer, embed  # noqa: E402

DIM = 64


def vector(text: str) -> list[float]:
    """What CrewAI's embedder gives in these tests: the local server's bag-of-words vectors."""
    return embed(text, DIM)


def record(content: str, scope: str = "/", **fields: object) -> MemoryRecord:
    return MemoryRecord(content=content, scope=scope, embedding=vector(content), **fields)  # type: ignore[arg-type]


@pytest.fixture(params=["embedded", "postgres"])
def storage(request: pytest.FixtureRequest, settings: Settings) -> Iterator[LtmStorage]:
    """The backend on each engine: the embedded store, and PostgreSQL (the private server of tests/conftest.py)."""
    if request.param == "postgres":
        if importlib.util.find_spec("psycopg") is None or importlib.util.find_spec("pgserver") is None:
            pytest.skip("PostgreSQL: install ltm[pg] and pgserver (scripts/frameworks/crewai does)")
        settings = settings.with_(store_url=request.getfixturevalue("pg_url"))
    backend = LtmStorage(settings)
    yield backend
    backend.close()


def test_is_a_storage_backend_that_stores_the_vectors_it_is_given(storage: LtmStorage) -> None:
    assert isinstance(storage, StorageBackend)
    storage.save(
        [
            record("Orders live in PostgreSQL", "/crew/architect", categories=["decision"]),
            record(
                "Discount codes apply twice at checkout", "/crew/qa", categories=["bug"], metadata={"severity": "high"}
            ),
            record("The launch is planned for March", "/crewmates"),
        ]
    )
    hits = storage.search(vector("discount codes checkout"), limit=2)
    assert hits[0][0].content == "Discount codes apply twice at checkout"
    assert 0.5 < hits[0][1] <= 1.0 and hits[0][1] > hits[1][1]  # cosine similarities, best first
    assert storage.store.model == "crewai"  # the namespace never embeds a text with a model of its own
    with pytest.raises(EmbeddingDimensionMismatchError):
        storage.search([0.1] * (DIM + 1))
    with pytest.raises(EmbeddingDimensionMismatchError):
        storage.save([MemoryRecord(content="another embedder", embedding=[0.1] * (DIM + 1))])


def test_records_without_a_vector_are_kept_but_never_found(storage: LtmStorage) -> None:
    with pytest.raises(InvalidInput, match="dimension"):  # nothing tells the namespace its dimension yet
        storage.save([MemoryRecord(content="no vector")])
    storage.save([MemoryRecord(content="zero vector", embedding=[0.0] * DIM), record("Discount codes apply twice")])
    storage.save([MemoryRecord(content="no vector", scope="/later")])
    assert storage.count() == 3 and storage.list_scopes() == ["/later"]
    assert [r.content for r, _ in storage.search(vector("zero vector no"), min_score=-1)] == [
        "Discount codes apply twice"
    ]
    storage.reset()  # the whole namespace: the next save may bring another dimension
    storage.save([MemoryRecord(content="a new embedder", embedding=[0.5] * (DIM * 2))])
    assert [r.content for r, _ in storage.search([0.5] * (DIM * 2))] == ["a new embedder"]


def test_records_without_a_vector_are_never_found_even_where_they_would_rank_first(storage: LtmStorage) -> None:
    """Such a record holds the store's placeholder vector (the first unit vector): a query along it would rank every
    one of them first, yet the search still returns the ``limit`` best records that have a vector."""
    storage.save([record(text) for text in ("Orders live in PostgreSQL", "Discount codes apply twice", "Launch")])
    storage.save([MemoryRecord(content=f"unembedded {i}", embedding=[0.0] * DIM) for i in range(30)])
    along = [1.0] + [0.0] * (DIM - 1)
    found = storage.search(along, limit=2, min_score=-1)
    assert len(found) == 2 and not any(r.content.startswith("unembedded") for r, _ in found)
    assert found[0][1] >= found[1][1]
    assert len(storage.search(along, limit=10, min_score=-1)) == 3
    for bad in (float("nan"), "0.5", True):
        with pytest.raises(InvalidInput, match="min_score is a finite"):
            storage.search(along, min_score=bad)  # type: ignore[arg-type]


def test_a_first_save_of_zero_vectors_alone_fixes_the_dimension(storage: LtmStorage) -> None:
    storage.save([MemoryRecord(content="zero vector", embedding=[0.0] * DIM)])  # its length: the dimension
    assert storage.count() == 1 and storage.store.dimension() == DIM
    assert storage.search(vector("zero vector"), min_score=-1) == []
    with pytest.raises(EmbeddingDimensionMismatchError):
        storage.save([MemoryRecord(content="another embedder", embedding=[0.0] * (DIM + 1))])


def test_filters_are_paths_categories_metadata_and_age(storage: LtmStorage) -> None:
    old = datetime(2020, 1, 1)
    storage.save(
        [
            record("Orders live in PostgreSQL", "/crew/architect", categories=["decision"], created_at=old),
            record(
                "Discount codes apply twice", "/crew/qa", categories=["bug", "checkout"], metadata={"severity": "high"}
            ),
            record("The launch is planned for March", "/crewmates", metadata={"severity": "low"}),
        ]
    )
    query = vector("anything")
    assert {r.scope for r, _ in storage.search(query, scope_prefix="/crew", limit=10, min_score=-1)} == {
        "/crew/architect",
        "/crew/qa",
    }  # a path prefix: /crewmates is not under /crew
    assert [r.content for r, _ in storage.search(query, categories=["checkout", "none"], min_score=-1)] == [
        "Discount codes apply twice"
    ]
    assert [r.content for r, _ in storage.search(query, metadata_filter={"severity": "low"}, min_score=-1)] == [
        "The launch is planned for March"
    ]
    assert (
        storage.search(vector("Orders live in PostgreSQL"), min_score=0.99)[0][0].content == "Orders live in PostgreSQL"
    )
    assert storage.count("/crew") == 2 and storage.count() == 3
    assert storage.list_scopes("/") == ["/crew", "/crewmates"]
    assert storage.list_scopes("/crew") == ["/crew/architect", "/crew/qa"]
    info = storage.get_scope_info("/crew")
    assert (info.record_count, info.categories, info.child_scopes) == (
        2,
        ["bug", "checkout", "decision"],
        ["/crew/architect", "/crew/qa"],
    )
    assert info.oldest_record == old
    assert storage.list_categories("/crew/qa") == {"bug": 1, "checkout": 1}
    assert [r.content for r in storage.list_records(limit=2)][1] != "Orders live in PostgreSQL"  # newest first
    assert storage.list_records(offset=2)[0].created_at == old
    assert storage.delete(record_ids=[]) == 0 and storage.count() == 3  # no id named: nothing deleted
    assert storage.delete(older_than=datetime(2021, 1, 1)) == 1
    assert storage.delete(scope_prefix="/crewmates") == 1
    storage.reset()
    assert storage.count() == 0


def test_update_touch_and_round_trip(storage: LtmStorage) -> None:
    first = record(
        "The API key rotates monthly",
        "/ops",
        categories=["policy"],
        importance=0.9,
        metadata={"owner": "sre"},
        source="alice",
        private=True,
    )
    storage.save([first])
    back = storage.get_record(first.id)
    assert back is not None
    assert back.model_dump(exclude={"embedding"}) == first.model_dump(exclude={"embedding"})
    assert storage.get_record("missing") is None

    first.content, first.embedding = "The API key rotates weekly", vector("The API key rotates weekly")
    storage.update(first)
    assert storage.search(vector("rotates weekly"), limit=1)[0][0].content == "The API key rotates weekly"
    first.embedding, first.metadata = None, {"team": "platform"}  # no new vector: the stored one stays
    storage.update(first)
    got = storage.get_record(first.id)
    assert got is not None and got.metadata == {"team": "platform"}
    assert storage.search(vector("rotates weekly"), limit=1)[0][0].id == first.id  # the vector stayed

    before = got.last_accessed
    storage.touch_records([first.id, "missing"])
    touched = storage.get_record(first.id)
    assert touched is not None and touched.last_accessed >= before

    first.content = "changed again"  # a new content without its vector: kept, but no longer found by meaning
    storage.update(first)
    assert storage.search(vector("changed again"), min_score=-1) == []
    assert (storage.get_record(first.id) or first).content == "changed again"
    assert [e.event for e in storage.store.history(first.id)] == ["ADD", "UPDATE", "UPDATE", "UPDATE", "UPDATE"]


# Metadata CrewAI's LanceDB storage keeps as it is (JSON): keys with '.', ltm's scope and expiry keys with values ltm
# could not use as such, ltm's embed_context, the adapter's own key, a leading '-'.
ANY_METADATA: dict[str, object] = {
    "file.name": "notes.md",
    "nested": {"a.b": [1, {"c.d": True}], "-e": None},
    "user_id": 7,
    "agent_id": "",
    "run_id": "r" * 300,
    "expires_at": "next week",
    "embed_context": "not a text to embed",
    "crewai": "mine",
    "-lead": "dash",
}


def test_any_metadata_round_trips_and_filters(storage: LtmStorage) -> None:
    storage.save(
        [
            record("Orders live in PostgreSQL", "/crew", metadata=ANY_METADATA),
            record("Discounts apply twice", "/crew", metadata={"user_id": "alice", "expires_at": "2999-01-01"}),
        ]
    )
    saved = {r.content: r for r in storage.list_records()}
    assert saved["Orders live in PostgreSQL"].metadata == ANY_METADATA
    assert saved["Discounts apply twice"].metadata == {"user_id": "alice", "expires_at": "2999-01-01"}
    query = vector("anything")
    for key in ("file.name", "user_id", "run_id", "expires_at", "embed_context", "crewai", "-lead"):
        hits = storage.search(query, metadata_filter={key: ANY_METADATA[key]}, min_score=-1)
        assert [r.content for r, _ in hits] == ["Orders live in PostgreSQL"], key
    assert [r.content for r, _ in storage.search(query, metadata_filter={"user_id": "alice"}, min_score=-1)] == [
        "Discounts apply twice"
    ]
    assert storage.store.count({"user_id": "alice"}) == 1  # a value ltm reads keeps its ltm meaning (a scope)
    assert storage.delete(metadata_filter={"file.name": "notes.md"}) == 1 and storage.count() == 1


def test_a_nul_in_a_scope_or_filter_matches_nothing_on_every_engine(storage: LtmStorage) -> None:
    stored = record("Orders live in PostgreSQL", "/crew", categories=["decision"], metadata={"owner": "sre"})
    storage.save([stored])
    query = vector("orders")
    assert storage.search(query, scope_prefix="/crew\x00", min_score=-1) == []
    assert storage.search(query, categories=["decision\x00"], min_score=-1) == []
    assert storage.search(query, metadata_filter={"owner": "sre\x00"}, min_score=-1) == []
    assert storage.search(query, metadata_filter={"own\x00er": "sre"}, min_score=-1) == []
    assert [r.id for r, _ in storage.search(query, categories=["\x00", "decision"], min_score=-1)] == [stored.id]
    assert storage.count("/crew\x00") == 0 and storage.list_records("/\x00") == []
    assert storage.list_scopes("/\x00") == [] and storage.get_scope_info("/\x00").record_count == 0
    assert storage.get_record("\x00") is None
    storage.touch_records(["\x00"])
    assert storage.delete(record_ids=["\x00"]) == 0 and storage.delete(scope_prefix="/\x00") == 0
    assert storage.delete(metadata_filter={"owner": "\x00"}) == 0 and storage.count() == 1


def test_arguments_of_the_wrong_type_raise_invalid_input(storage: LtmStorage) -> None:
    storage.save([record("Orders live in PostgreSQL", "/crew")])
    query = vector("orders")
    for call, match in (
        (lambda: storage.search(None), "query_embedding is the query's vector"),  # type: ignore[arg-type]
        (lambda: storage.search(query, scope_prefix=5), "scope_prefix is a scope path"),  # type: ignore[arg-type]
        (lambda: storage.search(query, categories="decision"), "categories is a list of str"),  # type: ignore[arg-type]
        (lambda: storage.search(query, metadata_filter=[("k", "v")]), "metadata_filter is a dict"),  # type: ignore[arg-type]
        (lambda: storage.delete(older_than="yesterday"), "older_than is a datetime"),  # type: ignore[arg-type]
        (lambda: storage.delete(metadata_filter=["k"]), "metadata_filter is a dict"),  # type: ignore[arg-type]
        (lambda: storage.delete(record_ids="abc"), "record_ids is a list of str"),  # type: ignore[arg-type]
        (lambda: storage.count(5), "scope_prefix is a scope path"),  # type: ignore[arg-type]
        (lambda: storage.list_scopes(5), "parent is a scope path"),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidInput, match=match):
            call()
    assert storage.count() == 1


def test_an_empty_id_is_kept_as_lancedb_keeps_it(storage: LtmStorage) -> None:
    """CrewAI's LanceDB storage stores ``MemoryRecord(id="")`` under "": get, update and delete by "" reach it."""
    first = MemoryRecord(id="", content="Orders live in PostgreSQL", embedding=vector("Orders live in PostgreSQL"))
    tilde = record("Discounts apply twice", id="~x")
    storage.save([first, tilde])
    assert (storage.get_record("") or tilde).content == "Orders live in PostgreSQL"
    assert storage.search(vector("Orders live in PostgreSQL"), limit=1)[0][0].id == ""
    first.content, first.embedding = "Orders moved to MySQL", vector("Orders moved to MySQL")
    storage.update(first)
    storage.update(first.model_copy(update={"embedding": None, "metadata": {"owner": "sre"}}))
    assert storage.count() == 2
    back = storage.get_record("")
    assert back is not None and (back.id, back.content, back.metadata) == (
        "",
        "Orders moved to MySQL",
        {"owner": "sre"},
    )
    assert (storage.get_record("~x") or first).content == "Discounts apply twice" and storage.get_record("x") is None
    storage.touch_records([""])
    assert storage.delete(record_ids=[""]) == 1 and storage.get_record("") is None
    assert [r.id for r in storage.list_records()] == ["~x"]


async def _async_twins(storage: LtmStorage) -> None:
    await storage.asave([record("async memory", "/a")])
    hits = await storage.asearch(vector("async memory"), scope_prefix="/a")
    assert [r.content for r, _ in hits] == ["async memory"]
    assert await storage.adelete(record_ids=[hits[0][0].id]) == 1


def test_async_twins(storage: LtmStorage) -> None:
    import asyncio

    asyncio.run(_async_twins(storage))


def test_crewai_memory_remembers_recalls_and_forgets(settings: Settings, openai_server: OpenAIServer) -> None:
    memory = Memory(storage=LtmStorage(settings), llm=_llm(openai_server), embedder=_embedder(openai_server))
    memory.remember(
        "We decided to keep orders in PostgreSQL.", scope="/project", categories=["decision"], importance=0.8
    )
    memory.remember(
        "The QA team found discount codes applied twice.", scope="/project/qa", categories=["bug"], importance=0.6
    )
    matches = memory.recall("orders kept in PostgreSQL", scope="/project", limit=5, depth="shallow")
    assert matches[0].record.content == "We decided to keep orders in PostgreSQL."
    assert matches[0].record.categories == ["decision"] and matches[0].record.importance == 0.8
    assert memory.list_scopes("/project") == ["/project/qa"]
    assert memory.forget(scope="/project/qa") == 1
    left = memory.recall("discount codes applied twice", limit=5, depth="shallow")
    assert [m.record.scope for m in left] == ["/project"]
    memory.close()


def test_a_crew_remembers_across_a_killed_process(tmp_path: Path, openai_server: OpenAIServer) -> None:
    """A Crew runs a task with memory on ltm and is killed with SIGKILL once kickoff returns; a new Crew on the
    same data root recalls what the first one learnt."""
    root = tmp_path / "storage"
    first = _crew_process(root, openai_server, "Remember: the deploy window is Friday 18:00 UTC.", kill=True)
    assert first.returncode == -signal.SIGKILL, first.stderr
    saved = LtmStorage(Settings(storage_dir=root))
    assert any("Friday 18:00 UTC" in r.content for r in saved.list_records()), "the Crew saved nothing to ltm"
    saved.close()
    second = _crew_process(root, openai_server, "When is the deploy window?", kill=False)
    assert second.returncode == 0, second.stderr
    assert "RECALLED: " in second.stdout and "Friday 18:00 UTC" in second.stdout.split("RECALLED: ", 1)[1]


def _llm(server: OpenAIServer) -> object:
    from crewai import LLM

    return LLM(model="openai/gpt-4o-mini", base_url=server.base_url, api_key="sk-local-test")


def _embedder(server: OpenAIServer) -> dict[str, object]:
    return {
        "provider": "openai",
        "config": {
            "api_key": "sk-local-test",
            "api_base": server.base_url,
            "model_name": "text-embedding-3-small",
            "dimensions": DIM,
        },
    }


def _crew_process(root: Path, server: OpenAIServer, task: str, *, kill: bool) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(f"""
        import os, signal
        from crewai import LLM, Agent, Crew, Task
        from crewai.memory.unified_memory import Memory
        from ltm.config import Settings
        from ltm.integrations.crewai import LtmStorage

        llm = LLM(model="openai/gpt-4o-mini", base_url={server.base_url!r}, api_key="sk-local-test")
        memory = Memory(storage=LtmStorage(Settings(storage_dir={str(root)!r})), llm=llm,
                        embedder={_embedder(server)!r})
        agent = Agent(role="Release manager", goal="Keep track of releases", backstory="Careful.", llm=llm)
        task = Task(description={task!r}, expected_output="One sentence.", agent=agent)
        Crew(agents=[agent], tasks=[task], memory=memory).kickoff()
        memory.drain_writes() if hasattr(memory, "drain_writes") else None
        if {kill!r}:
            os.kill(os.getpid(), signal.SIGKILL)
        print("RECALLED: " + " | ".join(m.record.content for m in memory.recall("deploy window", depth="shallow")))
    """)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "CREWAI_DISABLE_TELEMETRY": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_STORAGE_DIR": str(root / "crewai"),
    }
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def test_the_docs_page_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, openai_server: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's example, with its ``llm`` and ``embedder`` pointed at the local server."""
    page = Path(__file__).resolve().parents[2] / "docs" / "frameworks" / "crewai.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {"llm": _llm(openai_server), "embedder": _embedder(openai_server)}
    for i, block in enumerate(blocks):
        exec(compile(block, f"crewai.md#{i}", "exec"), scope)
    assert "We keep orders in PostgreSQL." in capsys.readouterr().out
    assert LtmStorage(Settings(storage_dir=tmp_path / "storage")).count() >= 2  # the crew saved through ltm too
