"""``--as-of`` / ``--known-at``: the reading commands' times (what was valid then, what the memory held then)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_time_options", "times_from"]


def add_time_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--as-of`` and ``--known-at`` to a reading command."""
    parser.add_argument(
        "--as-of",
        metavar="TIME",
        help="what was valid at TIME (unix seconds or ISO 8601); default: what is valid now",
    )
    parser.add_argument(
        "--known-at",
        metavar="TIME",
        help="what the memory held at TIME, as it stood then (later writes and supersessions ignored)",
    )


def _time(raw: str | None) -> float | str | None:
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        return raw  # ISO 8601: the store reads it, or says how to write it


def times_from(args: argparse.Namespace) -> dict[str, Any]:
    """The ``as_of`` / ``known_at`` keyword arguments of a read, from the parsed options."""
    return {"as_of": _time(getattr(args, "as_of", None)), "known_at": _time(getattr(args, "known_at", None))}
