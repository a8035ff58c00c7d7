"""YAML front matter of Markdown memory files (``SKILL.md``): the one place that finds and reads it.

A file has front matter when its first line is ``---`` and a later line is ``---`` too; the lines between are
YAML, what follows the closing line is the body. Validation (:mod:`ltm.files.validate`), chunking for search
(:mod:`ltm.files.index`) and the prompts of ``remember`` (:mod:`ltm.files.llm`) all split files here, so they
agree on where a skill's description ends and its instructions begin.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["FENCE", "front_matter", "opens_front_matter", "split_front_matter"]

FENCE = "---"


def opens_front_matter(text: str) -> bool:
    """Whether the first line of ``text`` is the opening ``---`` (closed or not)."""
    first = text.split("\n", 1)[0]
    return first.strip() == FENCE


def split_front_matter(text: str) -> tuple[str | None, str]:
    """``(yaml, body)``: the text between the opening and closing ``---`` lines, and all that follows the
    closing line (line endings kept, so ``yaml`` and ``body`` hold every character but the two fences).

    ``(None, text)`` when ``text`` has no front matter: no opening line, or an opening line never closed
    (:func:`opens_front_matter` tells the two apart).
    """
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        return None, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == FENCE), None)
    if end is None:
        return None, text
    return "".join(lines[1:end]), "".join(lines[end + 1 :])


def front_matter(text: str) -> dict[str, Any] | None:
    """The front matter of ``text`` as a mapping; None when there is none or it is not a valid YAML mapping.

    Loading is ``yaml.safe_load``: reading a memory file never constructs objects or runs code.
    """
    raw, _ = split_front_matter(text)
    if raw is None:
        return None
    try:
        meta = yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError):
        return None
    return meta if isinstance(meta, dict) else None
