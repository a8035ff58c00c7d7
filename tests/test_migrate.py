"""``ltm migrate`` between a data root and a real PostgreSQL (the private pgserver), both ways."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.cli import main
from ltm.errors import InvalidInput
from ltm.store import scoped

pytestmark = pytest.mark.slow


def _fill(settings: Settings) -> dict[str, list[Message]]:
    made = {
        "big": [
            Message(f"note {i} about topic{i % 37} and word{i}", role="user", metadata={"i": i}) for i in range(2300)
        ],  # more than two pages of 1,000
        "small": [Message(f"small {i}", role="assistant") for i in range(7)],
    }
    for name, messages in made.items():
        with MemoryStorage(name, kind="role", settings=settings) as store:
            store.add_batch(messages)
    return made


def _vectors(settings: Settings, name: str) -> dict[str, np.ndarray]:
    with MemoryStorage(name, kind="role", settings=settings) as store:
        return {m.id: v for m, v in store.export(with_vectors=True) if v is not None}


def test_migrate_to_postgres_and_back(tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    embedded = Settings(storage_dir=tmp_path / "a", embedding="hash")
    made = _fill(embedded)
    on_pg = embedded.with_(store_url=pg_url)
    with MemoryStorage("big", kind="role", settings=on_pg) as partial:  # an interrupted earlier run
        partial.add_batch(
            made["big"][:500], vectors=np.stack([_vectors(embedded, "big")[m.id] for m in made["big"][:500]])
        )

    assert main(["migrate", "--from", str(tmp_path / "a"), "--to", pg_url, "--embedding", "hash"]) == 0
    out = capsys.readouterr().out
    assert "role/big: 2,300 messages (1,800 new), vectors carried, 5 sampled searches verified" in out
    assert "role/small: 7 messages (7 new)" in out and "migrated 2 namespace(s)" in out
    before = _vectors(embedded, "big")
    after = _vectors(on_pg, "big")
    assert set(after) == set(before)
    assert max(float(np.abs(before[k] - after[k]).max()) for k in before) < 1e-6  # the very same vectors
    with MemoryStorage("big", kind="role", settings=on_pg) as store:
        assert [m.id for m in store.recent(3)] == [m.id for m in made["big"][-3:]]  # insertion order kept
        assert store.get(made["big"][42].id).metadata == {"i": 42}

    assert main(["migrate", "--from", str(tmp_path / "a"), "--to", pg_url, "--embedding", "hash"]) == 0
    assert "role/big: 2,300 messages (0 new)" in capsys.readouterr().out  # again: resumes, adds nothing

    back = Settings(storage_dir=tmp_path / "b", embedding="hash")
    assert main(["migrate", "--from", pg_url, "--to", str(tmp_path / "b"), "--embedding", "hash"]) == 0
    assert "migrated 2 namespace(s)" in capsys.readouterr().out
    returned = _vectors(back, "big")
    assert max(float(np.abs(before[k] - returned[k]).max()) for k in before) < 1e-3  # float16 on disk again
    with MemoryStorage("small", kind="role", settings=back) as store:
        assert [m.content for m in store.recent(10)] == [m.content for m in made["small"]]


def test_migrate_needs_one_side_of_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--from", str(tmp_path), "--to", str(tmp_path / "x")]) == 1
    assert "postgresql://" in capsys.readouterr().err
    with pytest.raises(InvalidInput):
        from ltm.cli.migrate import _sources

        list(_sources(str(tmp_path / "missing"), None))


def test_migrate_carries_scopes_expiry_and_history_both_ways(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The document API's data crosses engines: scope and expiry filters answer the same, the audit trail (events,
    old / new values, times) is the source's, and a second run leaves one trail, not two."""
    embedded = Settings(storage_dir=tmp_path / "a", embedding="hash")
    later = time.time() + 3600
    with MemoryStorage("team", settings=embedded) as store:
        store.add_batch(
            [
                scoped(Message("alice reported the login bug", id="t1"), user_id="u1", run_id="r1"),
                scoped(Message("bob fixed the hashing", id="t2"), user_id="u2", run_id="r1", expires_at=later),
                Message("a note to delete", id="t3"),
            ]
        )
        store.update("t1", content="alice reported the login bug twice")
        store.delete("t3")
        trail = {i: [(e.event, e.old, e.new, e.at) for e in store.history(i)] for i in ("t1", "t2", "t3")}
    assert [e[0] for e in trail["t1"]] == ["ADD", "UPDATE"] and [e[0] for e in trail["t3"]] == ["ADD", "DELETE"]

    for _ in range(2):  # the second run must not double the trail
        assert main(["migrate", "--from", str(tmp_path / "a"), "--to", pg_url, "--embedding", "hash"]) == 0
        assert "role/team: 2 messages" in capsys.readouterr().out
    on_pg = embedded.with_(store_url=pg_url)
    with MemoryStorage("team", settings=on_pg) as store:
        assert {i: [(e.event, e.old, e.new, e.at) for e in store.history(i)] for i in trail} == trail
        assert [m.id for m in store.list({"run_id": "r1", "user_id": {"ne": "u1"}}).messages] == ["t2"]
        assert store.count({"expires_at": {"gt": later - 1}}) == 1

    assert main(["migrate", "--from", pg_url, "--to", str(tmp_path / "b"), "--embedding", "hash"]) == 0
    assert (
        "role/team: 2 messages (2 new), vectors carried, 2 sampled searches verified, 5 history events"
        in capsys.readouterr().out
    )  # t1: ADD UPDATE, t2: ADD, t3: ADD DELETE
    with MemoryStorage("team", settings=Settings(storage_dir=tmp_path / "b", embedding="hash")) as back:
        assert {i: [(e.event, e.old, e.new, e.at) for e in back.history(i)] for i in trail} == trail
        assert [m.id for m in back.list({"user_id": "u1"}).messages] == ["t1"]
