"""Who a question names: hybrid search favours what the people it names said.

"What did Kevin eat on New Year's Eve?" is answered by Kevin's turns far more often than by the other person's
(on REALTALK 9 in 10 of the evidence turns of a question naming a speaker are that speaker's). A candidate is
*spoken by a named person* when a word of one of its names (metadata ``speaker``, ``sent_from``, ``role``: what the
keyword index's *who* column holds) is a word of the query, so "Fahim" names "Fahim Khan". The fusion adds
``WEIGHTS["speaker"]`` to those candidates' scores (:func:`ltm.store.search.fusion.fuse`); a long query (a pasted
conversation, whose lines start with speaker names) gets none.

The same names are also taken *out of the dense query* (:func:`first_person`): stored turns are embedded as their
bare text ("I went for a run after the rain"), never with who said them, so "When did Fahim go for a run?"
embeds closer to them as "When did I go for a run?". A name in the query vector only pulls it towards other
messages that mention the name (greetings, the other person addressing them); docs/search.md#the-constants has
what it gained. The keyword side keeps the name: it matches the index's *who* column.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from ltm.store.search.fusion import LONG_QUERY_TERMS
from ltm.store.search.query import STOPWORDS, query_terms

__all__ = ["body_speakers", "dense_query", "first_person", "name_candidates", "spoken_by_named"]

_NAME = re.compile(r"\b(\w+)(?:'s|’s)?\b", re.UNICODE)
_PLURAL_I = re.compile(r"\bI(?:(?:\s*,\s*|\s+and\s+|\s+)I\b)+")
_PLURAL_MY = re.compile(r"\bmy(?:(?:\s*,\s*|\s+and\s+)my\b)+")
_REPEAT = re.compile(r"\b(I|my)(?:\s+\1\b)+")
_PLURAL = re.compile(r"\b(?:we|our)\b", re.IGNORECASE)
# A question about one named person speaks of them in the third person as well; in the first person it is nearer
# what they said (docs/search.md#the-constants). "her" is both "my" and "me": "my" (the same figures either way).
_THIRD_PERSON = [
    (re.compile(r"\b(?:he|she)\b", re.IGNORECASE), "I"),
    (re.compile(r"\b(?:his|her)\b", re.IGNORECASE), "my"),
    (re.compile(r"\bhim\b", re.IGNORECASE), "me"),
    (re.compile(r"\b(?:himself|herself)\b", re.IGNORECASE), "myself"),
]

NAME_ROWS = 8  # messages read per word by an engine's speaker_names (their names, in the stored case)


def spoken_by_named(query: str, speakers: Mapping[int, Iterable[str]], terms: Iterable[str] | None = None) -> set[int]:
    """The seqs of ``speakers`` ({seq: its names}) one of whose names shares a word with ``query`` (``terms``: its
    :func:`~ltm.store.search.query.query_terms` when the caller has them)."""
    words = frozenset(query_terms(query) if terms is None else terms)
    if not words:
        return set()
    return {seq for seq, names in speakers.items() if not words.isdisjoint(_name_words(tuple(names)))}


@functools.lru_cache(maxsize=4096)
def _name_words(names: tuple[str, ...]) -> frozenset[str]:
    """The words of a candidate's names as :func:`spoken_by_named` matches them: one answer per distinct tuple,
    since a namespace's messages share a few speakers."""
    return frozenset(w for name in names if name for w in query_terms(name))


def body_speakers(data: Mapping[str, Any]) -> tuple[str, ...]:
    """A stored message body's names (the body's parsed JSON), as the embedded engine reads them from the columns
    (:meth:`ltm.store.embedded.log.MessageLog.candidates`)."""
    speaker = (data.get("metadata") or {}).get("speaker")
    return tuple(str(v) for v in (speaker, data.get("sent_from"), data.get("role")) if v)


def first_person(query: str, names: Collection[str], *, any_case: bool = False) -> str:
    """The text a question's dense vector is computed from: each word of ``query`` that is one of ``names`` (lower
    case) becomes "I" ("Fahim's" becomes "my"); two named people together become "we" / "our". When no "we" / "our"
    results, the third-person pronouns become first-person too (he / she -> I, his / her -> my, him -> me).
    Only a capitalised word counts unless ``any_case`` (a question typed all in lower case: see :func:`dense_query`).
    A long query (a pasted conversation: see :func:`spoken_by_named`) is left alone, and so is a query that would be
    left with no other word. ``query`` itself when nothing changes."""
    if not names or len(query_terms(query)) > LONG_QUERY_TERMS:
        return query
    changed = False

    def person(match: re.Match[str]) -> str:
        nonlocal changed
        word = match.group(1)
        if not (any_case or word[:1].isupper()) or word.lower() not in names:
            return match.group(0)
        changed = True
        return "my" if len(match.group(0)) > len(word) else "I"

    text = _NAME.sub(person, query)
    if not changed:
        return query
    text = _REPEAT.sub(r"\1", text)  # "Fahim Khan" -> "I I" -> "I"
    text = _PLURAL_MY.sub("our", _PLURAL_I.sub("we", text))  # "Fahim and Akib" -> "we"
    rest = set(query_terms(text)) - {"i", "we", "my", "our"}
    if not rest:
        return query
    if not _PLURAL.search(text):  # one person: their pronouns too ("... with his girlfriend" -> "my girlfriend")
        for pattern, word in _THIRD_PERSON:
            text = pattern.sub(word, text)
    return text


MAX_NAME_WORDS = 8  # words of a question looked up as names (one indexed lookup each)


def name_candidates(query: str) -> tuple[list[str], bool]:
    """(the lower-cased words of a question that could be a speaker's name, whether it is typed all in lower case).

    Normally its capitalised words ("What did the architect decide?" keeps *architect*: a lower-case word is a
    role, not a name); in a question without a capital letter, every word. Stopwords, one-letter words and
    words past :data:`MAX_NAME_WORDS` are not; none for a long query (a pasted conversation)."""
    if len(query_terms(query)) > LONG_QUERY_TERMS:
        return [], False
    lower = not any(ch.isupper() for ch in query)
    words = (w for w in re.findall(r"\w+", query) if (lower or w[:1].isupper()) and len(w) > 1 and w.isalnum())
    return list(dict.fromkeys(w.lower() for w in words if w.lower() not in STOPWORDS))[:MAX_NAME_WORDS], lower


def dense_query(query: str, speaker_names: Callable[[list[str]], Mapping[str, Collection[str]]]) -> str:
    """The text to embed for ``query``'s dense side: :func:`first_person` of the names among its
    :func:`name_candidates` that ``speaker_names`` (the store's lookup: {word: stored names holding it}) finds.
    In a question typed all in lower case a word counts only where a stored name holds it capitalised
    ("kevin" for a speaker stored as "Kevin", never for a role stored as "user")."""
    words, lower = name_candidates(query)
    if not words:
        return query
    found = speaker_names(words)
    if lower:
        names = frozenset(
            w
            for w, held in found.items()
            if any(t[:1].isupper() and t.lower() == w for name in held for t in re.findall(r"\w+", name))
        )
    else:
        names = frozenset(found)
    return first_person(query, names, any_case=lower)
