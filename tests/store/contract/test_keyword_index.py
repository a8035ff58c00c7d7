"""The keyword index (schema 3): porter stemming, who spoke and when, and the migration of schema-2 stores."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.store.embedded.manifest import SCHEMA_VERSION

_DAY = datetime(2024, 1, 5, 18, 30, tzinfo=timezone.utc).timestamp()


def _turns() -> list[Message]:
    return [
        Message(content="My hobby is restoring old bicycles", role="Kate", sent_from="Kate", created_at=_DAY),
        Message(
            content="We moved the piano upstairs yesterday",
            role="Elise",
            sent_from="Elise",
            created_at=_DAY + 86_400 * 3,
        ),
        Message(content="Lunch was fine", role="Kate", sent_from="Kate", created_at=_DAY + 86_400 * 40),
    ]


def _keyword(store: MemoryStorage, query: str) -> list[str]:
    return [h.message.content for h in store.search(query, k=3, mode="keyword")]


def test_keyword_search_stems_and_knows_speakers_and_days(settings: Settings) -> None:
    with MemoryStorage("chat", settings=settings) as store:
        store.add_batch(_turns())
        assert _keyword(store, "hobbies")[0] == "My hobby is restoring old bicycles"  # hobbies -> hobbi <- hobby
        assert _keyword(store, "moving pianos")[0] == "We moved the piano upstairs yesterday"
        assert _keyword(store, "Elise") == ["We moved the piano upstairs yesterday"]  # who spoke
        assert _keyword(store, "January 5 2024")[0] == "My hobby is restoring old bicycles"  # when (UTC day)
        assert _keyword(store, "February")[0] == "Lunch was fine"


@pytest.mark.embedded_only
@pytest.mark.parametrize("manifest_lost", [False, True])
def test_schema_2_store_gets_its_keyword_index_rebuilt_on_open(settings: Settings, manifest_lost: bool) -> None:
    """A namespace written before stemming (unicode61 only, no dates) is migrated in place on open: the keyword
    index is rebuilt from the stored messages; the messages and their vectors are untouched. Also when its
    manifest.json was lost and is rebuilt from the log (which then says the current schema)."""
    with MemoryStorage("old", settings=settings) as store:
        store.add_batch(_turns())
        directory = store.path
        assert directory is not None
        before = [(m.id, v.tolist()) for m, v in store.export(with_vectors=True) if v is not None]
    db = sqlite3.connect(directory / "memory.sqlite")  # what schema 2 held: an unstemmed index without days
    with db:
        db.execute("DROP TABLE fts")
        db.execute(
            "CREATE VIRTUAL TABLE fts USING fts5(content, who, at, context, tokenize='unicode61 remove_diacritics 2')"
        )
        db.executemany(
            "INSERT INTO fts(rowid, content, who, at, context) VALUES (?, ?, ?, '', '')",
            db.execute("SELECT seq, json_extract(body, '$.content'), role FROM messages").fetchall(),
        )
    db.close()
    manifest = json.loads((directory / "manifest.json").read_text())
    (directory / "manifest.json").write_text(json.dumps({**manifest, "schema_version": 2}))
    if manifest_lost:
        (directory / "manifest.json").unlink()

    with MemoryStorage("old", settings=settings) as store:
        assert json.loads((directory / "manifest.json").read_text())["schema_version"] == SCHEMA_VERSION
        assert _keyword(store, "hobbies")[0] == "My hobby is restoring old bicycles"
        assert _keyword(store, "January 5 2024")[0] == "My hobby is restoring old bicycles"
        assert [(m.id, v.tolist()) for m, v in store.export(with_vectors=True) if v is not None] == before
        assert store.count() == 3
        store.add(Message(content="The hobbies club meets on Fridays", role="Elise", created_at=_DAY))
        assert len(_keyword(store, "hobby")) == 2  # new rows go into the rebuilt index
