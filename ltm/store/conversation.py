"""Conversation turns: how to store a dialogue so search finds the right turn.

Pass each turn as a :class:`~ltm.message.Message` whose ``metadata`` says who spoke and when::

    Message(content="I'm flying to Lisbon on Friday", role="user",
            metadata={"speaker": "Alice", "session": "session 3", "date": "2023-05-08"})

then ``storage.add_batch(with_context(turns))``. The keyword index then holds, besides the words of the
turn, the speaker (``who``), the session and date (``at``) and, from :func:`with_context`, the neighbouring
turns (``context``, weighted lowest): so "when did Alice mention her trip" reaches the turn even if it
says "I" and not "Alice". :func:`with_context` also sets ``metadata["embed_context"]``: the preceding
turn(s) plus "speaker: content". The store embeds it as the turn's second, *context* vector, which hybrid
search ranks as a third signal (short turns such as "I did, last week" get their topic from the turn
before). The main dense vector stays the embedding of the turn's own content, so ``search_similar`` /
``find_news`` keep comparing like with like. On the labelled conversation set (scripts/eval_retrieval.py)
this is what lifts hybrid above both dense and keyword search.
"""

from __future__ import annotations

from collections.abc import Sequence

from ltm.message import Message

__all__ = ["with_context"]


def with_context(turns: Sequence[Message], window: int = 1) -> list[Message]:
    """Copies of ``turns`` with ``metadata["context"]`` set to the ``window`` turns before and after each one
    (as "speaker: content" lines, for the keyword index) and ``metadata["embed_context"]`` to the turns
    before plus the turn itself as "speaker: content" (embedded as the context vector). The caller's
    messages are not mutated."""
    out: list[Message] = []
    for i, turn in enumerate(turns):
        near = [*turns[max(0, i - window):i], *turns[i + 1:i + 1 + window]]
        copy = turn.model_copy(deep=True)
        copy.metadata["context"] = "\n".join(_line(m) for m in near)
        copy.metadata["embed_context"] = "\n".join(_line(m) for m in [*turns[max(0, i - window):i], turn])
        out.append(copy)
    return out


def _line(message: Message) -> str:
    return f"{message.metadata.get('speaker') or message.sent_from or message.role}: {message.content}"
