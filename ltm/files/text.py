"""Text helpers shared by MemoryFS and its merged view: folder listings, grep, exact-once edits, path clashes."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable

from ltm.errors import InvalidInput, NotFound
from ltm.files.records import GrepMatch

__all__ = ["collisions", "compile_regex", "grep_text", "list_entries", "replace_once"]


def list_entries(paths: Iterable[str], folder: str, missing: Callable[[str], str]) -> list[str]:
    """Names directly under ``folder`` among ``paths`` (folders end with ``/``); NotFound when none."""
    prefix = folder + "/" if folder else ""
    names = {
        p[len(prefix) :].split("/", 1)[0] + ("/" if "/" in p[len(prefix) :] else "")
        for p in paths
        if p.startswith(prefix)
    }
    if not names and folder:
        raise NotFound(missing(folder))
    return sorted(names)


def collisions(path: str, heads: Iterable[str]) -> list[str]:
    """Why a new file at ``path`` cannot sit beside ``heads``: file/folder clashes and case-only differences."""
    found = []
    parts = path.split("/")
    for i in range(1, len(parts)):
        if "/".join(parts[:i]) in heads:
            found.append(f"{'/'.join(parts[:i])} is a file, so it cannot also be a folder; choose another path")
    if any(p.startswith(path + "/") for p in heads):
        found.append(f"{path} is a folder; write a file inside it or choose another name")
    same = [p for p in heads if p.lower() == path.lower()]
    if same:
        found.append(f"{same[0]} exists and differs only in case; edit it instead (exported folders would clash)")
    return found


def replace_once(path: str, text: str, old: str, new: str) -> str:
    """``text`` with ``old`` replaced by ``new``; InvalidInput unless ``old`` occurs exactly once."""
    if not isinstance(old, str) or not isinstance(new, str) or not old:
        raise InvalidInput("edit needs a non-empty 'old' text and a 'new' text (both str)")
    count = text.count(old)
    if count == 0:
        raise InvalidInput(f"the text to replace does not occur in {path}; read the file and copy the exact text")
    if count > 1:
        raise InvalidInput(
            f"the text to replace occurs {count} times in {path}; include more surrounding text so it occurs once"
        )
    return text.replace(old, new, 1)


def compile_regex(regex: str, ignore_case: bool) -> re.Pattern[str]:
    """``regex`` compiled, or InvalidInput saying it does not compile."""
    try:
        return re.compile(regex, re.IGNORECASE if ignore_case else 0)
    except (re.error, TypeError) as exc:
        raise InvalidInput(f"invalid regular expression {regex!r}: {exc}; escape special characters with \\") from exc


def grep_text(pattern: re.Pattern[str], path: str, text: str, scope: str) -> list[GrepMatch]:
    """The lines of ``text`` that ``pattern`` matches, numbered from 1."""
    return [GrepMatch(path, n, line, scope) for n, line in enumerate(text.splitlines(), 1) if pattern.search(line)]


def unified_diff(changes: Iterable[tuple[str, str | None, str | None]]) -> str:
    """One unified diff over ``(path, before, after)`` triples; None is an absent file (a creation, a deletion)."""
    out: list[str] = []
    for path, before, after in changes:
        out += difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            (after or "").splitlines(keepends=True),
            f"a/{path}",
            f"b/{path}" if after is not None else "/dev/null",
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def missing_message(path: str, known: list[str], scope: str) -> str:
    """The error text for a file that is not there, with the closest names (or the files that are)."""
    close = difflib.get_close_matches(path, known, n=3)
    hint = f"; did you mean {close}?" if close else f"; files: {known[:20] or 'none yet'}"
    return f"{path} does not exist in {scope}{hint}"
