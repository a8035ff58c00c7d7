"""Value objects of MemoryFS: proposed changes, file versions, listings and hits, with their JSON encoding.

These are what MemoryFS stores in its key-value backend and hands back to callers. A :class:`Change` holds
one or more :class:`FileOp` applied together when approved (an import or a ``remember`` can touch several
files at once); a :class:`Version` is one entry of a file's history, kept forever so no edit loses anything.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar

from ltm.errors import InvalidInput, StoreCorrupted

__all__ = [
    "SCOPE_KINDS",
    "Change",
    "FileInfo",
    "FileOp",
    "GrepMatch",
    "MemoryView",
    "SearchHit",
    "Version",
    "check_scope",
    "sha256",
]

# Precedence of scopes in a merged view: an agent's file overrides a user's, which overrides an org's.
SCOPE_KINDS = ("agent", "user", "org")
_SCOPE = re.compile(r"^(agent|user|org):([^\s{}*?\[\]\\\x00-\x1f]{1,128})$")

ChangeStatus = Literal["pending", "applied", "rejected"]


def check_scope(scope: str) -> str:
    """``scope`` when it reads ``agent:<id>``, ``user:<id>`` or ``org:<id>``, else InvalidInput."""
    if not isinstance(scope, str) or not _SCOPE.match(scope):
        raise InvalidInput(
            f"scope {scope!r} must be 'agent:<id>', 'user:<id>' or 'org:<id>' with an id of 1-128 characters"
            " without spaces, braces, '*', '?', '[', ']' or backslashes (e.g. 'agent:email-assistant')"
        )
    return scope


def sha256(text: str) -> str:
    """Hex sha256 of ``text`` as UTF-8: lets a caller see whether two versions differ without reading both."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


_T = TypeVar("_T", bound="_Stored")


class _Stored:
    """JSON encoding of a record MemoryFS keeps in its KV backend; a record that cannot be read back raises
    ``StoreCorrupted`` naming what it was (``_what``), never a bare KeyError or TypeError."""

    _what: ClassVar[str]

    if TYPE_CHECKING:  # the dataclasses below give the real __init__

        def __init__(self, **fields: Any) -> None: ...

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)  # type: ignore[call-overload]

    @classmethod
    def from_json(cls: type[_T], raw: str) -> _T:
        try:
            data = json.loads(raw)
        except (TypeError, ValueError) as exc:
            raise StoreCorrupted(f"a stored {cls._what} is not JSON ({exc}); restore from an export") from exc
        if not isinstance(data, dict):
            raise StoreCorrupted(f"a stored {cls._what} is not a JSON object; restore from an export")
        try:
            return cls(**cls._fields(data))
        except (KeyError, TypeError) as exc:
            raise StoreCorrupted(f"a stored {cls._what} cannot be read ({exc}); restore from an export") from exc

    @classmethod
    def _fields(cls, data: dict[str, Any]) -> dict[str, Any]:
        """The constructor arguments from decoded JSON (nested records rebuilt)."""
        return data


@dataclass(frozen=True)
class FileOp:
    """One file change inside a :class:`Change`.

    ``base_version`` is the file's version when the change was proposed (``None``: the file did not exist).
    An edit keeps ``old``/``new`` so that, if the file moved on before approval, the replacement can be
    re-applied to the newer text instead of overwriting it.
    """

    op: Literal["write", "delete"]
    path: str
    text: str | None
    base_version: int | None
    old: str | None = None
    new: str | None = None


@dataclass(frozen=True)
class Change(_Stored):
    """A proposed (or decided) set of file operations in one scope, applied all together or not at all.

    ``author`` says where it came from (``agent``, ``restore``, ``import``, ``remember``, ``compact``);
    ``reason`` is shown to the person approving it. After approval ``versions`` maps each path to the
    version the change created.
    """

    _what: ClassVar[str] = "memory change"

    id: str
    scope: str
    ops: tuple[FileOp, ...]
    author: str = "agent"
    reason: str = ""
    created_at: float = 0.0
    status: ChangeStatus = "pending"
    decided_at: float | None = None
    versions: dict[str, int] = field(default_factory=dict)

    @property
    def paths(self) -> list[str]:
        """The paths this change touches, in order."""
        return [op.path for op in self.ops]

    def decided(self, status: ChangeStatus, at: float, versions: dict[str, int] | None = None) -> Change:
        """A copy marked applied or rejected."""
        return replace(self, status=status, decided_at=at, versions=dict(versions or {}))

    @classmethod
    def _fields(cls, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "ops": tuple(FileOp(**op) for op in data["ops"])}


@dataclass(frozen=True)
class Version(_Stored):
    """One entry of a file's history. A deletion is a version too (``deleted`` true, ``text`` empty)."""

    _what: ClassVar[str] = "file version"

    path: str
    version: int
    text: str
    deleted: bool
    at: float
    change: str
    author: str

    @property
    def sha256(self) -> str:
        return sha256(self.text)


@dataclass(frozen=True)
class FileInfo(_Stored):
    """The head of a live file: its current version, size in UTF-8 bytes, content hash and update time."""

    _what: ClassVar[str] = "file head"

    path: str
    version: int
    size: int
    sha256: str
    updated_at: float


@dataclass(frozen=True)
class GrepMatch:
    """A line that matched :meth:`MemoryFS.grep`; ``line_no`` counts from 1."""

    path: str
    line_no: int
    line: str
    scope: str = ""


@dataclass(frozen=True)
class SearchHit:
    """A chunk of a file that matched :meth:`MemoryFS.search` by meaning; higher ``score`` is better."""

    path: str
    text: str
    score: float
    version: int
    scope: str = ""


class MemoryView(Protocol):
    """What the helpers of :class:`~ltm.files.fs.MemoryFS` use of it: one scope's files, read and proposed to.

    :class:`~ltm.files.merge.MergedFS` layers and :mod:`ltm.files.llm` take this protocol instead of the
    class, so ``fs.py`` can import them at the top of the module without an import cycle.
    """

    @property
    def scope(self) -> str: ...

    def files(self) -> dict[str, FileInfo]: ...

    def stat(self, path: str) -> FileInfo: ...

    def exists(self, path: str) -> bool: ...

    def read(self, path: str, version: int | None = None) -> str: ...

    def glob(self, pattern: str) -> list[str]: ...

    def search(self, query: str, k: int = 5) -> list[SearchHit]: ...

    def check(self, ops: Iterable[FileOp]) -> None: ...

    def propose(self, ops: Sequence[FileOp], *, author: str = "agent", reason: str = "") -> Change: ...
