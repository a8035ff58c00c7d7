"""Who a question names: hybrid search favours what the people it names said (issue 15).

"What did Kevin eat on New Year's Eve?" is answered by Kevin's turns far more often than by the other person's
(on REALTALK 9 in 10 of the evidence turns of a question naming a speaker are that speaker's). A candidate is
*spoken by a named person* when a word of one of its names (metadata ``speaker``, ``sent_from``, ``role``: what the
keyword index's *who* column holds) is a word of the query, so "Fahim" names "Fahim Khan". The fusion adds
``WEIGHTS["speaker"]`` to those candidates' scores (:func:`ltm.store.fusion.fuse`); a long query (a pasted
conversation, whose lines start with speaker names) gets none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from ltm.store.log import MessageLog
from ltm.store.query import query_terms

__all__ = ["body_speakers", "message_speakers", "spoken_by_named"]


def spoken_by_named(query: str, speakers: Mapping[int, Iterable[str]]) -> set[int]:
    """The seqs of ``speakers`` ({seq: its names}) one of whose names shares a word with ``query``."""
    words = set(query_terms(query))
    if not words:
        return set()
    cache: dict[str, bool] = {}

    def named(name: str) -> bool:
        if name not in cache:
            cache[name] = bool(words & set(query_terms(name)))
        return cache[name]

    return {seq for seq, names in speakers.items() if any(named(n) for n in names if n)}


def message_speakers(log: MessageLog, seqs: Sequence[int]) -> dict[int, tuple[str, ...]]:
    """{seq: (metadata speaker, sent_from, role)} of the live messages among ``seqs`` (the fusion's candidates)."""
    sql = "SELECT seq, json_extract(metadata, '$.speaker'), sent_from, role FROM messages WHERE seq IN ({marks})"
    return {int(seq): tuple(str(v) for v in names if v) for seq, *names in log.where_in(sql, list(seqs))}


def body_speakers(body: str) -> tuple[str, ...]:
    """A stored message body's names, as :func:`message_speakers` reads them from the columns."""
    data = json.loads(body)
    speaker = (data.get("metadata") or {}).get("speaker")
    return tuple(str(v) for v in (speaker, data.get("sent_from"), data.get("role")) if v)
