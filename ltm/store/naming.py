"""Namespace and kind names mapped to safe directory names.

A namespace is free text chosen by callers ("UTUser1(Product Manager)", a user id, an email). Its
directory keeps the readable part (letters, digits, ``.``, ``_``, ``-``) and appends a hash of the full
name, so two names that sanitise alike never share a directory and nothing like ``../../etc`` can escape
the data root: separators and dots at the ends are gone before the path is built.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ltm.errors import InvalidInput

__all__ = ["check_kind", "namespace_dir", "safe_name"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_READABLE_MAX = 48


def safe_name(namespace: str) -> str:
    """A directory name for ``namespace``: its readable part plus ``-`` and 10 hex digits of its sha256."""
    if not isinstance(namespace, str) or not namespace.strip():
        raise InvalidInput(f"namespace must be a non-empty string (a role id, user id...), got {namespace!r}")
    if "\x00" in namespace:
        raise InvalidInput("namespace contains a NUL character; remove it")
    try:
        raw = namespace.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput("namespace contains an unpaired surrogate; pass valid Unicode text") from exc
    readable = _UNSAFE.sub("_", namespace).strip("._-")[:_READABLE_MAX].strip("._-") or "ns"
    return f"{readable}-{hashlib.sha256(raw).hexdigest()[:10]}"


def check_kind(kind: object) -> str:
    """``kind`` when it is a short lowercase word such as ``role``; InvalidInput otherwise."""
    if not isinstance(kind, str) or not _KIND.match(kind):
        raise InvalidInput(f"kind must be a short lowercase word like 'role' or 'user', got {kind!r}")
    return kind


def namespace_dir(root: Path, kind: str, namespace: str) -> Path:
    """``root/kind/safe_name(namespace)``; ``kind`` must be a short lowercase word such as ``role``."""
    check_kind(kind)
    path = Path(root) / kind / safe_name(namespace)
    resolved_root = (Path(root) / kind).resolve()
    if path.resolve().parent != resolved_root:  # defence in depth: safe_name already forbids this
        raise InvalidInput(f"namespace {namespace!r} maps outside the data root")
    return path
