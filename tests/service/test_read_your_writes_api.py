"""Read-your-writes through the service, on each engine (docs/RELIABILITY.md): a write the server acknowledged is
returned, under its id, by the next search of another client process and of a library process on the same storage;
a write a library process acknowledged is returned by the server's next search; a memory superseded or forgotten
through either is not returned by the next default search of the other."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ltm import Message, Settings
from ltm.client import RemoteStorage
from tests.support import store_worker
from tests.support.postgres import store_env
from tests.support.service import ServiceThread

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(params=["embedded", "postgres"])
def engine_settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    if request.param == "postgres":
        return settings.with_(store_url=request.getfixturevalue("pg_url"))
    return settings


@pytest.fixture
def served(engine_settings: Settings) -> Iterator[ServiceThread]:
    service = ServiceThread(engine_settings).start()
    yield service
    service.close()


def _process(settings: Settings, module: str, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTM_")}
    env.update(store_env(settings.store_url))
    return subprocess.Popen(
        [sys.executable, "-m", f"tests.support.{module}", *args],
        cwd=ROOT,
        text=True,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _ask(reader: subprocess.Popen[str], line: str) -> list[str]:
    assert reader.stdin is not None and reader.stdout is not None
    reader.stdin.write(line + "\n")
    reader.stdin.flush()
    answer = reader.stdout.readline()
    if not answer:
        raise AssertionError(f"a reader ended early: {reader.stderr.read() if reader.stderr else ''}")
    return answer.split()


def _ready(reader: subprocess.Popen[str]) -> subprocess.Popen[str]:
    assert reader.stdout is not None
    line = reader.stdout.readline()
    assert line.strip() == "READY", reader.stderr.read() if reader.stderr else line
    return reader


def test_the_service_reads_its_writes_and_those_of_every_other_process(
    served: ServiceThread, engine_settings: Settings
) -> None:
    settings, namespace, directory = engine_settings, "ryw", str(engine_settings.storage_dir)
    key, _ = served.state.keys.create(["*"])
    client = RemoteStorage(namespace, url=served.url, api_key=key)
    note = Message("ryw Alice lives in Paris")
    client.add(note)  # acknowledged by the server
    readers = [
        _ready(_process(settings, "remote_reader", served.url, key, namespace)),
        _ready(_process(settings, "store_worker", "read", directory, namespace)),
    ]
    try:
        for reader in readers:  # another client, and a library process on the same storage
            assert note.id in _ask(reader, f"search {note.content}")
        writer = _process(settings, "store_worker", "write", directory, namespace, "lib", "12")
        acked = store_worker.acked([writer])  # adds a library process acknowledged
        assert len(acked) == 12
        for message_id, content in list(acked.items())[::3]:
            assert message_id in [h.message.id for h in client.search(content, 5)]
            assert client.get(message_id).content == content
            assert message_id in _ask(readers[0], f"search {content}")
        newer = client.supersede(note.id, Message("ryw Alice lives in Berlin"), reason="moved")
        for reader in readers:
            seen = _ask(reader, f"search {note.content}")
            assert note.id not in seen and newer in seen, seen
        client.forget(newer, reason="asked to")
        for reader in readers:
            assert newer not in _ask(reader, "search ryw Alice lives in Berlin")
        other = Message("ryw Bob works at the mill")
        client.add(other)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.support.versions_worker",
                "supersede",
                directory,
                namespace,
                other.id,
                "ryw Bob works at the bakery",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("LTM_")}, **store_env(settings.store_url)},
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        replaced = done.stdout.split()[1]
        found = [h.message.id for h in client.search(other.content, 5)]
        assert other.id not in found and replaced in found, found
    finally:
        for reader in readers:
            if reader.stdin is not None:
                reader.stdin.close()
            reader.wait(timeout=60)
        client.close()
