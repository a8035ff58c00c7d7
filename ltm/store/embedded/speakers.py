"""What the embedded engine's hybrid ranking reads of its candidates for :mod:`ltm.store.search.speakers` and the
sitting share: each one's time and names, from the log."""

from __future__ import annotations

from collections.abc import Sequence

from ltm.store.embedded.log import MessageLog

__all__ = ["message_facts"]


def message_facts(log: MessageLog, seqs: Sequence[int]) -> tuple[dict[int, float], dict[int, tuple[str, ...]]]:
    """({seq: created_at}, {seq: (metadata speaker, sent_from, role)}) of the live messages among ``seqs`` (the
    fusion's candidates: what the neighbours' gap and the sitting read, and the names a question can name), in one
    read."""
    sql = (
        "SELECT seq, created_at, json_extract(metadata, '$.speaker'), sent_from, role FROM messages "
        "WHERE seq IN ({marks})"
    )
    times: dict[int, float] = {}
    names: dict[int, tuple[str, ...]] = {}
    for seq, at, *held in log.where_in(sql, list(seqs)):
        times[int(seq)] = float(at)
        names[int(seq)] = tuple(str(v) for v in held if v)
    return times, names
