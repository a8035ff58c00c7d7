"""Conversation turns: how to store a dialogue so search finds the right turn.

Pass each turn as a :class:`~ltm.message.Message` whose ``metadata`` says who spoke and when::

    Message(content="I'm flying to Lisbon on Friday", role="user",
            metadata={"speaker": "Alice", "session": "session 3", "date": "2023-05-08"})

then ``storage.add_batch(with_context(turns))``. The keyword index then holds, besides the words of the
turn, the speaker (``who``), the session and date (``at``) and, from :func:`with_context`, the neighbouring
turns (``context``, weighted lowest): so "when did Alice mention her trip" reaches the turn even if it
says "I" and not "Alice". The dense vector stays the embedding of the turn's own content, so
``search_similar`` / ``find_news`` keep comparing like with like.
"""

from __future__ import annotations

from collections.abc import Sequence

from ltm.message import Message

__all__ = ["with_context"]


def with_context(turns: Sequence[Message], window: int = 1) -> list[Message]:
    """Copies of ``turns`` with ``metadata["context"]`` set to the ``window`` turns before and after each one
    (as "speaker: content" lines). The caller's messages are not mutated."""
    out: list[Message] = []
    for i, turn in enumerate(turns):
        near = [*turns[max(0, i - window):i], *turns[i + 1:i + 1 + window]]
        lines = [f"{m.metadata.get('speaker') or m.sent_from or m.role}: {m.content}" for m in near]
        copy = turn.model_copy(deep=True)
        copy.metadata["context"] = "\n".join(lines)
        out.append(copy)
    return out
