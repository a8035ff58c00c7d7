"""ltm inside AutoGen, with real AutoGen objects: LtmMemory as an autogen_core Memory, a real
BufferedChatCompletionContext, an AssistantAgent (driven by AutoGen's ReplayChatCompletionClient, no LLM) that
consults it, the component config round trip, and memories that survive a killed process.

Runs in scripts/frameworks/autogen's environment; where AutoGen is not installed the module is skipped."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

pytest.importorskip("autogen_core")
pytest.importorskip("autogen_agentchat")

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.messages import MemoryQueryEvent  # noqa: E402
from autogen_core import ComponentModel  # noqa: E402
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType  # noqa: E402
from autogen_core.model_context import BufferedChatCompletionContext  # noqa: E402
from autogen_core.models import SystemMessage, UserMessage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

from ltm.config import Settings  # noqa: E402
from ltm.errors import InvalidInput  # noqa: E402
from ltm.integrations.autogen import LtmMemory  # noqa: E402

FACTS = [
    ("Paris is known for the Eiffel Tower and amazing cuisine.", {"category": "city"}),
    ("Jupiter is the largest planet in our solar system.", {"category": "astronomy"}),
    ("The user prefers weather temperatures in Celsius.", {"category": "preferences"}),
]


def text(content: str, **metadata: object) -> MemoryContent:
    return MemoryContent(content=content, mime_type=MemoryMimeType.TEXT, metadata=dict(metadata) or None)


@pytest.fixture
def local(tmp_path: Path) -> Settings:
    """The packaged local model: these tests are about meaning."""
    return Settings(storage_dir=tmp_path / "storage", embedding="local")


async def filled(settings: Settings, **kwargs: object) -> LtmMemory:
    memory = LtmMemory("assistant", settings=settings, **kwargs)  # type: ignore[arg-type]
    for content, metadata in FACTS:
        await memory.add(text(content, **metadata))
    return memory


@pytest.mark.asyncio
async def test_is_an_autogen_memory_and_finds_by_meaning(local: Settings) -> None:
    memory = await filled(local, k=2)
    assert isinstance(memory, Memory)
    found = await memory.query("Which planet is the biggest one?")
    assert len(found.results) == 2
    best = found.results[0]
    assert best.content == FACTS[1][0]
    assert best.metadata is not None and best.metadata["category"] == "astronomy"
    assert best.metadata["mime_type"] == "text/plain" and best.metadata["id"]
    scores = [r.metadata["score"] for r in found.results if r.metadata]
    assert scores == sorted(scores, reverse=True) and 0.3 < scores[0] <= 1.0
    await memory.close()


@pytest.mark.asyncio
async def test_score_threshold_is_a_minimum_cosine(local: Settings) -> None:
    memory = await filled(local, score_threshold=0.5)
    assert [r.content for r in (await memory.query("the biggest planet of the solar system")).results] == [FACTS[1][0]]
    assert (await memory.query("a recipe for chocolate cake")).results == []


@pytest.mark.asyncio
async def test_update_context_adds_one_system_message_with_the_memories(local: Settings) -> None:
    memory = await filled(local, k=1)
    context = BufferedChatCompletionContext(buffer_size=5)
    assert (await LtmMemory("empty", settings=local).update_context(context)).memories.results == []
    assert await context.get_messages() == []
    # nothing to query with yet: the most recent memory, as a chronological memory would give it
    assert [r.content for r in (await memory.update_context(context)).memories.results] == [FACTS[2][0]]
    assert [m.content for m in await context.get_messages()] == [f"\nRelevant memory content:\n1. {FACTS[2][0]}"]

    context = BufferedChatCompletionContext(buffer_size=5)
    await context.add_message(UserMessage(content="Tell me about Jupiter", source="user"))
    result = await memory.update_context(context)
    assert [r.content for r in result.memories.results] == [FACTS[1][0]]
    messages = await context.get_messages()
    assert len(messages) == 2 and isinstance(messages[1], SystemMessage)
    assert messages[1].content == f"\nRelevant memory content:\n1. {FACTS[1][0]}"


@pytest.mark.asyncio
async def test_an_assistant_agent_consults_it(local: Settings) -> None:
    memory = await filled(local, k=1)
    client = ReplayChatCompletionClient(["It is 90°F, that is 32°C."])
    agent = AssistantAgent("assistant", model_client=client, memory=[memory])
    result = await agent.run(task="What units should the temperature be given in?")
    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert [c.content for c in events[0].content] == [FACTS[2][0]]
    assert result.messages[-1].to_text() == "It is 90°F, that is 32°C."


@pytest.fixture(params=["embedded", "postgres"])
def engine(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """Hash-embedding settings on each engine: the embedded store, and PostgreSQL (tests/conftest.py's server)."""
    if request.param == "postgres":
        if importlib.util.find_spec("psycopg") is None or importlib.util.find_spec("pgserver") is None:
            pytest.skip("PostgreSQL: install ltm[pg] and pgserver (scripts/frameworks/autogen does)")
        return settings.with_(store_url=request.getfixturevalue("pg_url"))
    return settings


@pytest.mark.asyncio
async def test_contents_filters_and_refusals(engine: Settings) -> None:
    memory = LtmMemory("kinds", settings=engine, k=10)
    await memory.add(MemoryContent(content={"city": "Lyon", "rank": 3}, mime_type=MemoryMimeType.JSON))
    await memory.add(
        MemoryContent(
            content="# Notes\nLyon has traboules", mime_type=MemoryMimeType.MARKDOWN, metadata={"source": "guide"}
        )
    )
    found = {r.metadata["mime_type"]: r.content for r in (await memory.query("Lyon")).results if r.metadata}
    assert found == {"application/json": {"city": "Lyon", "rank": 3}, "text/markdown": "# Notes\nLyon has traboules"}
    only = await memory.query("Lyon", filters={"metadata.source": "guide"})
    assert [r.content for r in only.results] == ["# Notes\nLyon has traboules"]
    assert len((await memory.query("Lyon", k=1)).results) == 1

    with pytest.raises(ValueError, match="Unsupported content type"):  # InvalidInput is a ValueError
        await memory.add(MemoryContent(content=b"\x00\x01", mime_type=MemoryMimeType.BINARY))
    with pytest.raises(InvalidInput, match="JSON content must be a dict"):
        await memory.add(MemoryContent(content="not a dict", mime_type=MemoryMimeType.JSON))
    with pytest.raises(InvalidInput, match="filters, k"):
        await memory.query("Lyon", where={"source": "guide"})
    assert (await memory.query("")).results == []

    await memory.clear()
    assert (await memory.query("Lyon")).results == []
    await memory.close()
    await memory.add(text("after close, the store reopens"))
    assert len((await memory.query("reopens")).results) == 1


# Metadata AutoGen's own memories take as it is (ListMemory keeps any dict; ChromaDB any flat one): keys with '.',
# ltm's scope and expiry keys with values ltm could not use as such, ltm's embed_context, a leading '-'.
ANY_METADATA: dict[str, object] = {
    "file.name": "notes.md",
    "nested": {"a.b": [1, {"c.d": True}], "-e": None},
    "user_id": 7,
    "agent_id": "",
    "run_id": "r" * 300,
    "expires_at": "next week",
    "embed_context": "not a text to embed",
    "-lead": "dash",
    "x-y": 1.5,
}


def _given(content: MemoryContent) -> dict[str, object]:
    """A result's metadata less what a searching memory adds (ChromaDB's adds the same three keys)."""
    return {k: v for k, v in (content.metadata or {}).items() if k not in ("id", "score", "mime_type")}


@pytest.mark.asyncio
async def test_any_metadata_round_trips_and_filters(engine: Settings) -> None:
    memory = LtmMemory("meta", settings=engine, k=10)
    await memory.add(text("Lyon has traboules", **ANY_METADATA))
    await memory.add(text("Lyon has a basilica", user_id="alice", expires_at="2999-01-01T00:00:00+00:00"))
    found = {r.content: r for r in (await memory.query("Lyon")).results}
    assert _given(found["Lyon has traboules"]) == ANY_METADATA
    assert _given(found["Lyon has a basilica"]) == {"user_id": "alice", "expires_at": "2999-01-01T00:00:00+00:00"}

    async def where(filters: dict[str, object]) -> list[object]:
        return [r.content for r in (await memory.query("Lyon", filters=filters)).results]

    assert await where({"metadata.file\\.name": "notes.md"}) == ["Lyon has traboules"]  # '\\.': a '.' in a key
    assert await where({"metadata.user_id": 7}) == ["Lyon has traboules"]
    assert await where({"metadata.run_id": {"contains": "rrr"}, "metadata.-lead": "dash"}) == ["Lyon has traboules"]
    assert await where({"metadata": {"x-y": 1.5}}) == ["Lyon has traboules"]
    assert await where({"metadata.mime_type": "text/plain", "metadata.user_id": "alice"}) == ["Lyon has a basilica"]
    assert await where({"user_id": "alice"}) == ["Lyon has a basilica"]  # a value ltm reads keeps its ltm meaning
    assert memory.store.count() == 2


@pytest.mark.asyncio
async def test_a_nul_in_a_filter_matches_nothing_on_every_engine(engine: Settings) -> None:
    memory = LtmMemory("nul", settings=engine, k=10)
    await memory.add(text("Lyon has traboules", source="guide"))

    async def where(filters: dict[str, object]) -> list[object]:
        return [r.content for r in (await memory.query("Lyon", filters=filters)).results]

    assert await where({"metadata.source": "gu\x00ide"}) == []
    assert await where({"content": {"contains": "\x00"}}) == []
    assert await where({"role": {"in": ["memory\x00"]}}) == []
    assert await where({"metadata.source": {"ne": "\x00"}}) == ["Lyon has traboules"]
    assert await where({"metadata.source": {"nin": ["\x00", "web"]}}) == ["Lyon has traboules"]
    assert await where({"NOT": {"metadata.source": {"in": ["guide", "\x00"]}}}) == []
    assert await where({"metadata.source": {"gt": "gu\x00z"}}) == ["Lyon has traboules"]  # "guide" > "gu"
    assert await where({"metadata.source": {"lt": "guide\x00"}}) == ["Lyon has traboules"]  # "guide" <= "guide"


@pytest.mark.asyncio
async def test_json_content_that_json_cannot_hold_is_refused_with_invalid_input(tmp_path: Path) -> None:
    memory = LtmMemory("json", settings=Settings(storage_dir=tmp_path, embedding="hash"))
    cyclic: dict[str, object] = {"name": "loop"}
    cyclic["self"] = cyclic
    for content in ({"when": datetime(2024, 5, 1, tzinfo=timezone.utc)}, cyclic):
        with pytest.raises(InvalidInput, match="JSON content must hold JSON values"):
            await memory.add(MemoryContent(content=content, mime_type=MemoryMimeType.JSON))
    with pytest.raises(InvalidInput, match="query is a str or a MemoryContent"):
        await memory.query(5)  # type: ignore[arg-type]
    assert memory.store.count() == 0


@pytest.mark.asyncio
async def test_component_config_round_trip_keeps_no_secret(tmp_path: Path) -> None:
    settings = Settings(
        storage_dir=tmp_path / "storage",
        embedding="hash",
        openai_api_key="sk-secret-key",
        redis_url="redis://:hunter2@localhost:1/0",
    )
    memory = LtmMemory("team", settings=settings, k=3, score_threshold=0.25)
    await memory.add(text("The deploy runs every Friday"))
    config = memory.dump_component()
    assert isinstance(config, ComponentModel)
    assert config.provider == "ltm.integrations.autogen.LtmMemory" and config.component_type == "memory"
    dumped = json.dumps(config.model_dump(mode="json"))
    assert "sk-secret-key" not in dumped and "hunter2" not in dumped
    assert config.config["settings"] == {"embedding": "hash", "storage_dir": str(tmp_path / "storage")}

    for url in (
        "https://example.openai.azure.com/openai/v1?api-version=2024-06-01&api-key=azure-secret-1",
        "https://proxy.example/v1?access_token=token-secret-2",
        "https://user:basic-secret-3@proxy.example/v1",
    ):
        leaky = LtmMemory("team", settings=settings.with_(openai_base_url=url))
        dumped = json.dumps(leaky.dump_component().model_dump(mode="json"))
        assert "secret" not in dumped and "openai_base_url" not in dumped  # read from the environment on load
    kept = LtmMemory("team", settings=settings.with_(openai_base_url="http://127.0.0.1:8000/v1?api-version=1"))
    assert kept.dump_component().config["settings"]["openai_base_url"] == "http://127.0.0.1:8000/v1?api-version=1"

    loaded = Memory.load_component(config)
    assert isinstance(loaded, LtmMemory)
    assert (loaded.name, loaded.dump_component().config) == ("team", config.config)
    assert [r.content for r in (await loaded.query("deploy Friday")).results] == ["The deploy runs every Friday"]
    with pytest.raises(ValueError):
        LtmMemory.load_component(
            {"provider": "ltm.integrations.autogen.LtmMemory", "config": {"namespace": "team", "k": 0}}
        )


def test_memories_survive_a_killed_process(tmp_path: Path) -> None:
    """A process adds a memory and is killed with SIGKILL right after ``add`` returns; a new process finds it."""
    root = tmp_path / "storage"
    child = textwrap.dedent(f"""
        import asyncio, os, signal
        from autogen_core.memory import MemoryContent
        from ltm.config import Settings
        from ltm.integrations.autogen import LtmMemory

        async def main() -> None:
            memory = LtmMemory("assistant", settings=Settings(storage_dir={str(root)!r}, embedding="hash"))
            await memory.add(MemoryContent(content="The staging database is on port 5433", mime_type="text/plain"))
            os.kill(os.getpid(), signal.SIGKILL)

        asyncio.run(main())
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()

    async def recall() -> list[object]:
        memory = LtmMemory("assistant", settings=Settings(storage_dir=root, embedding="hash"))
        return [r.content for r in (await memory.query("staging database port")).results]

    import asyncio

    assert asyncio.run(recall()) == ["The staging database is on port 5433"]


def test_the_docs_page_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "frameworks" / "autogen.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for i, block in enumerate(blocks):
        exec(compile(block, f"autogen.md#{i}", "exec"), {"__name__": "docs"})
    assert "The user prefers temperatures in Celsius" in capsys.readouterr().out
