"""A Role keeps its code and remembers on a remote server: only the line that builds its storage changes."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from ltm import LongTermMemory, Message, Settings, UserRequirement
from ltm.agents import Environment, Role
from ltm.client import RemoteStorage
from ltm.demo_team import WriteCode, WriteDesign, WritePRD
from ltm.errors import BackendUnavailable, Forbidden, InvalidInput, NotFound
from tests.support.service import ServiceThread


def _team(settings: Settings, url: str, key: str) -> tuple[Environment, list[Role]]:
    def memory() -> LongTermMemory:
        return LongTermMemory(memory_storage=RemoteStorage(url=url, api_key=key))  # the one changed line

    roles = [
        Role(
            "Alice", "Product Manager", watch={UserRequirement}, action=WritePRD(), settings=settings, memory=memory()
        ),
        Role("Bob", "Architect", watch={WritePRD}, action=WriteDesign(), settings=settings, memory=memory()),
        Role("Charlie", "Engineer", watch={WriteDesign}, action=WriteCode(), settings=settings, memory=memory()),
    ]
    return Environment(roles), roles


def test_team_remembers_on_the_server_across_a_restart(server: ServiceThread, tmp_path: Path) -> None:
    key, _ = server.state.keys.create(["*"])
    local = Settings(storage_dir=tmp_path / "client-side", embedding="hash")
    requirement = Message(
        "Write a CLI snake game that saves high scores", role="Human", cause_by=UserRequirement, sent_from="Human"
    )
    env, roles = _team(local, server.url, key)
    env.publish_message(requirement)
    env.run()
    assert [m.cause_by.rsplit(".", 1)[-1] for m in env.history[1:]] == ["WritePRD", "WriteDesign", "WriteCode"]
    assert {r.name: r.memory.memory_storage.count() for r in roles} == {"Alice": 1, "Bob": 1, "Charlie": 1}
    env.close()

    env, roles = _team(local, server.url, key)  # a restart of the agents: the memory is on the server
    assert [len(r.recovered) for r in roles] == [1, 1, 1]
    env.publish_message(Message(requirement.content, role="Human", cause_by=UserRequirement, sent_from="Human"))
    env.run()
    assert len(env.history) == 1 and roles[0].last_observed.old_news  # old news: no rework
    env.close()
    # the roles' memories are on the server only (Role's own "handled" log, ltm.agents, stays local)
    local_namespaces = [p.name for p in (tmp_path / "client-side" / "role").glob("*")]
    assert local_namespaces and all("_handled-" in name for name in local_namespaces)


def test_errors_are_the_library_errors(server: ServiceThread) -> None:
    key, _ = server.state.keys.create(["mine"])
    store = RemoteStorage("mine", url=server.url, api_key=key)
    with pytest.raises(NotFound):
        store.get("missing")
    with pytest.raises(InvalidInput):
        store.add(Message(""))
    with pytest.raises(Forbidden):
        RemoteStorage("theirs", url=server.url, api_key=key).count()
    assert "ltm_" not in repr(store) and server.url not in repr(store)
    store.close()
    assert store.add(Message("used again after close")) is True  # reconnects, as MemoryStorage reopens
    store.close()


def test_unreachable_server_is_backend_unavailable(server: ServiceThread) -> None:
    store = RemoteStorage("x", url="http://127.0.0.1:9", timeout=2)  # the discard port: nothing listens
    with pytest.raises(BackendUnavailable):
        store.count()

    async def run() -> None:
        with pytest.raises(BackendUnavailable):
            await store.asearch("anything")

    asyncio.run(run())
    store.close()


def test_readme_client_example_runs(server: ServiceThread, capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "service.md").read_text()
    section = page[page.index("## The Python client") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)  # the block test_docs_examples skips, naming this test
    assert block is not None
    key, _ = server.state.keys.create(["team-a/*"])
    exec(compile(block.group(1), "docs/service.md", "exec"), {"url": server.url, "key": key})
    assert capsys.readouterr().out.splitlines() == ["[]", "Ship the release on Friday after the load test"]
