"""Path safety for MemoryFS: one canonical spelling per file, nothing that could escape a directory.

Memory paths are relative to the memory root (``AGENTS.md``, ``skills/pdf/SKILL.md``). They are exported to a
real directory and read by other agent harnesses, so a path accepted here must be safe on POSIX and Windows:
no traversal, no absolute or drive paths, no control characters, no names Windows reserves, bounded length.
"""

from __future__ import annotations

import re
import unicodedata

from ltm.errors import InvalidInput

__all__ = ["MAX_DEPTH", "MAX_PATH_CHARS", "MAX_SEGMENT_CHARS", "glob_regex", "normalize_dir", "normalize_path"]

MAX_PATH_CHARS = 512
MAX_SEGMENT_CHARS = 128
MAX_DEPTH = 16

# Windows refuses these as file names whatever the extension; an exported folder must open everywhere.
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
_FORBIDDEN_CHARS = set('<>:"|?*')
_EXAMPLE = "use a path relative to the memory root, such as 'AGENTS.md' or 'skills/pdf/SKILL.md'"


def normalize_path(path: str) -> str:
    """The canonical form of a file path, or InvalidInput saying what is wrong with it.

    Backslashes become ``/``, repeated slashes collapse and the text is Unicode-NFC, so one file has one
    spelling. Rejected: empty paths, absolute paths (``/x``, ``C:\\x``, ``\\\\host``), ``~``, ``.``/``..``
    segments, control characters, characters Windows forbids, reserved device names, names ending in a dot
    or space, and paths over the length and depth limits.
    """
    if not isinstance(path, str):
        raise InvalidInput(f"a memory path must be a string, got {type(path).__name__}; {_EXAMPLE}")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"path {path!r} has an unpaired surrogate; pass valid Unicode text") from exc
    text = unicodedata.normalize("NFC", path).replace("\\", "/").strip()
    if not text:
        raise InvalidInput(f"the path is empty; {_EXAMPLE}")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise InvalidInput(f"absolute path {path!r} is not allowed; {_EXAMPLE}")
    if text.startswith("~"):
        raise InvalidInput(f"home-relative path {path!r} is not allowed; {_EXAMPLE}")
    segments = [s for s in text.split("/") if s]
    if text.endswith("/"):
        raise InvalidInput(f"{path!r} names a directory; give a file path such as {text}notes.md")
    for segment in segments:
        _check_segment(path, segment)
    if len(segments) > MAX_DEPTH:
        raise InvalidInput(f"path {path!r} is {len(segments)} folders deep; keep it within {MAX_DEPTH}")
    result = "/".join(segments)
    if len(result) > MAX_PATH_CHARS:
        raise InvalidInput(f"path {path[:60]!r}... has {len(result)} characters; keep it under {MAX_PATH_CHARS}")
    return result


def normalize_dir(path: str) -> str:
    """The canonical form of a directory: ``""`` for the root (given as ``""``, ``"/"`` or ``"."``)."""
    if isinstance(path, str) and path.strip().replace("\\", "/") in ("", "/", ".", "./"):
        return ""
    text = path.replace("\\", "/").rstrip("/") if isinstance(path, str) else path
    return normalize_path(text)


def _check_segment(path: str, segment: str) -> None:
    if segment in (".", ".."):
        raise InvalidInput(f"path {path!r} contains {segment!r}; traversal is not allowed; {_EXAMPLE}")
    bad = sorted({c for c in segment if ord(c) < 32 or ord(c) == 127 or c in _FORBIDDEN_CHARS})
    if bad:
        raise InvalidInput(
            f"path {path!r} contains forbidden character(s) {bad!r}; use letters, digits, '-', '_', '.' and '/'"
        )
    if segment.endswith((".", " ")):
        raise InvalidInput(f"path segment {segment!r} ends with a dot or space, which Windows drops; rename it")
    if segment.split(".")[0].upper() in _RESERVED:
        raise InvalidInput(f"path segment {segment!r} is a reserved device name on Windows; rename it")
    if len(segment) > MAX_SEGMENT_CHARS:
        raise InvalidInput(f"path segment {segment[:40]!r}... is over {MAX_SEGMENT_CHARS} characters; shorten it")


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob over memory paths: ``*`` and ``?`` stay inside one folder, ``**/`` spans any folders.

    ``skills/*/SKILL.md`` matches every skill; ``**/*.md`` every Markdown file; a leading ``/`` is ignored
    (patterns are always relative to the memory root).
    """
    if not isinstance(pattern, str) or not pattern.strip():
        raise InvalidInput("the glob pattern is empty; try '**/*.md' or 'skills/*/SKILL.md'")
    text = pattern.replace("\\", "/").lstrip("/")
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif text.startswith("**", i):
            out.append(".*")
            i += 2
        elif text[i] == "*":
            out.append("[^/]*")
            i += 1
        elif text[i] == "?":
            out.append("[^/]")
            i += 1
        elif text[i] == "[":
            end = text.find("]", i + 1)
            if end == -1:
                raise InvalidInput(f"glob pattern {pattern!r} has an unclosed '['; close it or escape it as '[[]'")
            body = text[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(text[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")
