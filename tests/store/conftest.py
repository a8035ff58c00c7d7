"""The store contract runs on every backend: ``settings`` here is parametrised over the embedded engine
(SQLite + FAISS), PostgreSQL + pgvector (a private server, see tests/support/postgres.py), and PostgreSQL with
the message and history tables hash-partitioned by namespace (``Settings.store_partitions``, a second database
on the same server).

A test about one engine's own machinery (snapshot files, SQLite pragmas, FAISS compaction) says so with
``@pytest.mark.embedded_only``; it runs once, on the embedded engine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ltm.config import Settings
from tests.support.postgres import PARTITIONS

# LTM_TEST_BACKENDS narrows the engines (scripts/frameworks/metagpt runs the contract at MetaGPT's pins, where the
# PostgreSQL client is not installed); CI's main run always has both.
BACKENDS = os.environ.get("LTM_TEST_BACKENDS", "embedded,postgres,partitioned").split(",")

# The PostgreSQL engine's own tests (pg/test_*.py) import its client at module level: without the ``pg`` extra
# they are not collected, and only when PostgreSQL was narrowed away (a missing client in CI's main run, where
# BACKENDS holds postgres, stays a collection error).
collect_ignore_glob = [] if "postgres" in BACKENDS else ["pg/test_*.py"]


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings on a temp data root with the hash embedding; on PostgreSQL, ``store_url`` is the private
    server (emptied before each test)."""
    base = Settings(storage_dir=tmp_path / "storage", embedding="hash")
    if request.param == "embedded":
        return base
    if request.node.get_closest_marker("embedded_only"):
        pytest.skip("about the embedded engine's own files")
    if request.param == "partitioned":
        return base.with_(store_url=request.getfixturevalue("pg_partitioned_url"), store_partitions=PARTITIONS)
    return base.with_(store_url=request.getfixturevalue("pg_url"))


@pytest.fixture
def pg_rows(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The (sql, params) of every statement the PostgreSQL backend runs through ``_rows`` from now on (each is
    still run). Imported here, not at the top: the MetaGPT run has no PostgreSQL client."""
    from ltm.store.pg.backend import PgBackend

    seen: list[tuple[str, Any]] = []
    original = PgBackend._rows

    def spy(self: PgBackend, sql: str, params: Any) -> list[Any]:
        seen.append((sql, params))
        return original(self, sql, params)

    monkeypatch.setattr(PgBackend, "_rows", spy)
    return seen
