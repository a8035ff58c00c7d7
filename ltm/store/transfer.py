"""Export / import as JSON Lines: the portable form of a namespace, for moving memories between machines.

One line per message: the message's own JSON (``Message.to_dict``), plus, when vectors are exported,
``"embedding"`` (its stored vector, 7 decimals) and ``"embedding_model"``. This is the format ``ltm export``
and ``ltm import`` have always written, so old files still load. On import a vector is reused only when its
model is the store's model (anything else is re-embedded), and reading a line never imports or runs code
(``Message.load`` builds data only).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

import numpy as np

from ltm.errors import InvalidInput
from ltm.message import Message

__all__ = ["read_lines", "write_lines"]


def write_lines(items: Iterable[tuple[Message, np.ndarray | None]], out: TextIO, model: str) -> int:
    """Write each (message, vector or None) as one line; how many were written."""
    n = 0
    for message, vector in items:
        data: dict[str, Any] = message.to_dict()
        if vector is not None:
            data["embedding"] = [round(float(x), 7) for x in vector]
            data["embedding_model"] = model
        out.write(json.dumps(data, ensure_ascii=False) + "\n")
        n += 1
    return n


def read_lines(stream: Iterable[str], model: str) -> Iterator[tuple[Message, list[float] | None]]:
    """(message, vector when it was made by ``model``) per non-blank line; InvalidInput names the line."""
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(
                f"line {number} is not JSON ({exc}); an ltm export has one message object per line"
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("content"), str):
            raise InvalidInput(f"line {number} is not a message of an ltm export (an object with a 'content' text)")
        vector = data.pop("embedding", None)
        made_by = data.pop("embedding_model", None)
        try:
            message = Message.load(data)
        except InvalidInput as exc:
            raise InvalidInput(f"line {number}: {exc}") from exc
        if vector is not None and not (isinstance(vector, list) and all(isinstance(x, int | float) for x in vector)):
            raise InvalidInput(f"line {number}: 'embedding' must be a list of numbers")
        yield message, (vector if made_by == model else None)
