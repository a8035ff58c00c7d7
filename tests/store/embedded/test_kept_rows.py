"""The rows a namespace keeps in RAM for its searches (ltm.store.embedded.kept_rows): each the row a read of SQLite
gives, none the indexes dropped (this handle's deletes, another connection's tombstones), and a hybrid search over
them reads no candidate row and ranks exactly as one that reads them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ltm import MemoryStorage, Message, Settings
from ltm.store.embedded.log import MessageLog
from ltm.store.embedded.mirror import IndexMirror
from tests.store.embedded.test_mirror import World, _rows, _write, world  # noqa: F401 (the fixture)
from tests.store.embedded.test_search_path import TURNS as SEARCH_PATH_TURNS
from tests.support.embedded import embedded_of

TURNS = SEARCH_PATH_TURNS[:24]  # the same chat, four times over
QUERIES = ["when did Fahim go for a run in the rain?", "what food does Elise like, sushi?", "pottery class", "boss"]


def _same(row: Any, read: Any) -> bool:
    """The kept row is the read one, its vector to the bit (a body is never kept)."""
    return (row.seq, row.created_at, row.names, row.content, row.body) == (
        read.seq,
        read.created_at,
        read.names,
        read.content,
        None,
    ) and row.vector.tobytes() == read.vector.tobytes()


@pytest.mark.embedded_only
def test_written_rows_are_kept_as_read_and_deletes_drop_them(world: World) -> None:  # noqa: F811
    directory, manifest, settings = world
    mine, theirs = MessageLog(directory / "memory.sqlite"), MessageLog(directory / "memory.sqlite")
    mirror = IndexMirror.open(directory, manifest, settings)
    mirror.ensure_dim(16)
    mirror.sync(mine, verify=True)
    rows = _rows("mine", 6)
    seqs = _write(mirror, mine, rows)
    kept = mirror.rows.found(seqs)
    assert sorted(kept) == seqs
    assert all(_same(kept[read.seq], read) for read in mine.candidates(seqs))

    with mirror.writing(mine) as write:  # this handle's delete
        write.remove(mine.delete(rows[0].id))
    with theirs.transaction(write=True):  # another process's: seen at the next sync
        gone = theirs.delete(rows[1].id)
        theirs.insert(_rows("theirs", 2, seed=1))
    mirror.sync(mine)
    assert sorted(mirror.rows.found(seqs)) == seqs[2:] and gone == seqs[1]
    assert len(mirror.rows) == 4  # another process's rows are read by the search that needs them


def _store(tmp_path: Path) -> MemoryStorage:
    store = MemoryStorage("talk", kind="t", settings=Settings(storage_dir=tmp_path, embedding="hash"))
    store.add_batch(
        [
            Message(f"{text} ({i})", role="user", sent_from=who, metadata={"speaker": who}, created_at=1.7e9 + 60 * i)
            for i, (who, text) in enumerate(TURNS)
        ]
    )
    return store


def _hits(store: MemoryStorage, query: str) -> list[tuple[str, float, tuple[str, ...], float | None]]:
    vector = store.embed_texts([query])[0]  # a given vector: every part of the search in line
    return [(h.message.id, h.score, h.signals, h.similarity) for h in store.search(query, k=5, vector=vector)]


def _row_reads(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    reads: list[list[int]] = []
    original = MessageLog.candidates

    def candidates(self: MessageLog, seqs: Any, **kwargs: Any) -> Any:
        reads.append(sorted(seqs))
        return original(self, seqs, **kwargs)

    monkeypatch.setattr(MessageLog, "candidates", candidates)
    return reads


@pytest.mark.embedded_only
def test_a_search_over_kept_rows_reads_none_and_ranks_as_one_that_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    reads = _row_reads(monkeypatch)
    kept = [_hits(store, q) for q in QUERIES]
    assert reads == [] and all(kept)
    rows = embedded_of(store)._require()[1].rows
    read = []
    for q in QUERIES:
        rows.clear()
        read.append(_hits(store, q))
    assert len(reads) == len(QUERIES)
    assert kept == read


@pytest.mark.embedded_only
def test_a_reopened_namespace_reads_each_candidate_once_then_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _store(tmp_path)
    written = [_hits(first, q) for q in QUERIES]
    first.close()
    store = MemoryStorage("talk", kind="t", settings=Settings(storage_dir=tmp_path, embedding="hash"))
    reads = _row_reads(monkeypatch)
    assert _hits(store, QUERIES[0]) == written[0] and len(reads) == 1
    assert _hits(store, QUERIES[0]) == written[0] and len(reads) == 1  # kept since
    doomed = written[1][0][0]
    log, mirror = embedded_of(store)._require()
    (seq,) = log.db.execute("SELECT seq FROM messages WHERE id = ?", (doomed,)).fetchone()
    assert mirror.rows.found([seq])
    store.delete(doomed)
    assert not mirror.rows.found([seq])
    assert doomed not in [h[0] for h in _hits(store, QUERIES[1])]


@pytest.mark.embedded_only
@pytest.mark.parametrize(
    ("content", "metadata"),
    [
        ('say "hi"\n\\ back\t', {"speaker": "Ann B"}),
        ("caf\u00e9 \u2028 \U0001f600 \u00a0end", {"speaker": 'Zo\u00eb "Z"'}),
        ("x", {}),
        ("a speaker that is no string", {"speaker": 7}),
        ('  {"content": 1}  ', {"nested": {"speaker": "not top-level"}, "speaker": None}),
    ],
)
def test_a_kept_row_is_the_row_a_read_gives(tmp_path: Path, content: str, metadata: dict[str, Any]) -> None:
    """Whatever the content and speaker: a row is kept as ``MessageLog.candidates`` reads it, or not kept (a speaker
    that is not a string), never kept otherwise."""
    store = MemoryStorage("odd", kind="t", settings=Settings(storage_dir=tmp_path, embedding="hash"))
    store.add_batch([Message(content, role="user", sent_from="Ann", metadata=metadata), Message("another turn")])
    log, mirror = embedded_of(store)._require()
    mirror.settle(log)  # an add may leave its rows for the next read to apply (writing(defer=True))
    kept = mirror.rows.found([1, 2])
    assert 2 in kept
    for read in log.candidates([1, 2]):
        assert read.seq not in kept or _same(kept[read.seq], read)
    speaker = metadata.get("speaker")
    assert (1 in kept) == (speaker is None or (isinstance(speaker, str) and "\x00" not in speaker))
